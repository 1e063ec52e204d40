//! The checked catalog: a crate lists its tools once, and duplicate names fail the build.

use std::collections::BTreeMap;

use crate::policy::{ApprovalRule, ApprovalRules, ScopeError};
use crate::registry::Snapshot;
use crate::tool::ToolEntry;

/// Declares a crate's catalog of tools as a constant slice of [`ToolEntry`].
///
/// Every listed type must carry `#[tool]` and implement [`Execute`](crate::Execute). Two
/// tools sharing a name or an alias (in any combination) fail the build with a message
/// naming the duplicate.
///
/// ```ignore
/// kyro_core::catalog! {
///     /// The built-in tools.
///     pub const BUILTINS = [files::ReadFile, files::WriteFile];
/// }
/// ```
#[macro_export]
macro_rules! catalog {
    ($(#[$meta:meta])* $vis:vis const $name:ident = [$($(#[$cfg:meta])* $tool:path),* $(,)?];) => {
        $(#[$meta])*
        $vis const $name: &[$crate::ToolEntry] = &[$($(#[$cfg])* $crate::ToolEntry::of::<$tool>()),*];
        const _: () = {
            const DUPLICATE: $crate::__private::DuplicateName = $crate::__private::find_duplicate($name);
            if let Some(message) = DUPLICATE.message() {
                panic!("{}", message);
            }
        };
    };
}

const PREFIX: &[u8] = b"duplicate tool name or alias in the catalog: ";
const CAPACITY: usize = 300;

/// The message naming the first duplicate, built at compile time (const panics can only
/// print a `&str`, so the message is assembled in a fixed buffer).
#[derive(Debug, Clone, Copy)]
pub struct DuplicateName {
    buffer: [u8; CAPACITY],
    len: usize,
}

impl DuplicateName {
    /// The message, when a duplicate was found.
    pub const fn message(&self) -> Option<&str> {
        if self.len == 0 {
            return None;
        }
        let (head, _) = self.buffer.split_at(self.len);
        match std::str::from_utf8(head) {
            Ok(message) => Some(message),
            Err(_) => Some("duplicate tool name or alias in the catalog"),
        }
    }
}

/// Finds the first name or alias that two entries (or one entry twice) share.
pub const fn find_duplicate(entries: &[ToolEntry]) -> DuplicateName {
    let mut i = 0;
    while i < entries.len() {
        let mut a = 0;
        while a <= entries[i].spec.aliases.len() {
            let name = name_at(&entries[i], a);
            let mut j = i;
            while j < entries.len() {
                let mut b = if j == i { a + 1 } else { 0 };
                while b <= entries[j].spec.aliases.len() {
                    if str_eq(name, name_at(&entries[j], b)) {
                        return duplicate(name, entries[i].spec.name, entries[j].spec.name);
                    }
                    b += 1;
                }
                j += 1;
            }
            a += 1;
        }
        i += 1;
    }
    DuplicateName {
        buffer: [0; CAPACITY],
        len: 0,
    }
}

/// `duplicate tool name or alias in the catalog: `get` (tools `a` and `b`)`.
const fn duplicate(name: &str, first: &str, second: &str) -> DuplicateName {
    let mut message = DuplicateName {
        buffer: [0u8; CAPACITY],
        len: 0,
    };
    // Names are at most 64 ASCII bytes (checked by the attribute); the buffer holds three.
    let parts: [&[u8]; 7] = [
        PREFIX,
        b"`",
        name.as_bytes(),
        b"` (tools `",
        first.as_bytes(),
        b"` and `",
        second.as_bytes(),
    ];
    let mut p = 0;
    while p < parts.len() {
        message = message.push(parts[p]);
        p += 1;
    }
    message.push(b"`)")
}

impl DuplicateName {
    const fn push(mut self, bytes: &[u8]) -> DuplicateName {
        let mut k = 0;
        while k < bytes.len() && self.len < CAPACITY {
            self.buffer[self.len] = bytes[k];
            self.len += 1;
            k += 1;
        }
        self
    }
}

const fn name_at(entry: &ToolEntry, index: usize) -> &'static str {
    if index == 0 {
        entry.spec.name
    } else {
        entry.spec.aliases[index - 1]
    }
}

/// Byte equality of two strings, usable in constants.
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `rules` bound to the tools of `snapshot`: a key that is a tool's alias becomes
/// its canonical name (two keys for one tool keep the stricter rule), and a key naming
/// no tool is refused with the closest name. With `upstreams_later`, a namespaced key
/// (`NAME.tool`: an upstream server's tool, registered once the server is connected) is
/// kept as written, for `Runtime::check_tool_rules` to check then.
pub(crate) fn bind_tool_rules(
    rules: &ApprovalRules,
    snapshot: &Snapshot,
    upstreams_later: bool,
) -> Result<ApprovalRules, ScopeError> {
    let mut tools = BTreeMap::new();
    for (key, &rule) in &rules.tools {
        let canonical = match snapshot.get(key) {
            Some(tool) => tool.descriptor().name.clone(),
            None if upstreams_later && key.contains('.') => key.clone(),
            None => {
                let names = snapshot
                    .descriptors()
                    .flat_map(|d| std::iter::once(d.name.as_str()).chain(d.aliases.iter().map(String::as_str)));
                let closest = crate::closest::suggest(key, names)
                    .first()
                    .and_then(|name| snapshot.get(name))
                    .map(|tool| tool.descriptor().name.clone());
                return Err(ScopeError::UnknownToolRule {
                    key: key.clone(),
                    closest,
                });
            }
        };
        let kept = tools
            .get(&canonical)
            .map_or(rule, |&earlier: &ApprovalRule| earlier.strictest(rule));
        tools.insert(canonical, kept);
    }
    Ok(ApprovalRules { tools, ..rules.clone() })
}
