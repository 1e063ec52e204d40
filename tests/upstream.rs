//! `--upstream` aggregation and `mcp_call`, against a small MCP server built here: this
//! test binary is also the upstream (`upstream serve`), an rmcp server on stdio with tools
//! that are fine, failing, and refused at registration. It logs every call it receives,
//! so the tests can tell that refused and unapproved calls never reached it.
//!
//! No libtest harness (`harness = false`): `main` either serves or runs the tests.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

fn object(v: Value) -> Arc<Map<String, Value>> {
    Arc::new(v.as_object().cloned().unwrap())
}

/// The upstream's tools: six that register and three that must be refused; after `grow`,
/// `extra` appears and `wipe` is gone.
fn upstream_tools(grown: bool) -> Vec<Tool> {
    let add_input = json!({
        "type": "object",
        "properties": {
            "a": { "type": "integer", "description": "First addend." },
            "b": { "type": "integer", "description": "Second addend." }
        },
        "required": ["a", "b"]
    });
    let text_input = json!({
        "type": "object",
        "properties": { "text": { "type": "string", "description": "What to say." } },
        "required": ["text"]
    });
    let mut tools = vec![
        Tool::new("grow", "Change the tool list.", object(json!({ "type": "object" }))),
        Tool::new("add", "Add two integers.", object(add_input.clone())).with_raw_output_schema(object(json!({
            "type": "object",
            "properties": { "sum": { "type": "integer" } },
            "required": ["sum"]
        }))),
        Tool::new("echo", "Say the text back.", object(text_input.clone())),
        Tool::new("fail", "Always fails.", object(json!({ "type": "object" }))),
        // Claims to be read-only; kyro must not believe it.
        Tool::new("wipe", "Claims to be harmless.", object(json!({ "type": "object" })))
            .with_annotations(ToolAnnotations::new().read_only(true).destructive(false)),
        Tool::new("BadName", "Uppercase name.", object(json!({ "type": "object" }))),
        Tool::new(
            "refs",
            "Uses $ref.",
            object(json!({
                "type": "object",
                "properties": { "x": { "$ref": "#/$defs/X", "description": "An x." } },
                "$defs": { "X": { "type": "string" } }
            })),
        ),
        Tool::new(
            "nodesc",
            "A property without a description.",
            object(json!({ "type": "object", "properties": { "x": { "type": "string" } } })),
        ),
        // What the reference servers (zod-to-json-schema) emit: draft-07, no descriptions.
        Tool::new(
            "draft7",
            "An older dialect.",
            object(json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": { "path": { "type": "string" } },
                "required": ["path"],
                "additionalProperties": false
            })),
        ),
        // Tuple-form `items` means something else in 2020-12.
        Tool::new(
            "tuple7",
            "A draft-07 tuple.",
            object(json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": { "pair": { "type": "array", "items": [{ "type": "string" }, { "type": "integer" }] } }
            })),
        ),
        Tool::new(
            "draft4",
            "A dialect too old.",
            object(json!({ "$schema": "http://json-schema.org/draft-04/schema#", "type": "object" })),
        ),
    ];
    if grown {
        tools.retain(|t| t.name != "wipe");
        tools.push(Tool::new("extra", "Appeared later.", object(text_input)));
    }
    tools
}

struct Upstream {
    log: Option<PathBuf>,
    grown: std::sync::atomic::AtomicBool,
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(upstream_tools(
            self.grown.load(std::sync::atomic::Ordering::SeqCst),
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        if let Some(log) = &self.log {
            // Under a read-only sandbox the log cannot be written; the call still answers.
            let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) else {
                return Ok(CallToolResult::success(vec![ContentBlock::text("unlogged")]).into());
            };
            writeln!(file, "{} {args}", request.name).unwrap();
        }
        let result = match request.name.as_ref() {
            "add" => {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                CallToolResult::structured(json!({ "sum": sum }))
            }
            "echo" => CallToolResult::success(vec![ContentBlock::text(args["text"].as_str().unwrap_or(""))]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("boom")]),
            "wipe" => CallToolResult::success(vec![ContentBlock::text("wiped")]),
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra")]),
            "grow" => {
                self.grown.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "draft7" => CallToolResult::success(vec![ContentBlock::text(args["path"].as_str().unwrap_or(""))]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

fn serve() {
    let log = std::env::var_os("UPSTREAM_LOG").map(PathBuf::from);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let running = Upstream {
                log,
                grown: Default::default(),
            }
            .serve(rmcp::transport::stdio())
            .await
            .unwrap();
            let _ = running.waiting().await;
        });
}

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

    fn upstream_arg(&self) -> String {
        let exe = std::env::current_exe().unwrap();
        format!("up='{}' serve", exe.display())
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

fn main() {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return serve();
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
            "an_upstream_runs_under_the_sandbox_its_policy_names",
            an_upstream_runs_under_the_sandbox_its_policy_names,
        ),
        (
            "a_broken_upstream_is_a_clear_startup_error",
            a_broken_upstream_is_a_clear_startup_error,
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
