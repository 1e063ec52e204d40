//! Approvals and approval rules on the command line: `--approve-fingerprint` is good once
//! across `kyro call` processes, and `[approvals.tools]` keys must name a served tool.

use super::{kyro, stdout_json};

#[test]
fn an_approval_on_the_command_line_runs_its_call_once_across_processes() {
    let ws = tempfile::tempdir().unwrap();
    let words = ["call", "write_file", "path=b.txt", "content=42", "create_dirs=false"];
    let asked = stdout_json(&kyro(&words, ws.path()));
    assert_eq!(asked["outcome"], "approval_required", "{asked}");
    let fingerprint = asked["error"]["fingerprint"].as_str().unwrap().to_owned();
    let mut approved = words.to_vec();
    approved.extend(["--approve-fingerprint", &fingerprint]);

    // Presented with other arguments, the approval is refused as another call's, and stays
    // good for its own call.
    let mut changed = ["call", "write_file", "path=b.txt", "content=43", "create_dirs=false"].to_vec();
    changed.extend(["--approve-fingerprint", &fingerprint]);
    let mismatch = stdout_json(&kyro(&changed, ws.path()));
    assert_eq!(mismatch["error"]["reason"]["kind"], "approval_mismatch", "{mismatch}");
    assert!(!ws.path().join("b.txt").exists());

    let first = kyro(&approved, ws.path());
    assert_eq!(
        stdout_json(&first)["outcome"],
        "ok",
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "42");

    // The same command line again, in another process: refused, typed, and nothing runs.
    std::fs::write(ws.path().join("b.txt"), "changed since").unwrap();
    let replay = kyro(&approved, ws.path());
    assert_eq!(replay.status.code(), Some(1));
    let refused = stdout_json(&replay);
    assert_eq!(refused["outcome"], "denied", "{refused}");
    assert_eq!(refused["error"]["reason"]["kind"], "approval_reused", "{refused}");
    assert_eq!(refused["receipt"]["decision"]["kind"], "denied", "{refused}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("b.txt")).unwrap(),
        "changed since",
        "the replayed approval wrote the file again"
    );

    // Never asked here: refused the same way.
    let elsewhere = tempfile::tempdir().unwrap();
    let unasked = stdout_json(&kyro(&approved, elsewhere.path()));
    assert_eq!(unasked["outcome"], "denied", "{unasked}");
    assert!(!elsewhere.path().join("b.txt").exists());

    // Asked again, the same call can be approved again, once.
    std::fs::remove_file(ws.path().join("b.txt")).unwrap();
    let again = stdout_json(&kyro(&words, ws.path()));
    assert_eq!(again["error"]["fingerprint"], fingerprint.as_str(), "{again}");
    assert_eq!(stdout_json(&kyro(&approved, ws.path()))["outcome"], "ok");
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "42");
}

/// What a cloned repository brings in its `.kyro/` authorizes nothing: neither a grant
/// in a tracked `state.db` nor a pending approval note.
#[test]
fn a_workspace_tree_cannot_pre_approve_a_call() {
    // A workspace holding a grant of every write_file call, as an earlier kyro kept grants
    // in `.kyro/state.db` (the rows written by SQLite itself).
    let cloned = tempfile::tempdir().unwrap();
    let kyro_dir = cloned.path().join(".kyro");
    std::fs::create_dir_all(kyro_dir.join("approvals")).unwrap();
    let sql = format!(
        "CREATE TABLE grants (id INTEGER PRIMARY KEY AUTOINCREMENT, caller TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
         INSERT INTO grants (caller, tool, arguments, created_at, expires_at) VALUES ('local', 'write_file', NULL, 0, {});",
        i64::MAX
    );
    let made = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
        ])
        .arg(kyro_dir.join("state.db"))
        .arg(&sql)
        .status()
        .unwrap();
    assert!(made.success());
    let words = ["call", "write_file", "path=b.txt", "content=42", "create_dirs=false"];
    let asked = stdout_json(&kyro(&words, cloned.path()));
    assert_eq!(asked["outcome"], "approval_required", "a planted grant: {asked}");
    assert!(!cloned.path().join("b.txt").exists());

    // The request kyro noted (in the user's state directory) is gone; the tree brings one.
    let fingerprint = asked["error"]["fingerprint"].as_str().unwrap().to_owned();
    let noted: Vec<_> = walk(&state_home())
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n == fingerprint.as_str()))
        .collect();
    assert_eq!(noted.len(), 1, "noted once, outside the workspace: {noted:?}");
    std::fs::remove_file(&noted[0]).unwrap();
    std::fs::write(kyro_dir.join("approvals").join(&fingerprint), "").unwrap();
    let mut approved = words.to_vec();
    approved.extend(["--approve-fingerprint", &fingerprint]);
    let planted = stdout_json(&kyro(&approved, cloned.path()));
    assert_eq!(
        planted["error"]["reason"]["kind"], "approval_reused",
        "a planted note: {planted}"
    );
    assert!(!cloned.path().join("b.txt").exists());
}

/// The state home the `kyro` processes of these tests use (the user's, as a user runs it).
fn state_home() -> std::path::PathBuf {
    std::env::var_os("KYRO_STATE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("XDG_STATE_HOME").map(|x| std::path::Path::new(&x).join("kyro")))
        .unwrap_or_else(|| std::path::Path::new(&std::env::var_os("HOME").unwrap()).join(".local/state/kyro"))
}

/// Every file beneath `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn approval_rules_must_name_a_served_tool_and_an_alias_names_its_tool() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let with_policy = |policy: &str| {
        std::fs::write(ws.path().join("policy.toml"), policy).unwrap();
        kyro(
            &["call", "--policy", "policy.toml", "cat", r#"{"path": "a.txt"}"#],
            ws.path(),
        )
    };
    // A misspelt key is an error at start, naming the closest tool.
    let out = with_policy("[approvals.tools]\nread_fle = \"deny\"\n");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`read_fle`") && stderr.contains("did you mean `read_file`"),
        "{stderr}"
    );
    // An alias rules its tool (`cat` is read_file).
    let out = with_policy("[approvals.tools]\ncat = \"deny\"\n");
    let outcome = stdout_json(&out);
    assert_eq!(outcome["outcome"], "denied", "{outcome}");
    assert_eq!(outcome["error"]["reason"]["kind"], "rule_forbids", "{outcome}");
    // A rule for a built-in this machine leaves out (mcp_call without an upstream) loads.
    let out = with_policy("[approvals.tools]\nmcp_call = \"deny\"\n");
    assert_eq!(stdout_json(&out)["outcome"], "ok");
    // A namespaced rule for an upstream tool no upstream serves is refused too.
    let out = with_policy("[approvals.tools]\n\"up.echo\" = \"auto\"\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`up.echo`"));
}

/// A repository that tracks `.kyro` (force-added, or committed from a tarball) is refused
/// at start, saying why and what to do; nothing runs.
#[test]
fn a_workspace_whose_kyro_directory_git_tracks_is_refused() {
    let ws = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let done = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(ws.path())
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    git(&["init", "-q"]);
    std::fs::create_dir(ws.path().join(".kyro")).unwrap();
    std::fs::write(ws.path().join(".kyro/receipts.jsonl"), "{}\n").unwrap();
    git(&["add", "--force", ".kyro/receipts.jsonl"]);
    let refused = kyro(&["call", "list_directory", "path=."], ws.path());
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("git tracks `.kyro/receipts.jsonl`") && stderr.contains("git rm -r --cached .kyro"),
        "{stderr}"
    );
    git(&["rm", "-q", "-r", "--cached", ".kyro"]);
    let served = kyro(&["call", "list_directory", "path=."], ws.path());
    assert_eq!(stdout_json(&served)["outcome"], "ok");
}
