//! `--upstream` aggregation and `mcp_call`, against a small MCP server built here: this
//! test binary is also the upstream (`upstream serve`), an rmcp server on stdio with tools
//! that are fine, failing, and refused at registration. It logs every call it receives,
//! so the tests can tell that refused and unapproved calls never reached it.
//!
//! What the upstream does besides is set by the variables its spec gives it:
//! `UPSTREAM_LOG` (the call log), `UPSTREAM_LIST_LOG` (a line per `tools/list`),
//! `UPSTREAM_GROW_WHEN` (change its tool list by itself once that file exists) and
//! `UPSTREAM_LINGER_MS` (stay that long after its client is gone).
//!
//! No libtest harness (`harness = false`): `main` either serves or runs the tests.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

#[path = "upstream/process.rs"]
mod process;
#[path = "upstream/server.rs"]
mod server;

/// A workspace with policies, and the upstream's call log.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("auto.toml"), "[approvals]\nexec = \"auto\"\n").unwrap();
        std::fs::write(dir.path().join("deny.toml"), "[approvals]\nexec = \"deny\"\n").unwrap();
        Setup { dir }
    }

    /// `up=...`: this binary serving, with UPSTREAM_LOG passed from kyro's environment.
    fn upstream_arg(&self) -> String {
        self.upstream_with("--pass-env=UPSTREAM_LOG")
    }

    /// `up=SETTINGS ...`: this binary serving, with these words before the command.
    fn upstream_with(&self, settings: &str) -> String {
        let exe = std::env::current_exe().unwrap();
        format!("up={settings} '{}' serve", exe.display())
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("upstream.log")
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// `kyro call --upstream up=... [--policy FILE] TOOL ARGS`.
    fn kyro_call(&self, policy: Option<&str>, extra: &[&str], tool: &str, args: Value) -> (Value, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
        command
            .arg("call")
            .arg("--workspace")
            .arg(self.dir.path())
            .arg("--upstream")
            .arg(self.upstream_arg())
            .env("UPSTREAM_LOG", self.log());
        if let Some(policy) = policy {
            command.arg("--policy").arg(self.dir.path().join(policy));
        }
        command.args(extra).arg(tool).arg(args.to_string());
        let Output { stdout, stderr, .. } = command.output().unwrap();
        let stdout = String::from_utf8_lossy(&stdout);
        let value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&stderr)));
        (value, String::from_utf8_lossy(&stderr).into_owned())
    }

    fn receipts(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join(".kyro/receipts.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn upstream_tools_are_served_over_mcp_and_follow_its_changes() {
    let setup = Setup::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_kyro"));
        command
            .arg("mcp")
            .arg("--workspace")
            .arg(setup.dir.path())
            .arg("--policy")
            .arg(setup.dir.path().join("auto.toml"))
            .arg("--upstream")
            .arg(setup.upstream_arg())
            .env("UPSTREAM_LOG", setup.log());
        let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for name in [
            "up.add",
            "up.echo",
            "up.fail",
            "up.wipe",
            "up.nodesc",
            "up.draft7",
            "mcp_call",
            "read_file",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        for name in ["up.BadName", "up.refs", "up.tuple7", "up.draft4"] {
            assert!(!names.contains(&name), "{name} should be refused");
        }
        let wipe = tools.iter().find(|t| t.name == "up.wipe").unwrap();
        let annotations = wipe.annotations.as_ref().unwrap();
        // Listed only where it differs from the spec's default (false).
        assert_ne!(
            annotations.read_only_hint,
            Some(true),
            "upstream annotations are not policy"
        );
        let add = tools.iter().find(|t| t.name == "up.add").unwrap();
        assert_eq!(add.input_schema["additionalProperties"], json!(false));
        assert!(add.output_schema.is_some());

        let ok = client
            .call_tool(
                CallToolRequestParams::new("up.add")
                    .with_arguments(json!({"a": 2, "b": 40}).as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_ne!(ok.is_error, Some(true));
        assert_eq!(ok.structured_content.unwrap(), json!({"sum": 42}));
        let invalid = client
            .call_tool(
                CallToolRequestParams::new("up.add").with_arguments(json!({"a": "two"}).as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        assert_eq!(invalid.is_error, Some(true));
        client.cancel().await.unwrap();
    });
    assert_eq!(
        setup.calls(),
        [r#"add {"a":2,"b":40}"#],
        "the invalid call reached the upstream"
    );
}

fn refusals_are_reported_with_their_reasons() {
    let setup = Setup::new();
    let (_, stderr) = setup.kyro_call(Some("auto.toml"), &[], "up.echo", json!({"text": "hi"}));
    for (tool, reason) in [
        ("up.BadName", "not a valid tool name"),
        ("up.refs", "outside the canonical vocabulary"),
        ("up.tuple7", "/properties/pair/items"),
        ("up.draft4", "draft-04"),
    ] {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("`{tool}` not registered")))
            .unwrap_or_else(|| panic!("no refusal of {tool} in {stderr}"));
        assert!(line.contains(reason), "{line}");
    }
}

fn calls_route_through_the_boundary() {
    let setup = Setup::new();
    let (echo, _) = setup.kyro_call(Some("auto.toml"), &[], "up.echo", json!({"text": "héllo"}));
    assert_eq!(echo["outcome"], "ok", "{echo}");
    assert_eq!(echo["result"], json!({"text": "héllo"}));

    let (fail, _) = setup.kyro_call(Some("auto.toml"), &[], "up.fail", json!({}));
    assert_eq!(fail["outcome"], "execution_failed", "{fail}");
    assert_eq!(fail["error"]["kind"], "upstream");
    assert!(fail["error"]["message"].as_str().unwrap().contains("boom"), "{fail}");

    let (invalid, _) = setup.kyro_call(Some("auto.toml"), &[], "up.add", json!({"a": 1, "b": 2, "c": 3}));
    assert_eq!(invalid["outcome"], "invalid_arguments", "{invalid}");
    // A draft-07 schema is enforced like any other.
    let (missing, _) = setup.kyro_call(Some("auto.toml"), &[], "up.draft7", json!({}));
    assert_eq!(missing["outcome"], "invalid_arguments", "{missing}");
    let (path, _) = setup.kyro_call(Some("auto.toml"), &[], "up.draft7", json!({"path": "/x"}));
    assert_eq!(path["result"], json!({"text": "/x"}), "{path}");

    // Default policy: exec needs approval, and nothing reaches the upstream without it.
    let (asked, _) = setup.kyro_call(None, &[], "up.add", json!({"a": 1, "b": 2}));
    assert_eq!(asked["outcome"], "approval_required", "{asked}");
    let (denied, _) = setup.kyro_call(Some("deny.toml"), &[], "up.add", json!({"a": 1, "b": 2}));
    assert_eq!(denied["outcome"], "denied", "{denied}");
    let fingerprint = asked["error"]["fingerprint"].as_str().unwrap().to_owned();
    let (approved, _) = setup.kyro_call(
        None,
        &["--approve-fingerprint", &fingerprint],
        "up.add",
        json!({"a": 1, "b": 2}),
    );
    assert_eq!(approved["result"], json!({"sum": 3}), "{approved}");

    assert_eq!(
        setup.calls(),
        [
            r#"echo {"text":"héllo"}"#,
            "fail {}",
            r#"draft7 {"path":"/x"}"#,
            r#"add {"a":1,"b":2}"#
        ],
        "only validated, authorized calls reach the upstream"
    );
}

fn mcp_call_reaches_upstream_tools_only() {
    let setup = Setup::new();
    let args = json!({"server": "up", "tool": "add", "arguments": {"a": 5, "b": 6}});
    let (ok, _) = setup.kyro_call(Some("auto.toml"), &[], "mcp_call", args.clone());
    assert_eq!(ok["result"], json!({"tool": "up.add", "result": {"sum": 11}}), "{ok}");
    // The inner call has its own receipt, linked to the mcp_call.
    let receipts = setup.receipts();
    let outer = receipts.iter().find(|r| r["tool"] == "mcp_call").unwrap();
    let inner = receipts.iter().find(|r| r["tool"] == "up.add").unwrap();
    assert_eq!(inner["parent_call_id"], outer["call_id"]);

    // Approving the mcp_call approves exactly its inner call.
    let (asked, _) = setup.kyro_call(None, &[], "mcp_call", args.clone());
    assert_eq!(asked["outcome"], "approval_required", "{asked}");
    let fingerprint = asked["error"]["fingerprint"].as_str().unwrap().to_owned();
    let (approved, _) = setup.kyro_call(None, &["--approve-fingerprint", &fingerprint], "mcp_call", args);
    assert_eq!(approved["result"]["result"], json!({"sum": 11}), "{approved}");

    // Not an upstream tool, or arguments the upstream schema refuses: nothing is called.
    let (unknown, _) = setup.kyro_call(
        Some("auto.toml"),
        &[],
        "mcp_call",
        json!({"server": "up", "tool": "nope", "arguments": {}}),
    );
    assert_eq!(unknown["error"]["kind"], "unknown_tool", "{unknown}");
    let (invalid, _) = setup.kyro_call(
        Some("auto.toml"),
        &[],
        "mcp_call",
        json!({"server": "up", "tool": "add", "arguments": {"a": "x"}}),
    );
    assert_eq!(invalid["error"]["kind"], "upstream", "{invalid}");
    assert!(
        invalid["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid_arguments"),
        "{invalid}"
    );
    let (denied, _) = setup.kyro_call(
        Some("deny.toml"),
        &[],
        "mcp_call",
        json!({"server": "up", "tool": "add"}),
    );
    assert_eq!(denied["outcome"], "denied", "{denied}");

    assert_eq!(setup.calls().len(), 2, "{:?}", setup.calls());
}

/// `exec = "auto"` and an `[approvals.tools]` rule for `up.wipe`: through `mcp_call`, the
/// rule holds as it does for `up.wipe` itself, and only a person's approval of the exact
/// `mcp_call` carries to the call it makes.
fn mcp_call_is_decided_by_the_upstream_tools_own_rule() {
    let setup = Setup::new();
    for rule in ["ask", "deny"] {
        let policy = format!("[approvals]\nexec = \"auto\"\n[approvals.tools]\n\"up.wipe\" = \"{rule}\"\n");
        std::fs::write(setup.dir.path().join(format!("{rule}_wipe.toml")), policy).unwrap();
    }
    let wipe = json!({"server": "up", "tool": "wipe", "arguments": {}});
    let decisions = || -> Vec<(String, String)> {
        let receipts = setup.receipts();
        let kind = |r: &Value| r["decision"]["kind"].as_str().unwrap_or_default().to_owned();
        receipts
            .iter()
            .map(|r| (r["tool"].as_str().unwrap().to_owned(), kind(r)))
            .collect()
    };

    let (direct, _) = setup.kyro_call(Some("ask_wipe.toml"), &[], "up.wipe", json!({}));
    assert_eq!(direct["outcome"], "approval_required", "{direct}");
    // Through mcp_call it is asked too: the mcp_call itself, which a person can approve.
    let (asked, _) = setup.kyro_call(Some("ask_wipe.toml"), &[], "mcp_call", wipe.clone());
    assert_eq!(asked["outcome"], "approval_required", "{asked}");
    assert_eq!(asked["tool"], "mcp_call", "{asked}");
    assert!(setup.calls().is_empty(), "ran unasked: {:?}", setup.calls());
    assert!(
        !decisions().iter().any(|(_, d)| d == "approved"),
        "a receipt says approved though no one approved: {:?}",
        decisions()
    );

    // The person approves exactly that mcp_call: it runs the inner call, and both receipts
    // say so.
    let fingerprint = asked["error"]["fingerprint"].as_str().unwrap().to_owned();
    let (approved, _) = setup.kyro_call(
        Some("ask_wipe.toml"),
        &["--approve-fingerprint", &fingerprint],
        "mcp_call",
        wipe.clone(),
    );
    assert_eq!(approved["result"]["result"], json!({"text": "wiped"}), "{approved}");
    assert_eq!(setup.calls(), ["wipe {}"]);
    let receipts = setup.receipts();
    let (inner, outer) = (&receipts[receipts.len() - 2], &receipts[receipts.len() - 1]);
    assert_eq!(
        (
            &inner["tool"],
            &inner["decision"]["kind"],
            &outer["tool"],
            &outer["decision"]["kind"]
        ),
        (
            &json!("up.wipe"),
            &json!("approved"),
            &json!("mcp_call"),
            &json!("approved")
        )
    );
    assert_eq!(inner["parent_call_id"], outer["call_id"]);

    // Another upstream tool, under the `exec` rule, runs unasked; no receipt says approved.
    let add = json!({"server": "up", "tool": "add", "arguments": {"a": 1, "b": 1}});
    let before = setup.receipts().len();
    let (ok, _) = setup.kyro_call(Some("ask_wipe.toml"), &[], "mcp_call", add);
    assert_eq!(ok["result"]["result"], json!({"sum": 2}), "{ok}");
    assert_eq!(
        decisions()[before..],
        [
            ("up.add".to_owned(), "allowed".to_owned()),
            ("mcp_call".to_owned(), "allowed".to_owned())
        ]
    );

    // A deny rule holds through mcp_call, with the rule named.
    let (denied, _) = setup.kyro_call(Some("deny_wipe.toml"), &[], "mcp_call", wipe);
    assert_eq!(denied["outcome"], "denied", "{denied}");
    let rule = denied["error"]["reason"]["rule"].as_str().unwrap_or_default();
    assert!(rule.contains("`up.wipe`"), "{denied}");
    assert_eq!(setup.calls().len(), 2, "{:?}", setup.calls());
}

fn an_upstream_runs_under_the_sandbox_its_policy_names() {
    let setup = Setup::new();
    // By default an upstream may write the workspace (its log is there), and says so.
    let (echo, stderr) = setup.kyro_call(Some("auto.toml"), &[], "up.echo", json!({"text": "a"}));
    assert_eq!(echo["result"], json!({"text": "a"}), "{echo}");
    assert!(
        stderr.contains("upstream `up` runs under the sandbox: workspace-write, network off"),
        "{stderr}"
    );
    assert_eq!(setup.calls().len(), 1);
    // Read-only for this upstream: the kernel refuses it the log; the call still answers.
    std::fs::write(
        setup.dir.path().join("ro.toml"),
        "[approvals]\nexec = \"auto\"\n[sandbox.upstreams.up]\nmode = \"read-only\"\n",
    )
    .unwrap();
    let (echo, stderr) = setup.kyro_call(Some("ro.toml"), &[], "up.echo", json!({"text": "b"}));
    assert_eq!(echo["result"], json!({"text": "unlogged"}), "{echo}");
    assert!(stderr.contains("runs under the sandbox: read-only"), "{stderr}");
    assert_eq!(setup.calls().len(), 1, "{:?}", setup.calls());
}

fn a_broken_upstream_is_a_clear_startup_error() {
    let setup = Setup::new();
    let output = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["call", "--workspace"])
        .arg(setup.dir.path())
        .args(["--upstream", "gone=/nonexistent/server", "calculate", "expression=1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("upstream `gone`: cannot run `/nonexistent/server`"),
        "{stderr}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["call", "--upstream", "Bad=x", "calculate", "expression=1"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("upstream name `Bad`"));
    // Without upstreams, mcp_call is not registered.
    let tools = Command::new(env!("CARGO_BIN_EXE_kyro")).arg("tools").output().unwrap();
    let listing = String::from_utf8_lossy(&tools.stdout);
    assert!(
        listing.contains("not registered: mcp_call (no upstream MCP server is configured"),
        "{listing}"
    );
}

/// `--exclude-tools`, `--read-only` and `--toolsets` hold when the upstream changes its
/// list and kyro lists it again: what they left out is neither listed nor callable then.
fn the_selection_holds_when_an_upstream_lists_its_tools_again() {
    let setup = Setup::new();
    let lists = setup.dir.path().join("lists.log");
    let grow = setup.dir.path().join("grow");
    let spec = setup.upstream_with(&format!(
        "--pass-env=UPSTREAM_LOG UPSTREAM_GROW_WHEN='{}' UPSTREAM_LIST_LOG='{}'",
        grow.display(),
        lists.display()
    ));
    let listed = || std::fs::read_to_string(&lists).unwrap_or_default().lines().count();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for flags in [
        &["--exclude-tools", "up.echo"][..],
        &["--read-only"],
        &["--toolsets", "files"],
    ] {
        let _ = std::fs::remove_file(&lists);
        let _ = std::fs::remove_file(&grow);
        rt.block_on(async {
            let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_kyro"));
            command
                .arg("mcp")
                .arg("--workspace")
                .arg(setup.dir.path())
                .arg("--policy")
                .arg(setup.dir.path().join("auto.toml"))
                .arg("--upstream")
                .arg(&spec)
                .args(flags)
                .env("UPSTREAM_LOG", setup.log());
            let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
            let names =
                |tools: &[rmcp::model::Tool]| -> Vec<String> { tools.iter().map(|t| t.name.to_string()).collect() };
            let before = names(&client.list_all_tools().await.unwrap());
            assert!(!before.contains(&"up.echo".to_owned()), "{flags:?}: {before:?}");
            assert_eq!(listed(), 1, "{flags:?}");
            // Now the upstream changes its list, and kyro lists it a second time.
            std::fs::write(&grow, "").unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while listed() < 2 {
                assert!(
                    Instant::now() < deadline,
                    "{flags:?}: the upstream was not listed again"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let after = names(&client.list_all_tools().await.unwrap());
            assert!(!after.contains(&"up.echo".to_owned()), "{flags:?}: {after:?}");
            if flags[0] == "--exclude-tools" {
                // The change itself went through: the new tool is there.
                assert!(after.contains(&"up.extra".to_owned()), "{flags:?}: {after:?}");
            } else {
                assert!(!after.iter().any(|n| n.starts_with("up.")), "{flags:?}: {after:?}");
            }
            let echo = client
                .call_tool(
                    CallToolRequestParams::new("up.echo")
                        .with_arguments(json!({"text": "back"}).as_object().unwrap().clone()),
                )
                .await;
            assert!(echo.is_err(), "{flags:?}: up.echo is callable: {echo:?}");
            client.cancel().await.unwrap();
        });
    }
    assert!(
        !setup.calls().iter().any(|c| c.starts_with("echo")),
        "{:?}",
        setup.calls()
    );
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return server::serve();
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tests: &[(&str, fn())] = &[
        (
            "upstream_tools_are_served_over_mcp_and_follow_its_changes",
            upstream_tools_are_served_over_mcp_and_follow_its_changes,
        ),
        (
            "refusals_are_reported_with_their_reasons",
            refusals_are_reported_with_their_reasons,
        ),
        ("calls_route_through_the_boundary", calls_route_through_the_boundary),
        (
            "mcp_call_reaches_upstream_tools_only",
            mcp_call_reaches_upstream_tools_only,
        ),
        (
            "mcp_call_is_decided_by_the_upstream_tools_own_rule",
            mcp_call_is_decided_by_the_upstream_tools_own_rule,
        ),
        (
            "an_upstream_runs_under_the_sandbox_its_policy_names",
            an_upstream_runs_under_the_sandbox_its_policy_names,
        ),
        (
            "a_broken_upstream_is_a_clear_startup_error",
            a_broken_upstream_is_a_clear_startup_error,
        ),
        (
            "an_upstream_gets_only_the_variables_it_is_given",
            process::an_upstream_gets_only_the_variables_it_is_given,
        ),
        (
            "the_selection_holds_when_an_upstream_lists_its_tools_again",
            the_selection_holds_when_an_upstream_lists_its_tools_again,
        ),
        (
            "an_upstream_and_what_it_starts_end_with_kyro",
            process::an_upstream_and_what_it_starts_end_with_kyro,
        ),
    ];
    let mut failed = 0;
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        println!("test result: FAILED. {failed} failed");
        std::process::exit(1);
    }
    println!("test result: ok");
}
