//! The author's server over MCP stdio, driven by rmcp's client: its tools listed with
//! their schemas, a custom error kind, a capability of the author's own, blocking work that
//! does not stall the server, the inventory written by build.rs.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};

async fn client(workspace: &Path, policy: Option<&Path>) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_kyro-author-example"));
    command.arg("--workspace").arg(workspace);
    if let Some(policy) = policy {
        command.arg("--policy").arg(policy);
    }
    ().serve(TokioChildProcess::new(command).expect("the server starts"))
        .await
        .expect("initialize")
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> CallToolResult {
    let args: Map<String, Value> = args.as_object().cloned().unwrap();
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("the call is answered")
}

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

#[tokio::test(flavor = "current_thread")]
async fn the_authors_tools_are_served_with_kyros_guarantees() {
    let ws = tempfile::tempdir().unwrap();
    let client = client(ws.path(), None).await;

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // `send_greeting` needs the author's own capability, which the default policy grants
    // (it grants what the served tools need).
    assert_eq!(names, ["find_words", "send_greeting", "slow_lookup", "word_count"]);
    let count = tools.iter().find(|t| t.name == "word_count").unwrap();
    assert_eq!(count.input_schema["additionalProperties"], false, "closed schemas");
    assert_eq!(
        count.output_schema.as_ref().unwrap()["properties"]["words"]["type"],
        "integer"
    );

    let ok = call(&client, "word_count", json!({"text": "one two three"})).await;
    assert_eq!(ok.structured_content, Some(json!({"words": 3})));

    // The author's own failure: isError, its kind in the text, in the receipt.
    let empty = call(&client, "word_count", json!({"text": "  "})).await;
    assert_eq!(empty.is_error, Some(true));
    assert!(
        text(&empty).contains("empty_text: the text has no words"),
        "{}",
        text(&empty)
    );

    // Its data reaches the client: read after the message, whole under `_meta`.
    assert!(text(&empty).ends_with("\nlength: 2"), "{}", text(&empty));
    let meta = serde_json::to_value(empty.meta.as_ref().unwrap()).unwrap();
    assert_eq!(
        meta["kyro/error"],
        json!({"kind": "empty_text", "message": "the text has no words; send some text", "data": {"length": 2}})
    );

    // Validation is kyro's: an unknown argument never reaches the executor.
    let bad = call(&client, "word_count", json!({"text": "a", "extra": 1})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).starts_with("invalid_arguments"), "{}", text(&bad));

    let greeted = call(&client, "send_greeting", json!({"name": "Ada"})).await;
    assert_eq!(greeted.structured_content, Some(json!({"greeting": "Hello, Ada!"})));
    client.cancel().await.unwrap();

    let receipts = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
    let kinds: Vec<Value> = receipts
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["error_kind"].clone())
        .collect();
    assert!(kinds.contains(&json!("empty_text")), "{receipts}");
    // The author's data is in the receipt beside the kind.
    let data: Vec<Value> = receipts
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["error_data"].clone())
        .collect();
    assert!(data.contains(&json!({"length": 2})), "{receipts}");
}

#[tokio::test(flavor = "current_thread")]
async fn the_server_goes_by_its_authors_name_and_speaks_of_what_it_serves() {
    let ws = tempfile::tempdir().unwrap();
    let client = client(ws.path(), None).await;
    let info = client.peer_info().unwrap();
    // Cargo's name and version of the crate that declared the tools, not kyro's.
    let server = info.server_info.as_ref().unwrap();
    assert_eq!(
        (server.name.as_str(), server.version.as_str()),
        ("kyro-author-example", "0.0.0")
    );
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        !instructions.contains("tool_search") && !instructions.contains("kyro"),
        "no discovery tool is served: {instructions}"
    );
    client.cancel().await.unwrap();
    // `--help` is the author's, on stdout, and succeeds.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_kyro-author-example"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success(), "{help:?}");
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.starts_with("The kyro-author-example MCP tool server") && help.contains("Usage: kyro-author-example"),
        "{help}"
    );
    assert!(!help.contains("built with kyro"), "{help}");
}

#[tokio::test(flavor = "current_thread")]
async fn search_mode_serves_the_frameworks_discovery_tools_over_the_authors_catalog() {
    let ws = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_kyro-author-example"));
    command.arg("--workspace").arg(ws.path()).args(["--catalog", "search"]);
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["tool_describe", "tool_search", "call_tool"]);
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("tool_search") && instructions.contains("call_tool"),
        "{instructions}"
    );
    let found = call(&client, "tool_search", json!({"query": "count"})).await;
    let hits = found.structured_content.unwrap();
    assert_eq!(hits["tools"][0]["name"], "word_count", "{hits}");
    let ran = call(
        &client,
        "call_tool",
        json!({"name": "word_count", "arguments": {"text": "a b"}}),
    )
    .await;
    assert_eq!(ran.structured_content, Some(json!({"words": 2})));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_choice_argument_derives_through_kyro_and_is_checked_by_its_schema() {
    let ws = tempfile::tempdir().unwrap();
    let client = client(ws.path(), None).await;
    let tools = client.list_all_tools().await.unwrap();
    let find = tools.iter().find(|t| t.name == "find_words").unwrap();
    let matching = &find.input_schema["properties"]["matching"];
    assert!(
        matching.to_string().contains("\"exact\"") && matching.to_string().contains("\"prefix\""),
        "{matching}"
    );
    let found = call(
        &client,
        "find_words",
        json!({"text": "tea team tee", "word": "tea", "matching": "prefix"}),
    )
    .await;
    assert_eq!(found.structured_content, Some(json!({"words": ["tea", "team"]})));
    let exact = call(&client, "find_words", json!({"text": "tea team tee", "word": "tea"})).await;
    assert_eq!(exact.structured_content, Some(json!({"words": ["tea"]})));
    // A value outside the choices never reaches the executor.
    let fuzzy = call(
        &client,
        "find_words",
        json!({"text": "tea", "word": "tea", "matching": "fuzzy"}),
    )
    .await;
    assert_eq!(fuzzy.is_error, Some(true));
    assert!(
        text(&fuzzy).starts_with("invalid_arguments") && text(&fuzzy).contains("/matching"),
        "{}",
        text(&fuzzy)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_policy_that_lists_capabilities_grants_those_only() {
    let ws = tempfile::tempdir().unwrap();
    let policy = ws.path().join("policy.toml");
    std::fs::write(&policy, "capabilities = [\"fs.read\", \"greet.send\"]\n").unwrap();
    let granted = client(ws.path(), Some(&policy)).await;
    let tools = granted.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "send_greeting"), "granted, it is listed");
    let greeted = call(&granted, "send_greeting", json!({"name": "Ada"})).await;
    assert_eq!(greeted.structured_content, Some(json!({"greeting": "Hello, Ada!"})));
    granted.cancel().await.unwrap();

    // Without `greet.send` in the list: served (a call is denied with the reason), not listed.
    std::fs::write(&policy, "capabilities = [\"fs.read\"]\n").unwrap();
    let narrow = client(ws.path(), Some(&policy)).await;
    let tools = narrow.list_all_tools().await.unwrap();
    assert!(
        !tools.iter().any(|t| t.name == "send_greeting"),
        "not granted, not listed"
    );
    let refused = call(&narrow, "send_greeting", json!({"name": "Ada"})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("greet.send"), "{}", text(&refused));
    narrow.cancel().await.unwrap();

    // The server under `policy`, with stdin closed at once: what it says on stderr.
    let started_with = |text: &str| {
        std::fs::write(&policy, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kyro-author-example"))
            .arg("--workspace")
            .arg(ws.path())
            .arg("--policy")
            .arg(&policy)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };

    // At start the server says which of its tools the policy makes unusable, and why.
    let (_, stderr) = started_with("capabilities = [\"fs.read\"]\n");
    assert!(
        stderr.contains("kyro-author-example: the policy makes 1 served tools unusable")
            && stderr.contains("send_greeting (needs `greet.send`)"),
        "{stderr}"
    );
    let (_, stderr) = started_with("capabilities = [\"fs.read\", \"greet.send\"]\n");
    assert!(!stderr.contains("unusable"), "{stderr}");

    // A misspelt grant is refused when the server starts, not ignored.
    let (ok, stderr) = started_with("capabilities = [\"greet.sned\"]\n");
    assert!(!ok && stderr.contains("greet.sned"), "{stderr}");

    // A catalog that runs no program says nothing about the sandbox programs run under.
    let (_, stderr) = started_with("[sandbox]\nmode = \"full\"\n");
    assert!(!stderr.contains("sandbox"), "{stderr}");
    assert!(
        stderr.contains("initialize"),
        "it started and saw stdin close: {stderr}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_work_does_not_stall_the_server() {
    let ws = tempfile::tempdir().unwrap();
    let client = client(ws.path(), None).await;
    let peer = client.peer().clone();
    let lookup = tokio::spawn(async move {
        let args = json!({"word": "patience", "block_ms": 2000})
            .as_object()
            .cloned()
            .unwrap();
        peer.call_tool(CallToolRequestParams::new("slow_lookup").with_arguments(args))
            .await
            .unwrap()
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // While the lookup blocks its thread, other requests are answered.
    let counted = call(&client, "word_count", json!({"text": "still here"})).await;
    assert_eq!(counted.structured_content, Some(json!({"words": 2})));
    assert!(!lookup.is_finished(), "the second call waited for the blocking one");
    let looked_up = lookup.await.unwrap();
    assert_eq!(looked_up.structured_content.unwrap()["word"], "patience");
    client.cancel().await.unwrap();
}

#[test]
fn the_inventory_is_kept_by_a_test_from_the_same_descriptors() {
    // The author's one line (no build.rs, no build dependency on kyro).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tool-inventory.md");
    kyro::inventory::keep(kyro_author_example::TOOLS, path).unwrap();
    let doc = std::fs::read_to_string(path).unwrap();
    for name in ["word_count", "send_greeting", "slow_lookup"] {
        assert!(doc.contains(&format!("## {name}")), "{name} missing");
    }
    assert!(doc.contains("`greet.send`"));
    // A stale copy is rewritten, and the test says so.
    let stale = std::env::temp_dir().join(format!("kyro-inventory-{}.md", std::process::id()));
    std::fs::write(&stale, "old").unwrap();
    if std::env::var_os("CI").is_none() {
        let said = kyro::inventory::keep(kyro_author_example::TOOLS, &stale).unwrap_err();
        assert!(said.contains("is written now: commit it"), "{said}");
        assert_eq!(std::fs::read_to_string(&stale).unwrap(), doc);
    } else {
        let said = kyro::inventory::keep(kyro_author_example::TOOLS, &stale).unwrap_err();
        assert!(said.contains("is stale"), "{said}");
        assert_eq!(
            std::fs::read_to_string(&stale).unwrap(),
            "old",
            "nothing written under CI"
        );
    }
    std::fs::remove_file(stale).unwrap();
}

/// The author's server over Streamable HTTP with a bearer token, as a 2026-07-28 client
/// calls it (one POST, no session): served with the token, 401 without.
#[test]
fn served_over_http_with_a_bearer_token() {
    use std::io::{BufRead, BufReader, Read, Write};
    let ws = tempfile::tempdir().unwrap();
    let token = "an-authors-token-0123456789";
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kyro-author-example"))
        .args(["--http", "127.0.0.1:0", "--workspace"])
        .arg(ws.path())
        .env("KYRO_HTTP_TOKEN", token)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 && !line.contains("serving MCP on") {
        line.clear();
    }
    let address = line
        .trim()
        .rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();
    let post = |bearer: Option<&str>| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "word_count", "arguments": {"text": "over the wire"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let authorization = bearer
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {address}\r\n{authorization}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: word_count\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    };
    let served = post(Some(token));
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    let body = &served[served.find('{').unwrap()..=served.rfind('}').unwrap()];
    let answer: Value = serde_json::from_str(body).unwrap();
    assert_eq!(answer["result"]["structuredContent"], json!({"words": 3}), "{answer}");
    assert!(post(None).starts_with("HTTP/1.1 401"));
    assert!(post(Some("a-wrong-token-0123456789")).starts_with("HTTP/1.1 401"));
    child.kill().unwrap();
    child.wait().unwrap();
}
