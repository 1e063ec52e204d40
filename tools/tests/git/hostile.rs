//! Hostile repositories: a repository's own config and attributes, a planted git
//! directory, a `.git` file pointing out, an include of an outside file. None of them can
//! make kyro's git tools run a program or read a file outside the roots. Each test plants a
//! program that leaves a mark when run and checks that no mark appears.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use kyro_core::policy::PathDenial;
use kyro_core::{Outcome, ToolError};
use serde_json::json;

use super::{call, ok};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A program outside the workspace that leaves `mark` when run (and passes stdin through,
/// as a filter would).
struct Trap {
    _dir: tempfile::TempDir,
    program: PathBuf,
    mark: PathBuf,
}

impl Trap {
    fn new() -> Trap {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("trap.sh");
        let mark = dir.path().join("ran");
        std::fs::write(&program, format!("#!/bin/sh\ntouch '{}'\ncat\n", mark.display())).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Trap {
            _dir: dir,
            program,
            mark,
        }
    }

    fn assert_not_run(&self, what: &str) {
        assert!(!self.mark.exists(), "{what} ran the repository's program");
    }
}

/// A repository with one committed file, then changed on disk (so status and diff must
/// look at its content).
fn repo() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    git(ws.path(), &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
    git(ws.path(), &["add", "a.txt"]);
    git(ws.path(), &["commit", "--quiet", "-m", "first"]);
    std::fs::write(ws.path().join("a.txt"), "one\ntwo\n").unwrap();
    ws
}

#[test]
fn filters_named_by_gitattributes_never_run_from_read_or_write_tools() {
    let trap = Trap::new();
    let ws = repo();
    let program = trap.program.display().to_string();
    git(ws.path(), &["config", "filter.evil.clean", &program]);
    git(ws.path(), &["config", "filter.evil.smudge", &program]);
    git(ws.path(), &["config", "filter.evil.required", "true"]);
    git(ws.path(), &["config", "filter.other name=x.process", &program]);
    std::fs::write(
        ws.path().join(".gitattributes"),
        "*.txt filter=evil\n*.md filter=other name=x\n",
    )
    .unwrap();
    // The same, from .git/info/attributes.
    std::fs::write(ws.path().join(".git/info/attributes"), "* filter=evil\n").unwrap();
    std::fs::write(ws.path().join("b.md"), "b\n").unwrap();
    ok(ws.path(), "git_status", json!({}));
    trap.assert_not_run("git_status");
    ok(ws.path(), "git_diff", json!({}));
    trap.assert_not_run("git_diff");
    ok(ws.path(), "git_blame", json!({"path": "a.txt"}));
    trap.assert_not_run("git_blame");
    ok(ws.path(), "git_add", json!({"paths": ["a.txt", "b.md"]}));
    trap.assert_not_run("git_add");
    ok(ws.path(), "git_commit", json!({"message": "second"}));
    git(ws.path(), &["branch", "older", "HEAD~1"]);
    ok(ws.path(), "git_checkout", json!({"branch": "older"}));
    trap.assert_not_run("git_checkout (smudge)");
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "one\n");
}

#[test]
fn textconv_and_external_diff_drivers_never_run() {
    let trap = Trap::new();
    let ws = repo();
    let program = trap.program.display().to_string();
    git(ws.path(), &["config", "diff.conv.textconv", &program]);
    git(ws.path(), &["config", "diff.conv.command", &program]);
    git(ws.path(), &["config", "merge.m.driver", &program]);
    std::fs::write(ws.path().join(".gitattributes"), "*.txt diff=conv merge=m\n").unwrap();
    ok(ws.path(), "git_blame", json!({"path": "a.txt"}));
    trap.assert_not_run("git_blame (textconv)");
    let diff = ok(ws.path(), "git_diff", json!({}));
    trap.assert_not_run("git_diff (textconv, diff command)");
    assert!(diff.to_string().contains("two"), "the real diff is shown: {diff}");
    let head = git(ws.path(), &["rev-parse", "HEAD"]);
    ok(ws.path(), "git_show", json!({"revision": head.trim()}));
    ok(ws.path(), "git_log", json!({}));
    trap.assert_not_run("git_show / git_log");
}

#[test]
fn signature_programs_never_run_for_log_show_or_commit() {
    let trap = Trap::new();
    let ws = repo();
    let program = trap.program.display().to_string();
    // A signed commit, written by hand (no signing program needed to make it).
    let tree = git(ws.path(), &["write-tree"]);
    let parent = git(ws.path(), &["rev-parse", "HEAD"]);
    let object = format!(
        "tree {}\nparent {}\nauthor t <t@example.com> 1700000000 +0000\ncommitter t <t@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n",
        tree.trim(),
        parent.trim()
    );
    let path = ws.path().join(".git/signed");
    std::fs::write(&path, object).unwrap();
    let sha = git(
        ws.path(),
        &["hash-object", "-w", "-t", "commit", path.to_str().unwrap()],
    );
    std::fs::remove_file(&path).unwrap();
    git(ws.path(), &["update-ref", "refs/heads/main", sha.trim()]);
    for (key, value) in [
        ("log.showSignature", "true"),
        ("gpg.program", program.as_str()),
        ("gpg.openpgp.program", program.as_str()),
        ("gpg.ssh.program", program.as_str()),
        ("gpg.ssh.defaultKeyCommand", program.as_str()),
        ("commit.gpgSign", "true"),
        ("user.signingKey", "someone"),
    ] {
        git(ws.path(), &["config", key, value]);
    }
    ok(ws.path(), "git_log", json!({}));
    ok(ws.path(), "git_show", json!({"revision": sha.trim()}));
    trap.assert_not_run("git_log / git_show (signature check)");
    ok(ws.path(), "git_add", json!({"paths": ["a.txt"]}));
    ok(ws.path(), "git_commit", json!({"message": "unsigned"}));
    trap.assert_not_run("git_commit (gpg)");
    git(ws.path(), &["config", "gpg.format", "ssh"]);
    std::fs::write(ws.path().join("a.txt"), "three\n").unwrap();
    ok(ws.path(), "git_add", json!({"paths": ["a.txt"]}));
    ok(ws.path(), "git_commit", json!({"message": "unsigned too"}));
    trap.assert_not_run("git_commit (ssh signing)");
}

#[test]
fn an_ignore_revs_file_outside_is_never_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "SECRET-FIRST-LINE\n").unwrap();
    let ws = repo();
    git(ws.path(), &["config", "blame.ignoreRevsFile", secret.to_str().unwrap()]);
    let outcome = call(ws.path(), "git_blame", json!({"path": "a.txt"}));
    assert!(!format!("{outcome:?}").contains("SECRET"), "{outcome:?}");
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
}

#[test]
fn a_git_file_pointing_outside_the_roots_is_refused() {
    let outside = repo();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join(".git"),
        format!("gitdir: {}\n", outside.path().join(".git").display()),
    )
    .unwrap();
    match call(ws.path(), "git_log", json!({})) {
        Outcome::ExecutionFailed {
            error: ToolError::OutsideWorkspace { .. },
            ..
        } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_config_including_another_file_is_refused() {
    let trap = Trap::new();
    let outside = tempfile::tempdir().unwrap();
    let included = outside.path().join("cfg");
    std::fs::write(&included, format!("[core]\n\tpager = {}\n", trap.program.display())).unwrap();
    let ws = repo();
    git(ws.path(), &["config", "include.path", included.to_str().unwrap()]);
    match call(ws.path(), "git_status", json!({})) {
        Outcome::ExecutionFailed { error, .. } => assert!(error.to_string().contains("include"), "{error}"),
        other => panic!("{other:?}"),
    }
    trap.assert_not_run("git_status");
}

#[test]
fn the_file_tools_cannot_plant_a_git_directory() {
    let trap = Trap::new();
    let ws = repo();
    let denied = |outcome: Outcome| match outcome {
        Outcome::Denied {
            reason: kyro_core::receipt::Denial::Path { reason, .. },
            ..
        } => assert_eq!(reason, PathDenial::GitDirectory),
        other => panic!("{other:?}"),
    };
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tworktree = ..\n[filter \"evil\"]\n\tclean = {}\n",
        trap.program.display()
    );
    ok(
        ws.path(),
        "write_file",
        json!({"path": "planted/config", "content": config, "create_dirs": true}),
    );
    ok(
        ws.path(),
        "write_file",
        json!({"path": "planted/HEAD", "content": "ref: refs/heads/main\n"}),
    );
    // The second marker (HEAD, objects/, refs/) is the write that would make it a repository.
    denied(call(ws.path(), "make_directory", json!({"path": "planted/objects"})));
    denied(call(
        ws.path(),
        "write_file",
        json!({"path": "planted/refs/heads/main", "content": "x", "create_dirs": true}),
    ));
    ok(ws.path(), "make_directory", json!({"path": "other/refs"}));
    denied(call(
        ws.path(),
        "move_path",
        json!({"source": "planted/HEAD", "destination": "other/HEAD"}),
    ));
    // A git directory already there (shipped in a tree) is as read-only as `.git`.
    std::fs::create_dir_all(ws.path().join("shipped/objects")).unwrap();
    std::fs::create_dir_all(ws.path().join("shipped/refs")).unwrap();
    denied(call(
        ws.path(),
        "write_file",
        json!({"path": "shipped/config", "content": "x"}),
    ));
    // Even so planted, the repository's filter never runs.
    std::fs::create_dir_all(ws.path().join("planted/objects")).unwrap();
    std::fs::create_dir_all(ws.path().join("planted/refs/heads")).unwrap();
    std::fs::write(ws.path().join(".gitattributes"), "* filter=evil\n").unwrap();
    let _ = call(ws.path(), "git_add", json!({"repo": "planted", "paths": ["a.txt"]}));
    trap.assert_not_run("git_add on a planted repository");
}

/// What a branch, a commit or a stash carries never reaches the workspace's `.kyro`:
/// checkouts, hard resets and stash pops that would write it are refused before git runs
/// them, and git's own sandbox keeps `.kyro` read-only.
#[test]
fn git_never_writes_the_workspace_kyro_directory() {
    let ws = super::repo_with_history();
    std::fs::create_dir(ws.path().join(".kyro")).unwrap();
    std::fs::write(ws.path().join(".kyro/.gitignore"), "*\n").unwrap();
    git(ws.path(), &["switch", "--quiet", "--create", "evil"]);
    std::fs::write(ws.path().join(".kyro/state.db"), "planted grants").unwrap();
    git(ws.path(), &["add", "--force", ".kyro/state.db"]);
    git(ws.path(), &["commit", "--quiet", "-m", "bring state"]);
    git(ws.path(), &["switch", "--quiet", "main"]);
    assert!(!ws.path().join(".kyro/state.db").exists());

    let refused = |outcome: Outcome| match outcome {
        Outcome::ExecutionFailed { error, .. } => {
            let message = error.to_string();
            assert!(message.contains("never writes kyro's `.kyro`"), "{message}");
        }
        other => panic!("{other:?}"),
    };
    refused(call(ws.path(), "git_checkout", json!({"branch": "evil"})));
    for mode in ["hard", "keep", "mixed", "soft"] {
        refused(call(ws.path(), "git_reset", json!({"target": "evil", "mode": mode})));
    }
    // A tag named as the branch is what a bare name would resolve to: the branch is checked.
    git(ws.path(), &["tag", "twin", "main"]);
    git(ws.path(), &["branch", "twin", "evil"]);
    refused(call(ws.path(), "git_checkout", json!({"branch": "twin"})));
    assert!(!ws.path().join(".kyro/state.db").exists());
    assert_eq!(git(ws.path(), &["branch", "--show-current"]).trim(), "main");

    // A stash holding it.
    std::fs::write(ws.path().join(".kyro/notes"), "planted").unwrap();
    git(ws.path(), &["add", "--force", ".kyro/notes"]);
    // A push would reset the work tree with `.kyro` in the index: refused.
    refused(call(ws.path(), "git_stash", json!({"action": "push"})));
    git(ws.path(), &["stash", "push", "--quiet"]);
    assert!(!ws.path().join(".kyro/notes").exists());
    refused(call(ws.path(), "git_stash", json!({"action": "pop"})));
    assert!(!ws.path().join(".kyro/notes").exists());
}
