//! A workspace whose `.kyro` git tracks is refused: kyro's receipts and state are never the
//! project's, and a repository that brings its own (force-added, or in a tarball that was
//! committed) brings a history and a memory kyro did not write.

use std::path::Path;

/// Why the workspace at `root` is refused when git tracks its `.kyro` or kyro cannot tell;
/// otherwise makes `.kyro` before any program or git runs, so their sandboxes keep it
/// read-only (a read-only workspace has none, and needs none).
pub(super) fn refuse_tracked_state(root: &Path) -> Result<(), String> {
    if let Some(file) = tracked_state(root)? {
        return Err(format!(
            "git tracks `{file}`: kyro's receipts and state are not the project's, and a repository cannot bring them; remove them from the repository (`git rm -r --cached .kyro`) and start again"
        ));
    }
    let _ = kyro_core::receipt::state_dir(root);
    Ok(())
}

/// How long git may take to list the index before the workspace is refused.
const GIT_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// The first file beneath `root/.kyro` that git's index of the repository holding `root`
/// tracks, when there is one; `Ok(None)` when none is, `root` is in no repository, or
/// there is no git (on kyro's `PATH`, at an absolute entry). A repository git will not read (an unknown extension, a broken
/// index, an index that never answers) is `Err`: kyro cannot tell, so it refuses. git
/// reads only its index here; every setting that could name a program is off, no config
/// outside the repository is read, and the repository's owner does not matter (nothing
/// of its config runs).
pub(super) fn tracked_state(root: &Path) -> Result<Option<String>, String> {
    // The `git` of kyro's PATH at its absolute entries only: one planted in the workspace
    // never runs, whatever the working directory and a `.` on PATH.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let absolute: Vec<std::path::PathBuf> = std::env::split_paths(&path).filter(|d| d.is_absolute()).collect();
    let Some(git) = absolute.iter().map(|d| d.join("git")).find(|g| {
        use std::os::unix::fs::PermissionsExt;
        g.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }) else {
        return Ok(None);
    };
    let mut child = match std::process::Command::new(git)
        .args([
            "--no-pager",
            "--no-optional-locks",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.untrackedCache=false",
            "-c",
            "safe.directory=*",
            "ls-files",
            "-z",
            "--",
            ".kyro",
        ])
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::join_paths(&absolute).unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot run git to see whether it tracks `.kyro`: {e}")),
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let read = |pipe: Option<std::process::ChildStdout>| {
        std::thread::spawn(move || {
            use std::io::Read;
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.by_ref().take(1 << 20).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let listed = read(stdout);
    let said = std::thread::spawn(move || {
        use std::io::Read;
        let mut text = String::new();
        if let Some(mut pipe) = stderr {
            let _ = pipe.by_ref().take(4096).read_to_string(&mut text);
        }
        text
    });
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < GIT_TIME => std::thread::sleep(std::time::Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "git did not list the index within {} s; kyro cannot tell whether it tracks `.kyro`",
                    GIT_TIME.as_secs()
                ));
            }
        }
    };
    let listed = listed.join().unwrap_or_default();
    let said = said.join().unwrap_or_default();
    if !status.success() {
        if said.contains("not a git repository") {
            return Ok(None);
        }
        return Err(format!(
            "git cannot read the repository ({}); kyro cannot tell whether it tracks `.kyro`",
            said.trim()
        ));
    }
    Ok(listed
        .split(|b| *b == 0)
        .find(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned()))
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
        assert_eq!(tracked_state(ws.path()), Ok(None), "not a repository");
        git(ws.path(), &["init", "-q"]);
        std::fs::create_dir(ws.path().join(".kyro")).unwrap();
        std::fs::write(ws.path().join(".kyro/.gitignore"), "*\n").unwrap();
        std::fs::write(ws.path().join(".kyro/state.db"), "planted").unwrap();
        git(ws.path(), &["add", "-A"]);
        assert_eq!(tracked_state(ws.path()), Ok(None), "kyro's own .gitignore keeps it out");
        git(ws.path(), &["add", "--force", ".kyro/state.db"]);
        assert_eq!(tracked_state(ws.path()), Ok(Some(".kyro/state.db".to_owned())));
    }

    /// A repository git refuses to read, or an index that never answers (a FIFO), is
    /// refused instead of taken as tracking nothing.
    #[test]
    fn a_repository_git_cannot_read_is_refused_and_a_fifo_index_does_not_hang_the_start() {
        let ws = tempfile::tempdir().unwrap();
        git(ws.path(), &["init", "-q"]);
        git(ws.path(), &["config", "core.repositoryformatversion", "1"]);
        git(ws.path(), &["config", "extensions.unknownExtension", "true"]);
        let error = tracked_state(ws.path()).unwrap_err();
        assert!(error.contains("cannot tell"), "{error}");

        let ws = tempfile::tempdir().unwrap();
        git(ws.path(), &["init", "-q"]);
        let index = std::ffi::CString::new(ws.path().join(".git/index").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a valid path.
        assert_eq!(unsafe { libc::mkfifo(index.as_ptr(), 0o600) }, 0);
        let error = tracked_state(ws.path()).unwrap_err();
        assert!(error.contains("did not list the index"), "{error}");
    }
}
