//! Said at start: the served tools the policy makes unusable, and why, so a policy that
//! grants less than the catalog needs is not found out one refused call at a time; the
//! author's `#[tool]` types that no catalog served holds; and when programs run without
//! the OS sandbox.

use kyro_core::{Runtime, ToolDescriptor};

/// A served tool the runtime's policy never lets run: the capabilities it lacks, none when
/// a `deny` for its effect or name is why.
struct Unusable {
    name: String,
    missing: Vec<String>,
}

/// The tools `served` holds that the runtime's policy never lets run.
fn unusable(runtime: &Runtime, served: &dyn Fn(&ToolDescriptor) -> bool) -> Vec<Unusable> {
    let scope = runtime.scope();
    runtime
        .registry()
        .snapshot()
        .descriptors()
        .filter(|d| served(d) && !scope.may_allow(d))
        .map(|d| Unusable {
            name: d.name.clone(),
            missing: d
                .capabilities
                .iter()
                .filter(|c| !scope.capabilities().contains(c))
                .map(|c| c.to_string())
                .collect(),
        })
        .collect()
}

/// Tools named one by one, with what each lacks; past it, counted by capability.
const NAMED: usize = 3;

/// Capabilities counted in the line; the rest are summed up.
const COUNTED: usize = 5;

/// The start-up line on unusable tools, bounded whatever their number: each with why when
/// they are few, else a count for each capability they lack and a few names; `hint` says
/// where the whole list is.
fn line(unusable: &[Unusable], hint: Option<&str>) -> Option<String> {
    let why = |u: &Unusable| match u.missing.as_slice() {
        [] => format!("{} (denied by the policy's approvals)", u.name),
        missing => format!("{} (needs `{}`)", u.name, missing.join("`, `")),
    };
    if unusable.is_empty() {
        return None;
    }
    let head = format!(
        "the policy makes {} served tools unusable (not listed, refused if called): ",
        unusable.len()
    );
    if unusable.len() <= NAMED {
        return Some(head + &unusable.iter().map(why).collect::<Vec<_>>().join(", "));
    }
    let mut needs: Vec<(usize, &str)> = Vec::new();
    for capability in unusable.iter().flat_map(|u| &u.missing) {
        match needs.iter_mut().find(|(_, c)| c == capability) {
            Some((count, _)) => *count += 1,
            None => needs.push((1, capability)),
        }
    }
    needs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut counted = needs
        .iter()
        .take(COUNTED)
        .map(|(count, capability)| format!("{count} need `{capability}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if needs.len() > COUNTED {
        counted += &format!(" and {} other capabilities", needs.len() - COUNTED);
    }
    let denied = unusable.iter().filter(|u| u.missing.is_empty()).count();
    if denied > 0 {
        let sep = if counted.is_empty() { "" } else { ", " };
        counted += &format!("{sep}{denied} are denied by its approvals");
    }
    let names: Vec<&str> = unusable.iter().take(NAMED).map(|u| u.name.as_str()).collect();
    let whole = hint.map(|h| format!("; {h}")).unwrap_or_default();
    Some(format!(
        "{head}{counted}; {} and {} more; grant what they need in the policy's `capabilities`, or serve fewer (--toolsets){whole}",
        names.join(", "),
        unusable.len() - NAMED
    ))
}

/// One line on stderr when the policy makes tools `served` holds unusable.
pub(super) fn say_unusable(
    server: &str,
    runtime: &Runtime,
    served: &dyn Fn(&ToolDescriptor) -> bool,
    hint: Option<&str>,
) {
    if let Some(line) = line(&unusable(runtime, served), hint) {
        kyro_core::log::set_program(server);
        kyro_core::log::warn(&line);
    }
}

// Only the `kyro` binary has a command that lists them.
#[cfg(all(feature = "builtins", feature = "http", feature = "upstream"))]
impl crate::Server {
    /// Where the start-up line on unusable tools says their whole list is (`kyro tools`).
    pub(crate) fn listing_hint(mut self, hint: &'static str) -> crate::Server {
        self.listing_hint = Some(hint);
        self
    }
}

/// One line on stderr when a `#[tool]` of the author's crates is in no catalog served.
pub(super) fn say_left_out(server: &str, entries: &[kyro_core::ToolEntry]) {
    if let Some(message) = kyro_core::left_out_message(entries) {
        kyro_core::log::set_program(server);
        kyro_core::log::warn(&message);
    }
}

/// Says on stderr when programs will not run under the OS sandbox, and what happens then.
/// The kernel is probed (a child process is started) on a thread of its own when
/// `background`, so that a server answers its first request without waiting for it; a
/// call that needs the answer waits for the same probe.
pub(super) fn say_sandbox(runtime: &Runtime, background: bool) {
    let policy = runtime.scope().sandbox().clone();
    let say = move || {
        if policy.mode == kyro_core::policy::SandboxMode::Full {
            kyro_core::log::warn("[sandbox] mode = \"full\": programs tools start run without an OS sandbox");
        } else if let Err(why) = kyro_core::sandbox::support() {
            if policy.allow_unsandboxed {
                kyro_core::log::warn(&format!(
                    "{why}; programs tools start run WITHOUT an OS sandbox ([sandbox] allow_unsandboxed = true)"
                ));
            } else {
                kyro_core::log::warn(&format!(
                    "{why}; run_command, start_process and upstream servers are refused (set [sandbox] allow_unsandboxed = true to run them without a sandbox); git runs unsandboxed"
                ));
            }
        }
    };
    if background {
        std::thread::spawn(move || {
            crate::frames::first_answer::wait();
            say();
        });
    } else {
        say();
    }
}
