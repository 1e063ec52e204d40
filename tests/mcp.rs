//! `kyro mcp` over stdio, end to end: a real child process spoken to in JSON-RPC lines.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

#[path = "mcp/frames.rs"]
mod frames;
#[path = "mcp/grants.rs"]
mod grants;
#[path = "mcp/resources.rs"]
mod resources;
#[path = "mcp/review.rs"]
mod review;
#[path = "mcp/tasks.rs"]
mod tasks;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pending: HashMap<u64, Value>,
    /// Notifications seen while waiting for answers.
    notifications: Vec<Value>,
}

impl Server {
    fn start(workspace: &std::path::Path) -> Server {
        Server::start_with(workspace, &[])
    }

    fn start_with(workspace: &std::path::Path, extra: &[&str]) -> Server {
        Server::start_of(Server::spawn(workspace, extra))
    }

    /// A spawned server, initialized as a pre-2026 client does.
    fn start_of(mut server: Server) -> Server {
        let init = server.request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "kyro");
        assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        server
    }

    /// `kyro mcp`, not yet spoken to (a 2026-07-28 client sends no `initialize`).
    fn spawn(workspace: &std::path::Path, extra: &[&str]) -> Server {
        Server::spawn_as(Command::new(env!("CARGO_BIN_EXE_kyro")), workspace, extra)
    }

    /// `command` (kyro, or a program that runs it) given `mcp --workspace ...`.
    fn spawn_as(mut command: Command, workspace: &std::path::Path, extra: &[&str]) -> Server {
        let mut child = command
            .args(["mcp", "--workspace"])
            .arg(workspace)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kyro mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server {
            child,
            stdin,
            stdout,
            pending: HashMap::new(),
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        self.answer(id)
    }

    fn answer(&mut self, id: u64) -> Value {
        loop {
            if let Some(found) = self.pending.remove(&id) {
                return found;
            }
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed stdout");
            let message: Value = serde_json::from_str(&line).expect("one JSON-RPC message per line");
            if let Some(got) = message["id"].as_u64() {
                self.pending.insert(got, message);
            } else {
                self.notifications.push(message);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The names `tools/list` shows, every page of it, and the listing's size in bytes (the
/// pages' results together).
fn listing(server: &mut Server, id: u64) -> (Vec<String>, usize) {
    let (mut names, mut bytes) = (Vec::new(), 0);
    let mut list = server.request(id, "tools/list", json!({}));
    for next in 1.. {
        let tools = list["result"]["tools"].as_array().unwrap();
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        bytes += list["result"].to_string().len();
        let Some(cursor) = list["result"]["nextCursor"].as_str().map(str::to_owned) else {
            break;
        };
        list = server.request(id + 1000 * next, "tools/list", json!({"cursor": cursor}));
    }
    names.sort();
    (names, bytes)
}

/// The built-ins of these categories, sorted.
fn builtins_in(categories: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = kyro_tools::available(false)
        .0
        .iter()
        .filter(|e| categories.contains(&e.spec.category))
        .map(|e| e.spec.name.to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn tools_list_serves_every_descriptor_with_schemas_and_annotations() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(ws.path(), &["--toolsets", "all"]);
    // Paginated: 100 a page.
    let mut list = server.request(2, "tools/list", json!({}));
    assert_eq!(
        list["result"]["tools"].as_array().unwrap().len(),
        100.min(kyro_tools::available(false).0.len())
    );
    let mut tools = list["result"]["tools"].as_array().unwrap().clone();
    while let Some(cursor) = list["result"]["nextCursor"].as_str().map(str::to_owned) {
        list = server.request(90, "tools/list", json!({"cursor": cursor}));
        tools.extend(list["result"]["tools"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(
        tools.len(),
        kyro_tools::available(false).0.len(),
        "the catalog without mcp_call (no upstream)"
    );
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert_eq!(read["inputSchema"]["type"], "object");
    assert_eq!(read["inputSchema"]["additionalProperties"], false);
    assert_eq!(read["outputSchema"]["type"], "object");
    // Types kept; what every result meets anyway (every property present, no other)
    // left to tool_describe, as the prose is.
    assert_eq!(read["outputSchema"]["properties"]["content"]["type"], "string");
    assert!(
        read["outputSchema"].get("required").is_none() && read["outputSchema"].get("additionalProperties").is_none()
    );
    assert!(
        read["outputSchema"]["properties"]["content"]
            .get("description")
            .is_none(),
        "prose left to tool_describe"
    );
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    // Its title, "Read file", is only its name in words: a client shows the name.
    assert_eq!(read.get("title"), None);
    // A hint is listed where it differs from the spec's default; read with the defaults,
    // every tool's four hints are its descriptor's (a read-only tool's destructive and
    // idempotent hints, which the spec reads only when readOnlyHint is false, are not
    // listed: such a tool destroys nothing and is idempotent).
    let registry = kyro_core::Registry::with_catalog(kyro_tools::BUILTINS).unwrap();
    let hint = |tool: &Value, key: &str, default: bool| tool["annotations"].get(key).map_or(default, |v| v == true);
    let write = tools.iter().find(|t| t["name"] == "write_file").unwrap();
    assert_eq!(write["annotations"].get("readOnlyHint"), None);
    assert_eq!(write["annotations"].get("title"), None, "the title is the tool's own");
    for tool in &tools {
        let listed = [
            hint(tool, "readOnlyHint", false),
            hint(tool, "destructiveHint", true),
            hint(tool, "idempotentHint", false),
            hint(tool, "openWorldHint", true),
        ];
        let a = registry
            .snapshot()
            .get(tool["name"].as_str().unwrap())
            .unwrap()
            .descriptor()
            .annotations;
        let listed = if a.read_only_hint {
            assert!(!a.destructive_hint && a.idempotent_hint, "{}", tool["name"]);
            let annotations = tool["annotations"].as_object().unwrap();
            assert!(
                !annotations.contains_key("destructiveHint") && !annotations.contains_key("idempotentHint"),
                "{}",
                tool["name"]
            );
            [listed[0], false, true, listed[3]]
        } else {
            listed
        };
        assert_eq!(
            listed,
            [
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ],
            "{}",
            tool["name"]
        );
    }
    // Integer bounds that only restate the Rust type are not listed; real ones are.
    let outputs: Vec<&Value> = tools.iter().map(|t| &t["outputSchema"]).collect();
    let listed = serde_json::to_string(&outputs).unwrap();
    assert!(
        !listed.contains("18446744073709551615") && !listed.contains("9007199254740991"),
        "a type's range restated"
    );
    // Input schemas bound 64-bit integers to what a JavaScript or f64 client holds exactly.
    let inputs = serde_json::to_string(&tools.iter().map(|t| &t["inputSchema"]).collect::<Vec<_>>()).unwrap();
    assert!(!inputs.contains("18446744073709551615") && !inputs.contains("9223372036854775807"));
}

/// MCP 2026-07-28: no `initialize`; every request carries the version and the client's
/// capabilities in `_meta`, and `server/discover` says what the server speaks.
#[test]
fn a_current_client_calls_without_initialize() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(ws.path(), &[]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "current", "version": "1"}
    });
    let discovered = server.request(1, "server/discover", json!({"_meta": meta}));
    let versions = discovered["result"]["supportedVersions"]
        .as_array()
        .expect("supported versions");
    assert!(versions.contains(&json!("2026-07-28")), "{discovered}");
    assert!(versions.contains(&json!("2025-06-18")), "{discovered}");
    let listed = server.request(2, "tools/list", json!({"_meta": meta}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"read_file"), "{names:?}");
    let called = server.request(
        3,
        "tools/call",
        json!({"name": "calculate", "arguments": {"expression": "6*7"}, "_meta": meta}),
    );
    assert_eq!(called["result"]["structuredContent"]["value"], 42, "{called}");
    assert_eq!(called["result"]["isError"], false);
    // Validation and authorization are the same as for any client.
    let refused = server.request(
        4,
        "tools/call",
        json!({"name": "calculate", "arguments": {"expression": 6}, "_meta": meta}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).is_ok_and(|r| r.lines().count() == 2));
}

#[test]
fn a_selection_made_at_start_announces_no_change() {
    let ws = tempfile::tempdir().unwrap();
    for flags in [
        &["--read-only"][..],
        &["--toolsets", "files"],
        &["--exclude-tools", "grep"],
    ] {
        let mut server = Server::start_with(ws.path(), flags);
        let list = server.request(2, "tools/list", json!({}));
        assert!(!list["result"]["tools"].as_array().unwrap().is_empty());
        server.request(3, "ping", json!({}));
        assert_eq!(server.notifications, Vec::<Value>::new(), "{flags:?}");
    }
}

#[test]
fn the_default_listing_is_a_coding_agents_toolsets_within_48_kb_and_the_rest_stays_callable() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start(ws.path());
    let (names, bytes) = listing(&mut server, 2);
    assert_eq!(names, builtins_in(&["files", "git", "shell", "discovery"]));
    assert!(bytes <= 48 * 1024, "{bytes} bytes");
    // Not listed, still served: found by tool_search, and a call reaches the boundary.
    let found = server.request(
        3,
        "tools/call",
        json!({"name": "tool_search", "arguments": {"query": "calculate"}}),
    );
    assert!(
        found["result"]["structuredContent"]
            .to_string()
            .contains("\"calculate\""),
        "{found}"
    );
    let calc = server.request(
        4,
        "tools/call",
        json!({"name": "calculate", "arguments": {"expression": "6*7"}}),
    );
    assert_eq!(calc["result"]["structuredContent"]["value"], 42, "{calc}");
    drop(server);
    // The README's figures are the listings' sizes, to the kilobyte.
    let (all, whole) = listing(&mut Server::start_with(ws.path(), &["--toolsets", "all"]), 2);
    // Issue 43 asks for at most 1,000 bytes a tool: trimmed descriptions, and schemas
    // listed without what they say twice or only guard the server (src/mcp/listing.rs).
    assert!(
        whole <= 1000 * all.len(),
        "{whole} bytes for {} tools: {} a tool",
        all.len(),
        whole / all.len()
    );
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let said = format!(
        "about {} KB of `tools/list`, where the whole catalog is {} KB",
        (bytes + 512) / 1024,
        (whole + 512) / 1024
    );
    assert!(
        readme.replace('\n', " ").contains(&said),
        "the README should say: {said}"
    );
}

#[test]
fn toolsets_tools_exclusions_and_read_only_choose_what_is_served() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(
        ws.path(),
        &[
            "--toolsets",
            "git",
            "--tools",
            "calculate,read_file",
            "--exclude-tools",
            "git_log,read_file",
        ],
    );
    let (names, _) = listing(&mut server, 2);
    let mut expected = builtins_in(&["git"]);
    expected.retain(|n| n != "git_log");
    expected.push("calculate".into());
    expected.sort();
    assert_eq!(names, expected, "exclusion wins over --tools");
    // Chosen toolsets serve nothing else: another tool is unknown.
    let other = server.request(3, "tools/call", json!({"name": "grep", "arguments": {"pattern": "x"}}));
    assert_eq!(other["error"]["code"], -32602, "{other}");
    drop(server);
    // `github` is all of GitHub's toolsets, as its server names them; one is named alone.
    for (sets, expected) in [
        (
            "github",
            builtins_in(&[
                "github.actions",
                "github.context",
                "github.repos",
                "github.issues",
                "github.pull_requests",
                "github.users",
            ]),
        ),
        ("github.context", builtins_in(&["github.context"])),
    ] {
        let (names, _) = listing(&mut Server::start_with(ws.path(), &["--toolsets", sets]), 2);
        assert_eq!(names, expected, "{sets}");
        assert!(!names.is_empty());
    }
    // `browser` is Playwright's default browser tools; an opt-in family (`--caps vision`
    // there) is its own toolset, named beside it.
    let vision = builtins_in(&["browser.vision"]);
    if !vision.is_empty() {
        for (sets, expected) in [
            ("browser", builtins_in(&["browser"])),
            ("browser,browser.vision", builtins_in(&["browser", "browser.vision"])),
        ] {
            let (names, _) = listing(&mut Server::start_with(ws.path(), &["--toolsets", sets]), 2);
            assert_eq!(names, expected, "{sets}");
        }
    }
    let mut read_only = Server::start_with(ws.path(), &["--read-only", "--tools", "write_file"]);
    let (names, _) = listing(&mut read_only, 2);
    assert!(
        !names.is_empty() && !names.contains(&"write_file".to_owned()),
        "{names:?}"
    );
    let list = read_only.request(3, "tools/list", json!({}));
    for tool in list["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{}", tool["name"]);
    }
    let write = read_only.request(
        4,
        "tools/call",
        json!({"name": "write_file", "arguments": {"path": "a", "content": "x"}}),
    );
    assert_eq!(write["error"]["code"], -32602, "not served, even when named: {write}");
    assert!(!ws.path().join("a").exists());
}

#[test]
fn a_tool_the_policy_can_never_allow_is_not_listed() {
    let ws = tempfile::tempdir().unwrap();
    let policy = ws.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[approvals]\nwrite = \"deny\"\n[catalog]\ntoolsets = [\"files\"]\n",
    )
    .unwrap();
    let mut server = Server::start_with(ws.path(), &["--policy", policy.to_str().unwrap()]);
    let (names, _) = listing(&mut server, 2);
    let mut reads = builtins_in(&["files"]);
    reads.retain(|n| {
        ![
            "write_file",
            "edit_file",
            "multi_edit",
            "apply_patch",
            "copy_path",
            "move_path",
            "delete_path",
            "make_directory",
        ]
        .contains(&n.as_str())
    });
    assert_eq!(
        names, reads,
        "the policy's [catalog] applies, and denied writes are not listed"
    );
    // The command line's toolsets replace the policy's.
    drop(server);
    let mut server = Server::start_with(ws.path(), &["--policy", policy.to_str().unwrap(), "--toolsets", "git"]);
    let (names, _) = listing(&mut server, 2);
    assert!(names.iter().all(|n| n.starts_with("git_")), "{names:?}");
}

#[test]
fn an_unknown_toolset_or_tool_is_refused_at_start() {
    let ws = tempfile::tempdir().unwrap();
    for flags in [["--toolsets", "filez"], ["--exclude-tools", "no_such_tool"]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kyro"))
            .args(["mcp", "--workspace"])
            .arg(ws.path())
            .args(flags)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("unknown"), "{stderr}");
    }
}

#[test]
fn a_call_returns_structured_content_and_readable_text() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "x|y\r\n\t\"quoted\" é\n").unwrap();
    let mut server = Server::start(ws.path());
    let call = server.request(
        3,
        "tools/call",
        json!({"name": "cat", "arguments": {"file_path": "a.txt"}}),
    );
    let result = &call["result"];
    assert_ne!(result["isError"], true);
    assert_eq!(result["structuredContent"]["content"], "x|y\r\n\t\"quoted\" é\n");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text, "a.txt: lines 1-2 of 2\n     1\tx|y\r\n     2\t\t\"quoted\" é\n",
        "lines as cat -n prints them"
    );
    drop(server);
    let mut json_text = Server::start_with(ws.path(), &["--text", "json"]);
    let call = json_text.request(
        3,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a.txt"}}),
    );
    let text: Value = serde_json::from_str(call["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text, call["result"]["structuredContent"],
        "--text json keeps the serialized JSON"
    );
    // A failure too: its text is the outcome's JSON, its error whole under `_meta`.
    let failed = json_text.request(
        4,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "missing.txt"}}),
    );
    let result = &failed["result"];
    assert_eq!(result["isError"], true);
    assert!(
        result.get("structuredContent").is_none(),
        "no structured content to mismatch the schema"
    );
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["outcome"], "execution_failed");
    assert_eq!(text["error"], result["_meta"]["kyro/error"]);
    assert!(
        text["error"]["kind"].is_string() && text["error"]["message"].is_string(),
        "{text}"
    );
}

#[test]
fn typical_results_read_as_text_not_escaped_json() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/a.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    let git = |args: &[&str]| {
        let done = std::process::Command::new("git")
            .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.com"])
            .args(args)
            .current_dir(ws.path())
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "src/a.rs"]);
    git(&["commit", "-q", "-m", "first \"quoted\" commit"]);
    std::fs::write(ws.path().join("new.txt"), "x").unwrap();
    let mut server = Server::start_with(ws.path(), &["--toolsets", "all"]);
    let calls = [
        (
            "grep",
            json!({"pattern": "println"}),
            "src/a.rs:2:     println!(\"hi\");",
        ),
        ("list_directory", json!({"path": "src"}), "a.rs  "),
        ("glob", json!({"pattern": "**/*.rs"}), "src/a.rs"),
        ("directory_tree", json!({}), "a.rs"),
        ("calculate", json!({"expression": "6*7"}), "value: 42"),
        ("file_info", json!({"path": "src/a.rs"}), "kind: file"),
        ("git_status", json!({}), "on main\n?? new.txt"),
        ("git_log", json!({}), "Ada: first \"quoted\" commit"),
        (
            "git_show",
            json!({"revision": "HEAD"}),
            "+++ b/src/a.rs\n@@ -0,0 +1,3 @@\n+fn main() {",
        ),
    ];
    for (i, (tool, arguments, expected)) in calls.iter().enumerate() {
        let call = server.request(
            10 + i as u64,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        let text = call["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{call}"));
        assert!(text.contains(expected), "{tool}: {text}");
        assert!(
            !text.contains("\\\"") && !text.starts_with('{'),
            "{tool}: escaped JSON: {text}"
        );
        assert!(call["result"]["structuredContent"].is_object(), "{tool}");
    }
}

#[test]
fn invalid_arguments_and_failures_are_tool_errors_a_model_can_read() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start(ws.path());
    let invalid = server.request(
        4,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "a", "limit": 0}}),
    );
    assert_eq!(invalid["result"]["isError"], true);
    let text = invalid["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("/limit"), "{text}");
    assert!(invalid["result"].get("structuredContent").is_none());
    let failed = server.request(
        5,
        "tools/call",
        json!({"name": "read_file", "arguments": {"path": "missing"}}),
    );
    assert_eq!(failed["result"]["isError"], true);
    assert!(
        failed["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
    let no_args = server.request(6, "tools/call", json!({"name": "read_file"}));
    assert_eq!(no_args["result"]["isError"], true);
}

#[test]
fn an_unknown_tool_is_invalid_params() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start(ws.path());
    let unknown = server.request(7, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602);
}

/// Chromium is killed with kyro even when kyro gets no chance to clean up (SIGKILL): the
/// browser is spawned with a parent-death signal.
#[test]
fn a_killed_server_takes_its_browser_with_it() {
    if let Some(reason) = kyro_tools::browser::unavailable() {
        assert!(std::env::var_os("KYRO_REQUIRE_BROWSER").is_none(), "{reason}");
        eprintln!("skipped: {reason}");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                let body = "<title>Alive</title>";
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    let ws = tempfile::tempdir().unwrap();
    let policy = ws.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[approvals]\nnetwork = \"auto\"\n[tools.network]\nallow_private = true\n",
    )
    .unwrap();
    let mut server = Server::start_with(ws.path(), &["--policy", policy.to_str().unwrap()]);
    let answer = server.request(
        2,
        "tools/call",
        json!({"name": "browser_navigate", "arguments": {"url": url}}),
    );
    assert_eq!(answer["result"]["structuredContent"]["title"], "Alive", "{answer}");
    let kyro = server.child.id();
    let browsers = children_of(kyro);
    assert!(!browsers.is_empty(), "no Chromium under kyro");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let alive = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(false)
    };
    while browsers.iter().any(alive) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left: Vec<&u32> = browsers.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "Chromium outlived a killed kyro: {left:?}");
}

/// Processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let parent = parent.to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|p| p == parent))
                    .unwrap_or(false)
            })
        })
        .collect()
}

/// A server started in `ws` whose `web_fetch` of the URL returned stalls (its listener,
/// returned too, accepts and never answers) until `timeout_ms`; network calls run without
/// asking, and so do the `extra` approvals (`write = "auto"\n`).
fn stalled_fetch(ws: &std::path::Path, timeout_ms: u64, extra: &str) -> (Server, String, std::net::TcpListener) {
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/slow", stalled.local_addr().unwrap());
    let policy = ws.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[approvals]\nnetwork = \"auto\"\n{extra}[limits]\ntimeout_ms = {timeout_ms}\n\
             [tools.network]\nallow_hosts = [\"127.0.0.1\"]\n"
        ),
    )
    .unwrap();
    let server = Server::start_with(ws, &["--policy", policy.to_str().unwrap()]);
    (server, url, stalled)
}

#[test]
fn a_stalled_fetch_ends_at_the_time_limit_and_pings_are_answered_meanwhile() {
    let ws = tempfile::tempdir().unwrap();
    let (mut server, url, _stalled) = stalled_fetch(ws.path(), 300, "");
    let started = std::time::Instant::now();
    server.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "web_fetch", "arguments": {"url": url}}})
        .to_string(),
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    let pong = server.request(3, "ping", json!({}));
    let pinged = started.elapsed();
    assert_eq!(pong["result"], json!({}));
    assert!(
        !server.pending.contains_key(&2),
        "the ping was answered before the stalled call"
    );
    let fetched = server.answer(2);
    let ended = started.elapsed();
    assert_eq!(fetched["result"]["isError"], true, "{fetched}");
    let text = fetched["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("timed_out (web_fetch)"), "{fetched}");
    assert!(pinged < ended, "ping at {pinged:?}, fetch at {ended:?}");
    // The limit, not the stall: the listener never answers at all.
    assert!(ended < std::time::Duration::from_secs(3), "{ended:?}");
}

#[test]
fn catalog_search_lists_discovery_and_call_tool_which_runs_any_tool_through_the_boundary() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(ws.path(), &["--catalog", "search"]);
    let (names, bytes) = listing(&mut server, 2);
    assert_eq!(names, ["call_tool", "tool_describe", "tool_search"]);
    assert!(bytes < 4 * 1024, "{bytes} bytes");
    let calc = server.request(
        3,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "calculate", "arguments": {"expression": "6*7"}}}),
    );
    assert_eq!(calc["result"]["structuredContent"]["value"], 42, "{calc}");
    // The same approvals as a direct call: nothing is written without one.
    let write = server.request(
        4,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "write_file", "arguments": {"path": "w.txt", "content": "x"}}}),
    );
    assert_eq!(write["result"]["isError"], true);
    assert!(
        write["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("approval_required (write_file)")
    );
    let asked = write["result"]["content"][1]["text"].as_str().unwrap();
    assert!(
        asked.contains("kyro grants add write_file --for 1h"),
        "says how to approve: {asked}"
    );
    assert!(!ws.path().join("w.txt").exists());
    let bad = server.request(
        5,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"tool": "calculate"}}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    // Receipts name the real tool.
    let receipts = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
    let tools: Vec<String> = receipts
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["tool"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(tools, ["calculate", "write_file"]);
}

/// A receipt is in the log before its answer leaves (receipts are held back only until the
/// next write of answers, and written just before it), and SIGTERM writes out what the log
/// holds before kyro ends, with status 143.
#[test]
fn every_answered_call_is_in_the_log_and_sigterm_ends_after_writing_it() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let mut server = Server::start(ws.path());
    let log = ws.path().join(".kyro/receipts.jsonl");
    let receipted = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"read_file\""))
            .count()
    };
    // Pipelined: the receipts of calls answered together go out in one write.
    for id in 10..60 {
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "a.txt"}}})
                .to_string(),
        );
    }
    for (answered, id) in (10..60).enumerate() {
        let answer = server.answer(id);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert!(receipted() > answered, "answer {id} arrived before its receipt");
    }
    assert_eq!(receipted(), 50);
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(receipted(), 50);
}

#[test]
fn an_alias_given_to_exclude_tools_excludes_its_tool() {
    let ws = tempfile::tempdir().unwrap();
    // `bash` is run_command's alias, `cat` read_file's.
    let mut server = Server::start_with(ws.path(), &["--exclude-tools", "bash,cat"]);
    let (names, _) = listing(&mut server, 2);
    assert!(
        !names.iter().any(|n| n == "run_command" || n == "read_file"),
        "{names:?}"
    );
    let called = server.request(
        3,
        "tools/call",
        json!({"name": "run_command", "arguments": {"argv": ["true"]}}),
    );
    assert!(
        called["result"]["isError"] == true || called["error"].is_object(),
        "an excluded tool was called: {called}"
    );
    assert!(!called.to_string().contains("exit_code"), "{called}");
}

/// Starts `sleep`, stops it, and returns the signal it ended by; with the program's own
/// view of its ignored and blocked signals.
fn stop_a_sleep(mut server: Server) -> (Value, String) {
    let call = |server: &mut Server, id: u64, name: &str, arguments: Value| {
        let answer = server.request(id, "tools/call", json!({"name": name, "arguments": arguments}));
        assert_ne!(answer["result"]["isError"], true, "{name}: {answer}");
        answer["result"]["structuredContent"].clone()
    };
    let status = call(
        &mut server,
        2,
        "run_command",
        json!({"argv": ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]}),
    );
    let started = call(&mut server, 3, "start_process", json!({"argv": ["sleep", "30.31"]}));
    let stopped = call(
        &mut server,
        4,
        "stop_process",
        json!({"id": started["id"], "grace_ms": 5000}),
    );
    (stopped["signal"].clone(), status["stdout"].as_str().unwrap().to_owned())
}

#[test]
fn stop_process_ends_a_program_by_sigterm_whatever_kyro_inherited_and_wherever_it_runs() {
    use std::os::unix::process::CommandExt;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("p.toml"), "[approvals]\nexec = \"auto\"\n").unwrap();
    let policy = ws.path().join("p.toml");
    let extra = ["--policy", policy.to_str().unwrap()];
    let defaults = "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n";
    // kyro started with SIGTERM, SIGINT, SIGHUP and SIGQUIT ignored and blocked (a
    // supervisor's or a script's background job): its programs get neither.
    let mut inheriting = Command::new(env!("CARGO_BIN_EXE_kyro"));
    // SAFETY: sigaction and sigprocmask are async-signal-safe; the set is on the stack.
    unsafe {
        inheriting.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_IGN);
                libc::sigaddset(&mut set, signal);
            }
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let (signal, status) = stop_a_sleep(Server::start_of(Server::spawn_as(inheriting, ws.path(), &extra)));
    assert_eq!((signal, status.as_str()), (json!(15), defaults));
    // kyro as the first process of a PID namespace whose session leader it cannot see (a
    // container's, a CI runner's): its programs stay in the group it signals.
    let mut contained = Command::new("unshare");
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        contained.args(["--user", "--map-current-user"]);
    }
    contained.args(["--pid", "--fork", "--kill-child", env!("CARGO_BIN_EXE_kyro")]);
    let (signal, status) = stop_a_sleep(Server::start_of(Server::spawn_as(contained, ws.path(), &extra)));
    assert_eq!((signal, status.as_str()), (json!(15), defaults));
}

/// The kinds of the refusals in the workspace's receipts, in order.
/// The workspace's receipts, in order (none when nothing was receipted).
fn receipts(ws: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join(".kyro/receipts.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a receipt is one JSON line"))
        .collect()
}

fn refusals(ws: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(ws.join(".kyro/receipts.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|r| r["decision"]["reason"]["kind"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_current_client_is_asked_by_input_required_and_its_answer_runs_the_call_once() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(ws.path(), &[]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "current", "version": "1"}
    });
    let mut id = 0;
    let mut call = |script: &str, retry: Value| {
        id += 1;
        let mut params = json!({"name": "run_command", "arguments": {"argv": [script], "shell": true}, "_meta": meta});
        if let Value::Object(retry) = retry {
            params.as_object_mut().unwrap().extend(retry);
        }
        server.request(id, "tools/call", params)["result"].clone()
    };
    let runs = || {
        std::fs::read_to_string(ws.path().join("log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let script = "echo ran >> log";
    // Asked: the question shows the call, the state comes back sealed, nothing ran.
    let asked = call(script, Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["approval"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("echo ran >> log"),
        "{asked}"
    );
    assert_eq!(
        question["params"]["requestedSchema"]["required"],
        json!(["approve"]),
        "{asked}"
    );
    let state = asked["requestState"].as_str().expect("a sealed state").to_owned();
    assert_eq!(runs(), 0);
    let answer = |action: &str, approve: bool| json!({"inputResponses": {"approval": {"action": action, "content": {"approve": approve}}}, "requestState": state});
    // The state with other arguments runs nothing, and stays good for its own call.
    let other = call("echo other >> log", answer("accept", true));
    assert_eq!(other["isError"], true, "{other}");
    assert!(
        other["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("arguments changed"),
        "{other}"
    );
    // A tampered state runs nothing.
    let mut tampered = state.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let forged = call(
        script,
        json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}, "requestState": tampered}),
    );
    assert!(
        forged["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not verify"),
        "{forged}"
    );
    assert_eq!(runs(), 0);
    // The person's yes runs the call once; the same state again runs nothing.
    let approved = call(script, answer("accept", true));
    assert_eq!(approved["isError"], false, "{approved}");
    assert_eq!(runs(), 1);
    let replayed = call(script, answer("accept", true));
    assert!(
        replayed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{replayed}"
    );
    assert_eq!(runs(), 1);
    // A decline is the person's answer: denied, said so, nothing ran.
    let asked = call(script, Value::Null);
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let declined = call(
        script,
        json!({"inputResponses": {"approval": {"action": "decline"}}, "requestState": state}),
    );
    assert!(
        declined["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the person declined this call"),
        "{declined}"
    );
    assert_eq!(runs(), 1);
    assert_eq!(
        refusals(ws.path()),
        [
            "approval_mismatch",
            "approval_unverified",
            "approval_reused",
            "declined"
        ]
    );
    // Each request passed the boundary once: one receipt each, and the approved retry's
    // says `approved` (not `approval_required` and then `approved`).
    let decisions: Vec<String> = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["decision"]["kind"].to_string())
        .collect();
    assert_eq!(
        decisions.join(" ").replace('"', ""),
        "approval_required denied denied approved denied approval_required denied"
    );
    // A client that cannot be asked by a form keeps the text that says how to approve.
    drop(server);
    let mut server = Server::spawn(ws.path(), &[]);
    for capabilities in [json!({}), json!({"elicitation": {"url": {}}})] {
        let mut meta = meta.clone();
        meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
        let unasked = server.request(
            1,
            "tools/call",
            json!({"name": "run_command", "arguments": {"argv": [script], "shell": true}, "_meta": meta}),
        )["result"]
            .clone();
        assert_eq!(unasked["isError"], true, "{unasked}");
        assert!(
            unasked["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("approval_required"),
            "{unasked}"
        );
    }
    assert_eq!(runs(), 1);
    // Under `--catalog search`, `call_tool` carries the retry's answer to the call.
    drop(server);
    let mut server = Server::spawn(ws.path(), &["--catalog", "search"]);
    let inner = json!({"name": "run_command", "arguments": {"argv": [script], "shell": true}});
    let asked = server.request(
        1,
        "tools/call",
        json!({"name": "call_tool", "arguments": inner, "_meta": meta}),
    )["result"]
        .clone();
    let state = asked["requestState"]
        .as_str()
        .expect("asked through call_tool")
        .to_owned();
    let approved = server.request(
        2,
        "tools/call",
        json!({"name": "call_tool", "arguments": inner, "_meta": meta, "requestState": state,
               "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}}),
    )["result"]
        .clone();
    assert_eq!(approved["isError"], false, "{approved}");
    assert_eq!(runs(), 2);
}

#[test]
fn a_calls_trace_context_and_caller_are_kept_in_its_receipt() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(ws.path(), &[]);
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for (id, trace) in [(1, traceparent), (2, "not-a-trace")] {
        let answer = server.request(
            id,
            "tools/call",
            json!({"name": "calculate", "arguments": {"expression": "1+1"},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "traceparent": trace,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "traced", "version": "1"}}}),
        );
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    drop(server);
    let receipts = receipts(ws.path());
    assert_eq!(receipts[0]["traceparent"], traceparent);
    assert_eq!(receipts[0]["caller"], "local");
    assert!(receipts[1].get("traceparent").is_none(), "a malformed one is left out");
}

#[test]
fn lists_say_how_long_they_stay_fresh_and_for_whom() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = Server::spawn(ws.path(), &[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cache", "version": "1"}});
    for (id, method) in [
        (1, "tools/list"),
        (2, "resources/list"),
        (3, "resources/templates/list"),
    ] {
        let list = server.request(id, method, json!({"_meta": meta}));
        // Nothing but an upstream changes the catalog once serving: fresh for an hour,
        // for the requesting user only (what is listed follows the policy).
        assert_eq!(list["result"]["ttlMs"], 3_600_000, "{method}: {list}");
        assert_eq!(list["result"]["cacheScope"], "private", "{method}: {list}");
    }
}
