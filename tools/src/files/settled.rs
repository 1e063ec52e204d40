//! What a whole read of a file found (its SHA-256 and line count), remembered for files
//! that have not changed for a while, so that reading a window of a large file again
//! reads the window, not the whole file.
//!
//! A file is known by its identity as the kernel reports it: device, inode, size,
//! modification and change times (nanoseconds). Only a file whose times are at least
//! [`SETTLED`] in the past when it is read is remembered: a later write sets its change
//! time to the time of that write, so its identity differs from the remembered one even
//! where the file system's clock is coarse. This is git's rule for "racily clean" index
//! entries. A file changed while it was read (the identity before and after differ) is not
//! remembered.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long ago a file must have changed last for its reading to be remembered.
const SETTLED: Duration = Duration::from_secs(2);

/// The most files remembered; past this the memory starts over.
const MAX_FILES: usize = 256;

/// A file's identity: any change of its content gives another one (for a settled file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether the file last changed at least [`SETTLED`] ago.
    fn settled(&self) -> bool {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let last = self.mtime.max(self.ctime);
        let last = Duration::new(last.0.max(0) as u64, last.1.clamp(0, 999_999_999) as u32);
        now.checked_sub(last).is_some_and(|age| age >= SETTLED)
    }
}

/// What a whole read found: the file is text (UTF-8, no NUL byte), of this many lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Whole {
    pub sha256: String,
    pub total_lines: u64,
}

fn memory() -> &'static Mutex<HashMap<Identity, Whole>> {
    static MEMORY: OnceLock<Mutex<HashMap<Identity, Whole>>> = OnceLock::new();
    MEMORY.get_or_init(Mutex::default)
}

/// What was found for a file of this identity, if it is remembered.
pub(crate) fn recall(identity: &Identity) -> Option<Whole> {
    memory()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(identity)
        .cloned()
}

/// Remembers what a whole read found, if the file was settled when read (`before`) and did
/// not change while it was read (`after`).
pub(crate) fn remember(before: Identity, after: Identity, whole: &Whole) {
    if before != after || !before.settled() {
        return;
    }
    let mut memory = memory().lock().unwrap_or_else(|p| p.into_inner());
    if memory.len() >= MAX_FILES {
        memory.clear();
    }
    memory.insert(before, whole.clone());
}
