//! The CLI contract other surfaces and scripts rely on: output shapes and exit codes.

use std::process::{Command, Output};

use serde_json::{Value, json};

#[path = "cli/approval.rs"]
mod approval;
#[path = "cli/config_file.rs"]
mod config_file;

fn kyro(args: &[&str], workspace: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(args)
        .current_dir(workspace)
        .output()
        .expect("kyro runs")
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn tools_json_lists_every_descriptor_with_the_contract_fields() {
    let ws = tempfile::tempdir().unwrap();
    let out = kyro(&["tools", "--json"], ws.path());
    assert!(out.status.success());
    let tools = stdout_json(&out);
    let tools = tools.as_array().unwrap();
    assert_eq!(
        tools.len(),
        kyro_tools::available(false).0.len(),
        "the catalog without mcp_call (no upstream)"
    );
    for tool in tools {
        for field in [
            "name",
            "aliases",
            "category",
            "effect",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            assert!(tool.get(field).is_some(), "{field} missing in {}", tool["name"]);
        }
    }
    let text = kyro(&["tools"], ws.path());
    assert!(String::from_utf8_lossy(&text.stdout).contains("read_file"));
}

#[test]
fn describe_answers_by_alias_and_refuses_unknown_names() {
    let ws = tempfile::tempdir().unwrap();
    let out = kyro(&["describe", "cat", "--json"], ws.path());
    assert!(out.status.success());
    assert_eq!(stdout_json(&out)["name"], "read_file");
    let text = kyro(&["describe", "read_file"], ws.path());
    assert!(String::from_utf8_lossy(&text.stdout).contains("path (required)"));
    let unknown = kyro(&["describe", "nope"], ws.path());
    assert_eq!(unknown.status.code(), Some(1));
}

#[test]
fn call_with_a_json_object_prints_one_outcome_and_exits_zero() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "x|y\r\n").unwrap();
    let out = kyro(&["call", "read_file", r#"{"path": "a.txt"}"#], ws.path());
    assert_eq!(out.status.code(), Some(0));
    let outcome = stdout_json(&out);
    assert_eq!(outcome["outcome"], "ok");
    assert_eq!(outcome["result"]["content"], "x|y\r\n");
}

#[test]
fn call_with_key_value_words_takes_the_same_path_and_writes_need_approval() {
    let ws = tempfile::tempdir().unwrap();
    let words = ["call", "write_file", "path=b.txt", "content=42", "create_dirs=false"];
    let first = kyro(&words, ws.path());
    assert_eq!(first.status.code(), Some(1));
    let pending = stdout_json(&first);
    assert_eq!(pending["outcome"], "approval_required");
    assert!(!ws.path().join("b.txt").exists(), "nothing is written before approval");
    let fingerprint = pending["error"]["fingerprint"].as_str().unwrap().to_owned();
    assert_eq!(pending["receipt"]["fingerprint"], fingerprint.as_str());
    let said = pending["error"]["message"].as_str().unwrap();
    assert!(said.contains(&format!("--approve-fingerprint {fingerprint}")), "{said}");

    let mut approved = words.to_vec();
    approved.extend(["--approve-fingerprint", &fingerprint]);
    let out = kyro(&approved, ws.path());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let done = stdout_json(&out);
    assert_eq!(done["receipt"]["decision"]["kind"], "approved");
    assert_eq!(done["receipt"]["effects"][0]["path"], "b.txt");
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "42");

    let mut changed = vec![
        "call",
        "write_file",
        "path=b.txt",
        "content=43",
        "--approve-fingerprint",
    ];
    changed.push(&fingerprint);
    let out = kyro(&changed, ws.path());
    assert_eq!(stdout_json(&out)["outcome"], "denied");
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "42");

    let sub = tempfile::tempdir().unwrap();
    let out = kyro(
        &[
            "call",
            "cat",
            "file_path=b.txt",
            "--workspace",
            ws.path().to_str().unwrap(),
        ],
        sub.path(),
    );
    assert_eq!(stdout_json(&out)["result"]["content"], "42");
    let log = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
    let outcomes: Vec<String> = log
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["outcome"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(outcomes, ["approval_required", "ok", "denied", "ok"]);
}

#[test]
fn a_policy_file_changes_the_rules() {
    let ws = tempfile::tempdir().unwrap();
    let policy = ws.path().join("policy.toml");
    std::fs::write(&policy, "capabilities = [\"fs.read\"]\n[approvals]\nwrite = \"auto\"\n").unwrap();
    let policy = policy.to_str().unwrap();
    let out = kyro(
        &["call", "write_file", "path=c.txt", "content=x", "--policy", policy],
        ws.path(),
    );
    let outcome = stdout_json(&out);
    assert_eq!(outcome["outcome"], "denied");
    assert_eq!(outcome["error"]["reason"]["kind"], "missing_capability");
    std::fs::write(ws.path().join("open.toml"), "[approvals]\nwrite = \"auto\"\n").unwrap();
    let out = kyro(
        &["call", "write_file", "path=c.txt", "content=x", "--policy", "open.toml"],
        ws.path(),
    );
    assert_eq!(stdout_json(&out)["outcome"], "ok");
    std::fs::write(ws.path().join("bad.toml"), "approvals = 3\n").unwrap();
    let out = kyro(&["call", "read_file", "path=c.txt", "--policy", "bad.toml"], ws.path());
    assert_eq!(out.status.code(), Some(2));
    let out = kyro(&["call", "read_file", "path=c.txt", "--approve"], ws.path());
    assert_eq!(
        out.status.code(),
        Some(2),
        "--approve without a terminal is a usage error"
    );
}

#[test]
fn every_refusal_is_a_typed_outcome_with_exit_one() {
    let ws = tempfile::tempdir().unwrap();
    let cases = [
        (
            vec!["call", "read_file", r#"{"path": "a", "limit": "5"}"#],
            "invalid_arguments",
        ),
        (
            vec!["call", "read_file", r#"{"path": "a", "bogus": 1}"#],
            "invalid_arguments",
        ),
        (vec!["call", "no_such_tool", "{}"], "unknown_tool"),
        (
            vec!["call", "read_file", r#"{"path": "missing.txt"}"#],
            "execution_failed",
        ),
    ];
    for (args, kind) in cases {
        let out = kyro(&args, ws.path());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let outcome = stdout_json(&out);
        assert_eq!(outcome["outcome"], kind, "{args:?}");
        assert!(outcome["error"]["message"].is_string(), "{outcome}");
    }
    let invalid = stdout_json(&kyro(
        &["call", "read_file", r#"{"path": "a", "limit": "5"}"#],
        ws.path(),
    ));
    assert_eq!(invalid["error"]["violations"][0]["pointer"], "/limit");
}

#[test]
fn usage_errors_exit_two_and_run_nothing() {
    let ws = tempfile::tempdir().unwrap();
    for args in [
        vec!["call", "write_file", r#"[{"path": "x", "content": "y"}]"#],
        vec!["call", "write_file", r#""path""#],
        vec!["call", "write_file", r#"{"path": "x", "path": "y", "content": "z"}"#],
        vec!["call", "write_file", "path=x", "path=y"],
        vec!["call", "write_file", "{not json"],
        vec!["nonsense"],
    ] {
        let out = kyro(&args, ws.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // kyro's own `.kyro` is made at start, before any program could plant a log there;
    // nothing else is written, and no call was receipted.
    let written: Vec<_> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != ".kyro")
        .collect();
    assert!(written.is_empty(), "a refused call wrote {written:?}");
    let log = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap_or_default();
    assert_eq!(log, "", "a usage error was receipted");
}

#[test]
fn docs_check_passes_on_the_committed_inventory_and_fails_on_a_stale_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = kyro(&["docs", "--check"], root);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ws = tempfile::tempdir().unwrap();
    let stale = ws.path().join("inventory.md");
    std::fs::write(&stale, "old").unwrap();
    let out = kyro(&["docs", "--check", "--path", stale.to_str().unwrap()], ws.path());
    assert_eq!(out.status.code(), Some(1));
    let printed = kyro(&["docs"], ws.path());
    let committed = std::fs::read_to_string(root.join("docs/tool-inventory.md")).unwrap();
    assert_eq!(String::from_utf8_lossy(&printed.stdout), committed);
    assert_eq!(json!(committed.lines().next()), json!(kyro_header()));
}

fn kyro_header() -> &'static str {
    "<!-- generated by kyro::inventory from the tool descriptors; do not edit -->"
}

#[test]
fn dialects_export_definitions_and_provider_payloads_take_the_native_path() {
    let ws = tempfile::tempdir().unwrap();
    for dialect in ["mcp", "openai", "anthropic", "gemini"] {
        let out = kyro(&["tools", "--json", "--dialect", dialect], ws.path());
        assert!(out.status.success(), "{dialect}");
        let definitions = stdout_json(&out);
        // A tool a dialect cannot express is left out, and said so on stderr.
        let left_out = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("left out"))
            .count();
        assert_eq!(
            definitions.as_array().unwrap().len() + left_out,
            kyro_tools::available(false).0.len(),
            "{dialect}"
        );
        // OpenAI's strict mode cannot state a free-form object: run_batch's and
        // spawn_subagent's arguments, browser_drop's MIME-to-text map (Playwright's shape).
        assert!(left_out <= 3, "{dialect}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let openai = stdout_json(&kyro(&["describe", "read_file", "--dialect", "openai"], ws.path()));
    assert_eq!(openai["definition"]["function"]["strict"], true);
    // A tool without arguments is an empty object, which strict mode states (the browser
    // tools are registered where Chromium is installed).
    if kyro_tools::browser::unavailable().is_none() {
        let no_arguments = stdout_json(&kyro(
            &["describe", "browser_navigate_back", "--dialect", "openai"],
            ws.path(),
        ));
        assert_eq!(
            no_arguments["definition"]["function"]["parameters"],
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }
    let anthropic = stdout_json(&kyro(&["describe", "cat", "--dialect", "anthropic"], ws.path()));
    assert_eq!(anthropic["definition"]["name"], "read_file");

    let cases = [
        (
            "openai",
            r#"{"expression": "6*7", "unused_optional": null}"#,
            "invalid_arguments",
        ),
        ("openai", r#"{"expression": "6*7"}"#, "ok"),
        (
            "anthropic",
            r#"{"type": "tool_use", "id": "t", "name": "calculate", "input": {"expression": "6*7"}}"#,
            "ok",
        ),
        (
            "gemini",
            r#"{"name": "calculate", "args": {"expression": "6*7"}}"#,
            "ok",
        ),
        ("mcp", r#"{"expression": "6*7"}"#, "ok"),
    ];
    for (dialect, payload, expected) in cases {
        let out = kyro(&["call", "calculate", "--from", dialect, payload], ws.path());
        assert_eq!(stdout_json(&out)["outcome"], expected, "{dialect} {payload}");
    }
    let nulls = kyro(
        &[
            "call",
            "list_directory",
            "--from",
            "openai",
            r#"{"path": null, "include_hidden": null, "limit": null}"#,
        ],
        ws.path(),
    );
    assert_eq!(stdout_json(&nulls)["outcome"], "ok", "export-only nulls mean absent");
    let bad = kyro(
        &["call", "calculate", "--from", "anthropic", r#"{"input": "6*7"}"#],
        ws.path(),
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn run_command_sees_only_the_environment_the_policy_passes() {
    let ws = tempfile::tempdir().unwrap();
    let run_env = |policy: &str| {
        std::fs::write(
            ws.path().join("p.toml"),
            format!("[approvals]\nexec = \"auto\"\n{policy}"),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
            .args(["call", "run_command", r#"{"argv": ["env"]}"#, "--policy", "p.toml"])
            .current_dir(ws.path())
            .env("KYRO_TEST_SECRET", "hunter2")
            .env("KYRO_TEST_PASSED", "visible")
            .output()
            .unwrap();
        let outcome = stdout_json(&out);
        assert_eq!(outcome["outcome"], "ok", "{outcome}");
        outcome["result"]["stdout"].as_str().unwrap().to_owned()
    };
    let withheld = run_env("");
    assert!(!withheld.contains("hunter2") && !withheld.contains("KYRO_TEST_PASSED"));
    assert!(withheld.contains("PATH="), "PATH is always passed");
    let passed = run_env("[tools.shell]\npass_env = [\"KYRO_TEST_PASSED\"]\n");
    assert!(passed.contains("KYRO_TEST_PASSED=visible"));
    assert!(!passed.contains("hunter2"), "only the listed names pass");
    // A name that cannot be an environment variable is refused with the policy.
    std::fs::write(ws.path().join("bad.toml"), "[tools.shell]\npass_env = [\"A=B\"]\n").unwrap();
    let out = kyro(
        &["call", "run_command", r#"{"argv": ["env"]}"#, "--policy", "bad.toml"],
        ws.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not an environment variable name"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A table no served tool reads (a misspelt family) is refused, not ignored.
    std::fs::write(
        ws.path().join("typo.toml"),
        "[tools.shel]\npass_env = [\"KYRO_TEST_PASSED\"]\n",
    )
    .unwrap();
    let out = kyro(
        &["call", "run_command", r#"{"argv": ["env"]}"#, "--policy", "typo.toml"],
        ws.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[tools.shel]") && stderr.contains("network, shell"),
        "{stderr}"
    );
}

#[test]
fn a_git_planted_in_the_workspace_never_runs_even_with_dot_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let ws = tempfile::tempdir().unwrap();
    let status = Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(ws.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success());
    let planted = ws.path().join("git");
    std::fs::write(&planted, "#!/bin/sh\ntouch planted-git-ran\necho fake\n").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(".:{}", std::env::var("PATH").unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["call", "git_status", "{}"])
        .current_dir(ws.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(!ws.path().join("planted-git-ran").exists(), "the workspace's git ran");
    assert_eq!(stdout_json(&out)["outcome"], "ok");
}

#[test]
fn a_background_process_ends_with_kyro_call() {
    let ws = tempfile::tempdir().unwrap();
    let policy = ws.path().join("policy.toml");
    std::fs::write(&policy, "[approvals]\nexec = \"auto\"\n").unwrap();
    let out = kyro(
        &[
            "call",
            "start_process",
            r#"{"argv": ["sh", "-c", "setsid sleep 30.31 & sleep 30.32"]}"#,
            "--policy",
            policy.to_str().unwrap(),
        ],
        ws.path(),
    );
    assert_eq!(stdout_json(&out)["outcome"], "ok");
    for arg in ["30.31", "30.32"] {
        let alive = (0..50).all(|_| {
            let found = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
                    && !std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| s.contains(") Z "))
            });
            if found {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            found
        });
        assert!(!alive, "sleep {arg} outlived kyro call");
    }
}

#[test]
fn a_program_gets_the_default_signal_actions_whatever_kyro_inherited() {
    // kyro started as a script's background job or under nohup: SIGTERM, SIGINT, SIGHUP
    // and SIGQUIT ignored, which exec passes on unless kyro gives the defaults back (the
    // test's own process may ignore more: 32 and 33 were, here).
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("p.toml"), "[approvals]\nexec = \"auto\"\n").unwrap();
    let out = Command::new("sh")
        .args([
            "-c",
            r#"trap '' TERM INT HUP QUIT; exec "$0" call run_command '{"argv": ["grep", "SigIgn", "/proc/self/status"]}' --policy p.toml"#,
            env!("CARGO_BIN_EXE_kyro"),
        ])
        .current_dir(ws.path())
        .output()
        .unwrap();
    let outcome = stdout_json(&out);
    assert_eq!(outcome["outcome"], "ok", "{outcome}");
    assert_eq!(
        outcome["result"]["stdout"].as_str().unwrap().trim(),
        "SigIgn:\t0000000000000000"
    );
}

#[test]
fn receipts_never_go_through_a_planted_symlink_or_block_on_a_fifo_and_no_call_runs_unrecorded() {
    let refused_unrecorded = |out: &Output| {
        let outcome = stdout_json(out);
        assert_eq!(outcome["outcome"], "denied", "{outcome}");
        assert_eq!(outcome["error"]["reason"]["kind"], "receipts_unwritable", "{outcome}");
        assert_eq!(out.status.code(), Some(1));
    };
    // A `.kyro` symlink pointing out: the call is refused, nothing is written outside.
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join(".kyro")).unwrap();
    refused_unrecorded(&kyro(&["call", "read_file", r#"{"path": "a.txt"}"#], ws.path()));
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // A symlinked receipts.jsonl: the outside file is not appended to.
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    std::fs::create_dir(ws.path().join(".kyro")).unwrap();
    let target = outside.path().join("victim");
    std::fs::write(&target, "untouched\n").unwrap();
    std::os::unix::fs::symlink(&target, ws.path().join(".kyro/receipts.jsonl")).unwrap();
    refused_unrecorded(&kyro(&["call", "read_file", r#"{"path": "a.txt"}"#], ws.path()));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");
    // A FIFO at receipts.jsonl: the call is refused at once instead of blocking.
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    std::fs::create_dir(ws.path().join(".kyro")).unwrap();
    let status = Command::new("mkfifo")
        .arg(ws.path().join(".kyro/receipts.jsonl"))
        .status()
        .unwrap();
    assert!(status.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["call", "read_file", r#"{"path": "a.txt"}"#])
        .current_dir(ws.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("kyro call blocked on a FIFO receipts.jsonl");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    refused_unrecorded(&child.wait_with_output().unwrap());
}

#[test]
fn an_upstream_that_never_answers_is_a_clear_startup_error_not_a_hang() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let out = kyro(
        &[
            "call",
            "read_file",
            r#"{"path": "a.txt"}"#,
            "--upstream",
            "mute=sh -c 'cat >/dev/null'",
        ],
        ws.path(),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("upstream `mute` did not answer"), "{stderr}");
}

#[test]
fn tools_names_prints_the_flat_list_of_names() {
    let ws = tempfile::tempdir().unwrap();
    let out = kyro(&["tools", "--names"], ws.path());
    assert!(out.status.success());
    let names: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let expected: Vec<String> = {
        let mut n: Vec<String> = kyro_tools::available(false)
            .0
            .iter()
            .map(|e| e.spec.name.to_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names, expected);
}

#[test]
fn without_a_kernel_sandbox_commands_are_refused_unless_the_policy_allows_them_bare() {
    let ws = tempfile::tempdir().unwrap();
    let run = |policy: &str| {
        std::fs::write(ws.path().join("policy.toml"), policy).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
            .args([
                "call",
                "--policy",
                "policy.toml",
                "run_command",
                r#"{"argv": ["true"]}"#,
            ])
            .current_dir(ws.path())
            .env("KYRO_SANDBOX_UNAVAILABLE", "1")
            .output()
            .unwrap();
        (stdout_json(&out), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Refused by default, before the program runs, and said at start-up.
    let (refused, stderr) = run("[approvals]\nexec = \"auto\"\n");
    assert_eq!(refused["outcome"], "denied", "{refused}");
    assert_eq!(refused["error"]["reason"]["kind"], "sandbox_unavailable", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("allow_unsandboxed = true"),
        "{refused}"
    );
    assert!(
        stderr.contains("run_command, start_process and upstream servers are refused"),
        "{stderr}"
    );
    // With allow_unsandboxed it runs, and the receipt says it ran bare.
    let (ran, stderr) = run("[approvals]\nexec = \"auto\"\n[sandbox]\nallow_unsandboxed = true\n");
    assert_eq!(ran["outcome"], "ok", "{ran}");
    let sandbox = ran["receipt"]["effects"][0]["sandbox"].as_str().unwrap();
    assert!(
        sandbox.starts_with("none: ") && sandbox.contains("allow_unsandboxed"),
        "{sandbox}"
    );
    assert!(stderr.contains("WITHOUT an OS sandbox"), "{stderr}");
    // mode = "full" is said loudly too.
    let (ran, stderr) = run("[approvals]\nexec = \"auto\"\n[sandbox]\nmode = \"full\"\n");
    assert_eq!(ran["outcome"], "ok", "{ran}");
    assert!(stderr.contains("mode = \"full\""), "{stderr}");
}

/// The receipt log is a hash chain a team can check: `kyro receipts` lists and filters it,
/// `kyro receipts verify` finds a receipt altered, removed or moved, and a head printed
/// earlier finds receipts cut from the end.
#[test]
fn receipts_are_listed_by_filter_and_their_chain_finds_an_altered_removed_or_cut_receipt() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "alpha\n").unwrap();
    for args in [
        &["call", "read_file", "path=a.txt"][..],
        &["call", "write_file", "path=b.txt", "content=x"],
        &["call", "read_file", "path=a.txt"],
        &["call", "calculate", "expression=1+1"],
    ] {
        kyro(args, ws.path());
    }
    let listed = kyro(&["receipts", "--tool", "read_file"], ws.path());
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().all(|l| l.contains(" local read_file ok ")), "{text}");
    let denied = kyro(
        &["receipts", "--outcome", "approval_required", "--since", "1h", "--json"],
        ws.path(),
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&denied.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["tool"], "write_file");
    let verify = |extra: &[&str]| {
        let mut args = vec!["receipts", "verify"];
        args.extend_from_slice(extra);
        let out = kyro(&args, ws.path());
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, said) = verify(&[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("4 receipts") && said.contains("intact"), "{said}");
    let head = said
        .split("head ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let log_path = ws.path().join(".kyro/receipts.jsonl");
    let log = std::fs::read_to_string(&log_path).unwrap();
    let original: Vec<&str> = log.lines().collect();
    let write = |lines: &[String]| std::fs::write(&log_path, lines.join("\n") + "\n").unwrap();
    let mut altered: Vec<String> = original.iter().map(|l| l.to_string()).collect();
    altered[1] = altered[1].replace("approval_required", "ok");
    let mut removed: Vec<String> = original.iter().map(|l| l.to_string()).collect();
    removed.remove(1);
    for (what, lines, at) in [("altered", altered, "receipt 3"), ("removed", removed, "receipt 2")] {
        write(&lines);
        let (code, said) = verify(&[]);
        assert_eq!(code, Some(1), "{what}: {said}");
        assert!(said.contains(&format!("broken at {at}")), "{what}: {said}");
    }
    let cut: Vec<String> = original[..3].iter().map(|l| l.to_string()).collect();
    write(&cut);
    assert_eq!(verify(&[]).0, Some(0), "a cut end alone leaves a whole chain");
    let (code, said) = verify(&["--head", &head]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("removed from its end"), "{said}");
}

#[test]
fn a_bad_http_token_is_blamed_on_where_it_came_from() {
    let ws = tempfile::tempdir().unwrap();
    let serve = |env: Option<&str>, flags: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
        command.env_remove("KYRO_HTTP_TOKEN").env_remove("KYRO_STATE");
        if let Some(token) = env {
            command.env("KYRO_HTTP_TOKEN", token);
        }
        let out = command
            .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
            .arg(ws.path())
            .args(flags)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let short = serve(Some("short"), &[]);
    assert!(
        short.contains("KYRO_HTTP_TOKEN: an HTTP token must be at least 16") && !short.contains("--token-file"),
        "{short}"
    );
    let tokens = ws.path().join("tokens");
    std::fs::write(&tokens, "alice short\n").unwrap();
    let filed = serve(None, &["--token-file", tokens.to_str().unwrap()]);
    assert!(
        filed.contains("--token-file ") && !filed.contains("KYRO_HTTP_TOKEN"),
        "{filed}"
    );
}

#[test]
fn without_chromium_no_browser_tool_is_listed_in_any_browser_toolset() {
    let ws = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["tools", "--json"])
        .env("KYRO_CHROMIUM", ws.path().join("no-chromium"))
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let tools = stdout_json(&out);
    let browser: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["category"].as_str().unwrap().starts_with("browser"))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(browser, Vec::<&str>::new(), "registered without a browser");
}
