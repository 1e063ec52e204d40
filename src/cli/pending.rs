//! `kyro call --approve-fingerprint HEX`: an approval given on the command line is good
//! once, across processes, and only for a call kyro asked about in the last ten minutes.
//!
//! Each `kyro call` is a process of its own, so the runtime's record of used approvals
//! (in memory) cannot see a second `kyro call` presenting the same fingerprint. Instead,
//! when a call comes back `approval_required`, kyro notes the request in the workspace's
//! directory of the user's state directory (never in the workspace tree, which a cloned
//! repository could have filled: [`kyro_core::authority`]): `approvals/<fingerprint>`, an
//! empty file whose time is when it asked. `--approve-fingerprint` takes that note away (one `unlink`: of two processes
//! presenting the same fingerprint, exactly one succeeds) and only then hands the runtime
//! an approval dated from when kyro asked, so the ten-minute lifetime runs from the
//! question, not from the command line. Without a note to take (already used, never asked
//! here, or asked by another kyro), the runtime gets a spent approval: the call is `denied`
//! (`approval_reused`), with its receipt, and nothing runs. To run the same call again,
//! ask again: the call without the flag notes a new request. A call whose arguments are
//! not the approved ones is refused and puts the note back: the approval stays good for
//! the call it was given for.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kyro_core::ApprovalToken;
use kyro_core::policy::APPROVAL_LIFETIME;

/// `approvals/` of the workspace `root`'s directory in the user's state directory, a real
/// directory (made when missing).
fn requests(root: &Path) -> std::io::Result<PathBuf> {
    let dir = kyro_core::authority::authority_dir(root)?.join("approvals");
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if !dir.symlink_metadata()?.is_dir() {
        return Err(std::io::Error::other(format!(
            "`{}` is a symlink or not a directory",
            dir.display()
        )));
    }
    Ok(dir)
}

/// A fingerprint as the runtime compares it (lowercase hex), when it is one: 64 hex digits,
/// so it is safe as a file name.
fn fingerprint(hex: &str) -> Option<String> {
    let hex = hex.trim().to_ascii_lowercase();
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// Notes that kyro asked for an approval of `hex` in the workspace `root` (an empty file,
/// made anew: its time is when kyro asked), and forgets requests older than an approval
/// lasts.
pub(super) fn note(root: &Path, hex: &str) -> std::io::Result<()> {
    let Some(hex) = fingerprint(hex) else {
        return Ok(());
    };
    let dir = requests(root)?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > APPROVAL_LIFETIME));
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let note = dir.join(&hex);
    let _ = std::fs::remove_file(&note);
    // create_new: never through a symlink, never onto a FIFO someone made in between.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&note)
        .map(drop)
}

/// A request taken by [`take`], to note again when the call it was presented with was
/// another call: its file and when kyro asked.
pub(super) struct Taken {
    note: PathBuf,
    asked: std::time::SystemTime,
}

impl Taken {
    /// Notes the request again, dated as before: the approval was not used.
    pub(super) fn put_back(self) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.note)?;
        file.set_modified(self.asked)
    }
}

/// The approval `--approve-fingerprint HEX` stands for: the noted request taken away and
/// dated from when kyro asked (with what [`Taken::put_back`] needs), or a spent approval
/// when there was none to take.
pub(super) fn take(root: &Path, hex: &str) -> (ApprovalToken, Option<Taken>) {
    let Some(clean) = fingerprint(hex) else {
        // Not a fingerprint: the runtime refuses it as another call's.
        return (ApprovalToken::for_fingerprint(hex), None);
    };
    let Ok(dir) = requests(root) else {
        return (ApprovalToken::spent(&clean), None);
    };
    let note = dir.join(&clean);
    // Its time is read without following a link or opening it; only the process whose
    // unlink succeeds holds the approval.
    let asked = note.symlink_metadata();
    if std::fs::remove_file(&note).is_err() {
        return (ApprovalToken::spent(&clean), None);
    }
    let modified = match asked {
        Ok(meta) if meta.is_file() => match meta.modified() {
            Ok(modified) => modified,
            Err(_) => return (ApprovalToken::spent(&clean), None),
        },
        _ => return (ApprovalToken::spent(&clean), None),
    };
    let age = modified.elapsed().unwrap_or(Duration::ZERO);
    match Instant::now().checked_sub(age) {
        Some(asked) => (
            ApprovalToken::given_at(&clean, asked),
            Some(Taken { note, asked: modified }),
        ),
        // Asked longer ago than this machine's monotonic clock reaches: long expired.
        None => (ApprovalToken::spent(&clean), None),
    }
}
