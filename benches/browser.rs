//! The browser tools over MCP: `kyro mcp` driving its headless Chromium on local pages,
//! as an agent would, with per-tool medians.
//!
//! `cargo bench --bench browser` starts a local HTTP server with two small pages (a link, a
//! text field, a button, a `<select>`), starts `kyro mcp` (the binary under test, or
//! `KYRO_BIN`), and measures cold start to the first navigation answered, then ROUNDS rounds
//! of the [`STEPS`] (navigate, snapshot, click, type, select, screenshots, and the newer
//! tools), alternating the pages. With `PLAYWRIGHT_MCP` set to Playwright MCP's `cli.js`
//! (`npm install @playwright/mcp`), the same actions on Playwright MCP over the same Chromium,
//! in the same run, and the ratio. Needs Chromium (`/usr/bin/chromium` or `KYRO_CHROMIUM`);
//! prints "skipped" without it.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ROUNDS: usize = 7;

const PAGE: &str = "<html><head><title>TITLE</title></head><body><h1>Page TITLE</h1>\
<a href='/OTHER' id='go'>to OTHER</a><input id='q' placeholder='q'>\
<button id='btn' onclick=\"this.textContent='clicked'\">Click</button>\
<select id='s'><option>x</option><option>y</option></select></body></html>";

/// Serves `/a` and `/b` on 127.0.0.1 until the process ends; the base URL.
fn site() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split_whitespace().nth(1).unwrap_or("/");
                let (status, body) = match path {
                    "/a" => ("200 OK", PAGE.replace("TITLE", "A").replace("OTHER", "b")),
                    "/b" => ("200 OK", PAGE.replace("TITLE", "B").replace("OTHER", "a")),
                    _ => ("404 Not Found", String::new()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    base
}

struct Server {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(workspace: &std::path::Path) -> Server {
        let binary = std::env::var("KYRO_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kyro").to_owned());
        std::fs::write(
            workspace.join("policy.toml"),
            "[approvals]\nnetwork = \"auto\"\nwrite = \"auto\"\n[approvals.tools]\nbrowser_run_code_unsafe = \"auto\"\n\
             [tools.network]\nallow_hosts = [\"127.0.0.1\"]\n",
        )
        .unwrap();
        let mut command = Command::new(binary);
        command.args(["mcp", "--toolsets", "all", "--policy", "policy.toml"]);
        Server::spawn(command, workspace)
    }

    /// Playwright MCP (`PLAYWRIGHT_MCP`: its `cli.js`) on the same Chromium, every
    /// capability on, its profile in memory.
    fn playwright(cli: &str, chromium: &str, workspace: &std::path::Path) -> Server {
        let mut command = Command::new("node");
        command.args([
            cli,
            "--headless",
            "--isolated",
            "--browser",
            "chromium",
            "--executable-path",
            chromium,
            "--caps",
            "vision,pdf,devtools,storage,network,testing",
            "--output-dir",
        ]);
        command.arg(workspace);
        Server::spawn(command, workspace)
    }

    fn spawn(mut command: Command, workspace: &std::path::Path) -> Server {
        let mut child = command
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdin = BufWriter::new(child.stdin.take().unwrap());
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server {
            child,
            stdin,
            stdout,
            next: 0,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// One tool call; its wall time. A failed call stops the bench.
    fn call(&mut self, tool: &str, arguments: Value) -> Duration {
        let begin = Instant::now();
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let took = begin.elapsed();
        assert_ne!(answer["result"]["isError"], true, "{tool}: {answer}");
        took
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

/// One action: its label, and the call on kyro and on Playwright MCP (`None`: Playwright has
/// no such call). `PAGE` in an argument is the round's page (`a` or `b`), `BASE` the site.
struct Step {
    label: &'static str,
    kyro: (&'static str, &'static str),
    playwright: Option<(&'static str, &'static str)>,
}

const fn step(
    label: &'static str,
    kyro: (&'static str, &'static str),
    playwright: (&'static str, &'static str),
) -> Step {
    Step {
        label,
        kyro,
        playwright: Some(playwright),
    }
}

/// The rounds' actions, in order, each on both servers.
const STEPS: &[Step] = &[
    step(
        "navigate",
        ("browser_navigate", r#"{"url": "BASE/PAGE"}"#),
        ("browser_navigate", r#"{"url": "BASE/PAGE"}"#),
    ),
    step("snapshot", ("browser_snapshot", "{}"), ("browser_snapshot", "{}")),
    step(
        "click",
        ("browser_click", r##"{"selector": "#btn"}"##),
        ("browser_click", r##"{"element": "button", "target": "#btn"}"##),
    ),
    step(
        "type",
        ("browser_type", r##"{"selector": "#q", "text": "hello"}"##),
        (
            "browser_type",
            r##"{"element": "field", "target": "#q", "text": "hello"}"##,
        ),
    ),
    step(
        "select",
        ("browser_select_option", r##"{"selector": "#s", "values": ["y"]}"##),
        (
            "browser_select_option",
            r##"{"element": "select", "target": "#s", "values": ["y"]}"##,
        ),
    ),
    step(
        "screenshot",
        ("browser_screenshot", "{}"),
        ("browser_take_screenshot", r#"{"type": "png", "scale": "css"}"#),
    ),
    step(
        "screenshot, full page",
        ("browser_screenshot", r#"{"full_page": true}"#),
        (
            "browser_take_screenshot",
            r#"{"type": "png", "scale": "css", "fullPage": true}"#,
        ),
    ),
    step(
        "highlight",
        ("browser_highlight", r##"{"selector": "#btn"}"##),
        ("browser_highlight", r##"{"element": "button", "target": "#btn"}"##),
    ),
    step(
        "hide highlight",
        ("browser_hide_highlight", "{}"),
        ("browser_hide_highlight", "{}"),
    ),
    step(
        "run code",
        ("browser_run_code_unsafe", r#"{"code": "async () => document.title"}"#),
        (
            "browser_run_code_unsafe",
            r#"{"code": "async (page) => await page.title()"}"#,
        ),
    ),
    step(
        "emulate media",
        ("browser_emulate_media", r#"{"colorScheme": "dark"}"#),
        ("browser_emulate_media", r#"{"colorScheme": "dark"}"#),
    ),
    step("mouse down", ("browser_mouse_down", "{}"), ("browser_mouse_down", "{}")),
    step("mouse up", ("browser_mouse_up", "{}"), ("browser_mouse_up", "{}")),
    step(
        "verify value",
        (
            "browser_verify_value",
            r##"{"type": "textbox", "element": "field", "target": "#q", "value": "hello"}"##,
        ),
        (
            "browser_verify_value",
            r##"{"type": "textbox", "element": "field", "target": "#q", "value": "hello"}"##,
        ),
    ),
    step(
        "generate locator",
        (
            "browser_generate_locator",
            r##"{"element": "button", "target": "#btn"}"##,
        ),
        (
            "browser_generate_locator",
            r##"{"element": "button", "target": "#btn"}"##,
        ),
    ),
    step("route list", ("browser_route_list", "{}"), ("browser_route_list", "{}")),
    step(
        "localStorage set",
        ("browser_localstorage_set", r#"{"key": "k", "value": "v"}"#),
        ("browser_localstorage_set", r#"{"key": "k", "value": "v"}"#),
    ),
    step(
        "localStorage list",
        ("browser_localstorage_list", "{}"),
        ("browser_localstorage_list", "{}"),
    ),
    step(
        "sessionStorage set",
        ("browser_sessionstorage_set", r#"{"key": "k", "value": "v"}"#),
        ("browser_sessionstorage_set", r#"{"key": "k", "value": "v"}"#),
    ),
    step(
        "cookie list",
        ("browser_cookie_list", "{}"),
        ("browser_cookie_list", "{}"),
    ),
    step(
        "storage state save",
        ("browser_storage_state", r#"{"filename": "state.json"}"#),
        ("browser_storage_state", r#"{"filename": "state.json"}"#),
    ),
    step(
        "storage state restore",
        ("browser_set_storage_state", r#"{"filename": "state.json"}"#),
        ("browser_set_storage_state", r#"{"filename": "state.json"}"#),
    ),
    step(
        "start tracing",
        ("browser_start_tracing", "{}"),
        ("browser_start_tracing", "{}"),
    ),
    step(
        "stop tracing",
        ("browser_stop_tracing", "{}"),
        ("browser_stop_tracing", "{}"),
    ),
];

/// Cold start to the first navigation, then each step's calls, one per round.
fn measure(
    begin: Instant,
    server: &mut Server,
    base: &str,
    pick: fn(&Step) -> Option<(&'static str, &'static str)>,
) -> (Duration, Vec<Vec<Duration>>) {
    let args = |text: &str, page: &str| -> Value {
        serde_json::from_str(&text.replace("BASE", base).replace("PAGE", page)).unwrap()
    };
    server.call("browser_navigate", args(r#"{"url": "BASE/a"}"#, "a"));
    let cold = begin.elapsed();
    let mut samples = vec![Vec::new(); STEPS.len()];
    for round in 0..ROUNDS {
        let page = if round % 2 == 0 { "b" } else { "a" };
        for (i, step) in STEPS.iter().enumerate() {
            if let Some((tool, arguments)) = pick(step) {
                samples[i].push(server.call(tool, args(arguments, page)));
            }
        }
    }
    (cold, samples)
}

fn main() {
    let chromium = std::env::var("KYRO_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !std::path::Path::new(&chromium).exists() {
        println!("skipped: no Chromium at {chromium}");
        return;
    }
    let base = site();
    let workspace = tempfile::tempdir().unwrap();
    let begin = Instant::now();
    let mut server = Server::start(workspace.path());
    let (cold, mut kyro) = measure(begin, &mut server, &base, |s| Some(s.kyro));
    drop(server);
    let peer = std::env::var("PLAYWRIGHT_MCP").ok().map(|cli| {
        let workspace = tempfile::tempdir().unwrap();
        let begin = Instant::now();
        let mut server = Server::playwright(&cli, &chromium, workspace.path());
        measure(begin, &mut server, &base, |s| s.playwright)
    });
    println!("browser tools over MCP stdio, median of {ROUNDS} calls each (local pages, same Chromium, same run)");
    match &peer {
        None => println!("(set PLAYWRIGHT_MCP to Playwright MCP's cli.js for its column)"),
        Some(_) => println!("| action | kyro mcp | Playwright MCP | ratio |\n|---|---|---|---|"),
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    match &peer {
        Some((theirs, _)) => println!(
            "| cold start -> first navigate | {:.0} ms | {:.0} ms | {:.2}x |",
            ms(cold),
            ms(*theirs),
            ms(cold) / ms(*theirs)
        ),
        None => println!("| cold start -> first navigate | {:.0} ms | | |", ms(cold)),
    }
    let mut peer = peer.map(|(_, samples)| samples);
    for (i, step) in STEPS.iter().enumerate() {
        let ours = median(&mut kyro[i]);
        match peer.as_mut().map(|samples| &mut samples[i]) {
            Some(theirs) if !theirs.is_empty() => {
                let theirs = median(theirs);
                println!(
                    "| {} | {ours:.1} ms | {theirs:.1} ms | {:.2}x |",
                    step.label,
                    ours / theirs
                );
            }
            _ => println!("| {} | {ours:.1} ms | | |", step.label),
        }
    }
}
