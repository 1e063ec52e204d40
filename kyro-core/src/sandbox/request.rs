//! What a program's sandbox is to be, before it is prepared: asked for by a tool, from
//! the policy and the call's scope.

use std::path::{Path, PathBuf};

use crate::policy::{Access, SandboxMode, SandboxPolicy, SandboxRead, Scope};

/// What one program (and its descendants) may do, before it is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRequest {
    /// What it may write.
    pub mode: SandboxMode,
    /// Whether it may open network sockets.
    pub network: bool,
    /// With `network`: in a network namespace of its own whose loopback is up, so that it
    /// reaches only what listens inside (the browser, which reaches kyro's proxy there).
    pub private_loopback: bool,
    /// Where it may read.
    pub read: SandboxRead,
    /// Read beneath these besides the system's directories, under `read = "roots"`.
    pub readable: Vec<PathBuf>,
    /// Write beneath these, under `workspace-write`.
    pub writable: Vec<PathBuf>,
    /// Read-only even beneath a writable path (`.git`, `.kyro`).
    pub read_only: Vec<PathBuf>,
    /// Run bare where the kernel cannot sandbox, instead of refusing.
    pub allow_unsandboxed: bool,
    /// Whether the search for nested repositories' `.git` read every directory it meant
    /// to (false: it stopped at its bound, and the receipt says so).
    pub nested_search_complete: bool,
}

impl SandboxRequest {
    /// The policy's sandbox for a program started in `scope`: writable are the scope's
    /// read-write roots (their `.git` and `.kyro` read-only) and the policy's `writable`;
    /// readable (under `read = "roots"`) every root and the policy's `readable`.
    pub fn for_scope(scope: &Scope) -> SandboxRequest {
        let policy: &SandboxPolicy = scope.sandbox();
        let mut request = SandboxRequest {
            mode: policy.mode,
            network: policy.network,
            private_loopback: false,
            read: policy.read,
            readable: policy.readable.clone(),
            writable: policy.writable.clone(),
            read_only: Vec::new(),
            allow_unsandboxed: policy.allow_unsandboxed,
            nested_search_complete: true,
        };
        for root in scope.roots() {
            request.readable.push(root.path().to_owned());
            if root.access() == Access::ReadWrite {
                request.writable.push(root.path().to_owned());
                for protected in [".git", ".kyro"] {
                    let path = root.path().join(protected);
                    if path.symlink_metadata().is_ok() {
                        request.read_only.push(path);
                    }
                }
                let (nested, complete) = nested_git_dirs(root.path());
                request.read_only.extend(nested);
                request.nested_search_complete &= complete;
            }
        }
        request.protect_state_home();
        request
    }

    /// The state home (every workspace's grants) read-only where a writable path covers
    /// it: kyro serving the home directory, or `~/.local` writable for `pip --user`.
    fn protect_state_home(&mut self) {
        if let Some(home) = crate::authority::ensured_state_home()
            && self
                .writable
                .iter()
                .any(|w| home.starts_with(w.canonicalize().as_deref().unwrap_or(w)))
        {
            self.read_only.push(home.to_owned());
        }
    }

    /// git's own processes: write the repository (`dirs`: its work tree and git
    /// directories; none while it is being located) but any root's `.kyro`, and nothing
    /// else, no network; reads as
    /// the policy says. git is kyro's own program, run with every setting that could name
    /// another program overridden: where the kernel cannot sandbox, it runs as before (the
    /// receipt says so).
    pub fn repository(scope: &Scope, dirs: &[PathBuf]) -> SandboxRequest {
        let policy = scope.sandbox();
        let mut readable = policy.readable.clone();
        readable.extend(scope.roots().iter().map(|r| r.path().to_owned()));
        // git writes no root's `.kyro`, whatever a checkout, reset or stash carries.
        let read_only = scope
            .roots()
            .iter()
            .map(|root| root.path().join(".kyro"))
            .filter(|kyro| kyro.symlink_metadata().is_ok_and(|m| m.is_dir()))
            .collect();
        let mut request = SandboxRequest {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            private_loopback: false,
            read: policy.read,
            readable,
            writable: dirs.to_vec(),
            read_only,
            allow_unsandboxed: true,
            nested_search_complete: true,
        };
        request.protect_state_home();
        request
    }
}

/// How deep below a root nested repositories' `.git` are looked for (a repository three
/// directories down is found), and how many directories are read at most looking (the
/// search costs a program start that much; past it, the receipt says the search stopped).
const NESTED_DEPTH: usize = 3;
pub(super) const NESTED_DIRECTORIES: usize = 10_000;

/// The `.git` of repositories nested in `root` (submodules, vendored checkouts, hidden
/// directories included), down to [`NESTED_DEPTH`] levels, without following symlinks or
/// entering a `.git`; and whether the search read every directory it meant to.
fn nested_git_dirs(root: &Path) -> (Vec<PathBuf>, bool) {
    let mut found = Vec::new();
    let mut level = vec![root.to_owned()];
    let mut read = 0;
    // Level 0 reads the root's entries; a repository `NESTED_DEPTH` down is found reading
    // its parent, one level deeper.
    for depth in 0..=NESTED_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            if read == NESTED_DIRECTORIES {
                return (found, false);
            }
            read += 1;
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if name == ".git" {
                    if dir != root {
                        found.push(entry.path());
                    }
                } else if kind.is_dir() && depth < NESTED_DEPTH {
                    next.push(entry.path());
                }
            }
        }
        level = next;
    }
    (found, true)
}

/// The sandbox could not be prepared: the kernel cannot enforce it and the policy does not
/// allow running without it, or a path could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxUnavailable(pub String);
