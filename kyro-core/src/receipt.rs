//! Receipts: what happened on every call, refused ones included, kept apart from results;
//! and the observers that receive them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

pub use crate::denial::Denial;
pub use crate::observed::{EffectLog, ObservedEffect};
use crate::outcome::{Outcome, OutcomeKind};

/// How authorization decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// Refused before authorization (unknown tool, invalid arguments).
    NotReached,
    /// Allowed without asking.
    Allowed,
    /// Allowed without asking by a rule of the policy's that names this call.
    AllowedByRule {
        /// The rule.
        rule: String,
    },
    /// Allowed by an approval bound to the fingerprint.
    Approved,
    /// Needs an approval.
    ApprovalRequired,
    /// Refused.
    Denied {
        /// Why.
        reason: Denial,
    },
}

/// The record of one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Receipt {
    /// Unique id of the call.
    pub call_id: String,
    /// The call that started this one (batch, sub-agent), if any.
    pub parent_call_id: Option<String>,
    /// The canonical tool name, or the name asked for when unknown.
    pub tool: String,
    /// The fingerprint, once the arguments were valid.
    pub fingerprint: Option<String>,
    /// Authorization's decision.
    pub decision: Decision,
    /// The outcome kind.
    pub outcome: OutcomeKind,
    /// For `execution_failed`, the error's kind (a built-in one or a tool author's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// For `timed_out` and `cancelled`: whether the tool's work stopped when told to (true),
    /// or was still running when the receipt was written (false: blocking code that does
    /// not check its stop signal, left to finish on its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_stopped: Option<bool>,
    /// Start, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// Duration, in microseconds.
    pub duration_us: u64,
    /// Effects observed while the tool ran.
    pub effects: Vec<ObservedEffect>,
}

/// The canonical snapshot of a call: what the policy saw and the fingerprint hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CanonicalCall {
    /// Canonical tool name.
    pub tool: String,
    /// RFC 8785 canonical JSON of `{"tool", "arguments"}`.
    pub canonical: String,
    /// SHA-256 of `canonical`.
    pub fingerprint: String,
}

/// Receives every receipt, with the canonical snapshot when the arguments were valid.
pub trait Observer: Send + Sync {
    /// Called once per call, after it finished or was refused: its receipt, its canonical
    /// snapshot (absent when the call never got that far: an unknown tool, arguments that
    /// are not an object) and its outcome, with the result or the error.
    fn observe(&self, receipt: &Receipt, call: Option<&CanonicalCall>, outcome: &Outcome);

    /// Writes out what the observer holds back, if anything (the runtime's `flush_observers`).
    fn flush(&self) {}
}

/// kyro's own directory in a workspace, `.kyro/` beneath `root`: created when missing,
/// and refused when it is a symlink or anything but a directory, so a planted `.kyro`
/// cannot send receipts or state outside the workspace. A new one gets a `.gitignore` of
/// `*`, so git never shows it as untracked.
pub fn state_dir(root: &Path) -> std::io::Result<PathBuf> {
    let dir = root.join(".kyro");
    match std::fs::create_dir(&dir) {
        Ok(()) => {
            // A new `.kyro` keeps itself out of git: receipts and state are not the project's.
            use std::io::Write;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(dir.join(".gitignore"))
                .and_then(|mut file| file.write_all(b"# kyro's receipts and state\n*\n"));
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = dir.symlink_metadata()?;
    if !meta.file_type().is_dir() {
        return Err(std::io::Error::other(format!(
            "`{}` is a symlink or not a directory; kyro keeps its files only in a real `.kyro` directory of the workspace",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The built-in observer: one JSON line per receipt, appended to a file.
#[derive(Debug)]
pub struct JsonlReceiptLog {
    path: PathBuf,
    /// The workspace whose `.kyro/` holds the log, checked before the first write.
    workspace: Option<PathBuf>,
    /// Opened on the first receipt, then kept.
    file: Mutex<Option<std::fs::File>>,
    /// Receipts held back until [`Observer::flush`] ([`JsonlReceiptLog::batched`]).
    batch: Option<Mutex<Vec<u8>>>,
}

/// The most bytes of receipts a batched log holds back: past this, they are written at once.
const MAX_BATCH: usize = 64 * 1024;

impl JsonlReceiptLog {
    /// Appends to `path`, creating its directory on first write.
    pub fn new(path: impl Into<PathBuf>) -> JsonlReceiptLog {
        JsonlReceiptLog {
            path: path.into(),
            workspace: None,
            file: Mutex::new(None),
            batch: None,
        }
    }

    /// Holds receipts back (64 KiB at most) until [`Observer::flush`], to write them in one
    /// append: a server flushes before each write of answers, so a receipt is in the log
    /// before its answer leaves, and receipts of calls answered together cost one write.
    /// Dropping the log flushes it.
    pub fn batched(mut self) -> JsonlReceiptLog {
        self.batch = Some(Mutex::default());
        self
    }

    /// The conventional log of a workspace: `.kyro/receipts.jsonl`.
    pub fn in_workspace(root: &Path) -> JsonlReceiptLog {
        let mut log = JsonlReceiptLog::new(root.join(".kyro").join("receipts.jsonl"));
        log.workspace = Some(root.to_path_buf());
        log
    }

    /// The file appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if file.is_none() {
            use std::os::unix::fs::OpenOptionsExt;
            match &self.workspace {
                Some(root) => {
                    state_dir(root)?;
                }
                None => {
                    if let Some(parent) = self.path.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                }
            }
            // Never through a symlink, never blocking on a FIFO; only a regular file.
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&self.path)?;
            if !opened.metadata()?.is_file() {
                return Err(std::io::Error::other(format!(
                    "`{}` is not a regular file",
                    self.path.display()
                )));
            }
            *file = Some(opened);
        }
        match file.as_mut() {
            // One `write` of the whole line with O_APPEND: lines from several processes
            // do not interleave.
            Some(f) => f.write_all(line),
            None => Ok(()),
        }
    }
}

impl JsonlReceiptLog {
    /// Appends `lines`; an observer must not change the outcome, so a failing log is
    /// reported, not fatal.
    fn write(&self, lines: &[u8]) {
        if let Err(e) = self.append(lines) {
            eprintln!("kyro: cannot append to {}: {e}", self.path.display());
        }
    }
}

impl Observer for JsonlReceiptLog {
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &Outcome) {
        let mut line = serde_json::to_vec(receipt).unwrap_or_else(|_| b"null".to_vec());
        line.push(b'\n');
        match &self.batch {
            Some(batch) => {
                let mut held = batch.lock().unwrap_or_else(|p| p.into_inner());
                held.extend_from_slice(&line);
                if held.len() >= MAX_BATCH {
                    drop(held);
                    self.flush();
                }
            }
            None => self.write(&line),
        }
    }

    fn flush(&self) {
        if let Some(batch) = &self.batch {
            let held = std::mem::take(&mut *batch.lock().unwrap_or_else(|p| p.into_inner()));
            if !held.is_empty() {
                self.write(&held);
            }
        }
    }
}

impl Drop for JsonlReceiptLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// An outcome and the receipt recorded for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// What the caller gets.
    pub outcome: Outcome,
    /// What was recorded.
    pub receipt: Receipt,
}
