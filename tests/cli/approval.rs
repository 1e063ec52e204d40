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
