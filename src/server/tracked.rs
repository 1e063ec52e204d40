//! A workspace whose `.kyro` git tracks is refused: kyro's receipts and state are never the
//! project's, and a repository that brings its own (force-added, or in a tarball that was
//! committed) brings a history and a memory kyro did not write.

use std::path::Path;

/// The first file beneath `root/.kyro` that git's index of the repository holding `root`
/// tracks, when there is one. No git, no repository, or a repository git will not read
/// (another user's): `None`. git reads only its index here; every setting that could
/// name a program is off, and no config outside the repository is read.
pub(super) fn tracked_state(root: &Path) -> Option<String> {
    let output = std::process::Command::new("git")
        .args([
            "--no-pager",
            "--no-optional-locks",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.untrackedCache=false",
            "ls-files",
            "-z",
            "--",
            ".kyro",
        ])
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    output
        .stdout
        .split(|b| *b == 0)
        .find(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::tracked_state;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let done = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    }

    #[test]
    fn a_kyro_directory_git_tracks_is_found_and_an_ignored_one_is_not() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(tracked_state(ws.path()), None, "not a repository");
        git(ws.path(), &["init", "-q"]);
        std::fs::create_dir(ws.path().join(".kyro")).unwrap();
        std::fs::write(ws.path().join(".kyro/.gitignore"), "*\n").unwrap();
        std::fs::write(ws.path().join(".kyro/state.db"), "planted").unwrap();
        git(ws.path(), &["add", "-A"]);
        assert_eq!(tracked_state(ws.path()), None, "kyro's own .gitignore keeps it out");
        git(ws.path(), &["add", "--force", ".kyro/state.db"]);
        assert_eq!(tracked_state(ws.path()).as_deref(), Some(".kyro/state.db"));
    }
}
