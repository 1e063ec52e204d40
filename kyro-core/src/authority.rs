//! Where kyro keeps what grants authority in a workspace: grants, spent approvals and the
//! command line's pending approval requests. Never in the workspace tree: a cloned
//! repository or an extracted archive is untrusted input, and whatever it carries in
//! `.kyro/` must not pre-approve a call. Authority lives in the user's own state directory
//! instead, one directory per workspace keyed by the workspace's canonical path:
//!
//! `$KYRO_STATE_HOME/workspaces/<key>/`, where `KYRO_STATE_HOME` defaults to
//! `$XDG_STATE_HOME/kyro` or `~/.local/state/kyro`; every directory kyro makes there is
//! mode 0700, and an existing one must be a real directory owned by this user that no
//! one else may write. A state home inside the workspace itself (kyro serving the home
//! directory) is refused: the tools could write it.

use std::path::{Path, PathBuf};

/// The variable naming the state home (a directory outside every workspace kyro serves).
pub const STATE_HOME_VARIABLE: &str = "KYRO_STATE_HOME";

/// The state home: `$KYRO_STATE_HOME`, `$XDG_STATE_HOME/kyro` or `~/.local/state/kyro`
/// (absolute paths only; a relative one is ignored as the XDG specification says).
pub fn state_home() -> std::io::Result<PathBuf> {
    let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(home) = absolute(STATE_HOME_VARIABLE) {
        return Ok(home);
    }
    if let Some(xdg) = absolute("XDG_STATE_HOME") {
        return Ok(xdg.join("kyro"));
    }
    match absolute("HOME") {
        Some(home) => Ok(home.join(".local").join("state").join("kyro")),
        None => Err(std::io::Error::other(format!(
            "no state directory for kyro's grants: set {STATE_HOME_VARIABLE} (or HOME) to a directory outside the workspace"
        ))),
    }
}

/// The state home, made (mode 0700, with its `workspaces` directory) when missing, with
/// its links resolved; found once per process. It is made before any program or tool could
/// plant one where a root covers it (kyro serving the home directory), and protected there
/// like `.kyro` ([`beneath_state_home`]). `None` where there is no state home.
pub fn ensured_state_home() -> Option<&'static Path> {
    static HOME: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let home = state_home().ok()?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(home.join("workspaces"))
            .ok()?;
        home.canonicalize().ok()
    })
    .as_deref()
}

/// Whether `path` (absolute, links resolved) lies in the state home: no tool writes
/// there, and no program may, whatever root or writable path covers it.
pub fn beneath_state_home(path: &Path) -> bool {
    ensured_state_home().is_some_and(|home| path.starts_with(home))
}

/// The key of a workspace's directory: the first 32 hex digits of the SHA-256 of its
/// canonical path.
fn key(canonical: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::sha256_hex(canonical.as_os_str().as_bytes())[..32].to_owned()
}

/// The directory holding the authority of the workspace at `root`, made (mode 0700) when
/// missing. Its file `workspace` names the canonical path it is for; a directory naming
/// another is refused.
pub fn authority_dir(root: &Path) -> std::io::Result<PathBuf> {
    authority_dir_in(&state_home()?, root)
}

/// Where [`authority_dir`] is for the workspace at `root`, nothing made or checked: for a
/// reader that must not make state where there is none.
pub fn authority_dir_path(root: &Path) -> std::io::Result<PathBuf> {
    Ok(state_home()?.join("workspaces").join(key(&root.canonicalize()?)))
}

/// [`authority_dir`] beneath the state home `home` (absolute).
pub fn authority_dir_in(home: &Path, root: &Path) -> std::io::Result<PathBuf> {
    let workspace = root.canonicalize()?;
    let home = home.to_owned();
    let inside = |home: &Path| {
        std::io::Error::other(format!(
            "kyro's state directory `{}` lies inside the workspace `{}`, where tools could write it; set {STATE_HOME_VARIABLE} to a directory outside the workspace",
            home.display(),
            workspace.display()
        ))
    };
    // Checked before anything is made (the path as written), and again once it exists
    // (the path with its links resolved).
    if home.starts_with(&workspace) {
        return Err(inside(&home));
    }
    let dir = home.join("workspaces").join(key(&workspace));
    make_private(&dir)?;
    let real_home = home.canonicalize()?;
    if real_home.starts_with(&workspace) {
        return Err(inside(&real_home));
    }
    bind(&dir, &workspace)?;
    Ok(dir)
}

/// Makes `dir` and its missing parents (mode 0700), and checks the whole chain from the
/// state home down: real directories owned by this user (or root), writable by no one
/// else.
fn make_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    // The workspace directory and its two parents (`workspaces`, the state home) are
    // kyro's; above them the user's own directories are as the user keeps them.
    for place in dir.ancestors().take(3) {
        let meta = place.symlink_metadata()?;
        let shared = meta.permissions().mode() & 0o022 != 0;
        if !meta.file_type().is_dir() || meta.uid() != me || shared {
            return Err(std::io::Error::other(format!(
                "`{}` must be a directory of this user's that no one else may write (kyro keeps grants beneath it)",
                place.display()
            )));
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Writes the workspace's canonical path into `dir/workspace` on first use, and refuses a
/// directory written for another (a copy of another workspace's grants).
fn bind(dir: &Path, workspace: &Path) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    let file = dir.join("workspace");
    let expected = workspace.as_os_str().as_bytes();
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&file) {
        Ok(mut new) => new.write_all(expected)?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let held = std::fs::read(&file)?;
            if held != expected {
                return Err(std::io::Error::other(format!(
                    "`{}` holds the grants of `{}`, not of `{}`; kyro does not carry grants between workspaces",
                    dir.display(),
                    String::from_utf8_lossy(&held),
                    workspace.display()
                )));
            }
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_gets_a_private_directory_outside_it_bound_to_its_path() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let state = home.path().join("state");
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dir = authority_dir_in(&state, one.path()).unwrap();
        assert!(dir.starts_with(&state) && !dir.starts_with(one.path()));
        assert_eq!(dir.metadata().unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(
            authority_dir_in(&state, one.path()).unwrap(),
            dir,
            "the same directory each time"
        );
        let other = authority_dir_in(&state, two.path()).unwrap();
        assert_ne!(other, dir);
        // Another workspace's directory copied over this one's is refused.
        std::fs::copy(dir.join("workspace"), other.join("workspace")).unwrap();
        let error = authority_dir_in(&state, two.path()).unwrap_err().to_string();
        assert!(error.contains("does not carry grants between workspaces"), "{error}");
    }

    #[test]
    fn a_state_home_inside_the_workspace_or_writable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let ws = tempfile::tempdir().unwrap();
        let error = authority_dir_in(&ws.path().join("state"), ws.path())
            .unwrap_err()
            .to_string();
        assert!(error.contains("lies inside the workspace"), "{error}");
        assert!(!ws.path().join("state").exists(), "nothing made in the workspace");
        // Through a link, too.
        let home = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(ws.path(), home.path().join("link")).unwrap();
        let error = authority_dir_in(&home.path().join("link/state"), ws.path())
            .unwrap_err()
            .to_string();
        assert!(error.contains("lies inside the workspace"), "{error}");

        let state = home.path().join("state");
        authority_dir_in(&state, ws.path()).unwrap();
        std::fs::set_permissions(state.join("workspaces"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = authority_dir_in(&state, ws.path()).unwrap_err().to_string();
        assert!(error.contains("no one else may write"), "{error}");
    }
}
