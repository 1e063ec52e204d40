//! The browser tools over MCP: `kyro mcp` driving its headless Chromium on local pages,
//! as an agent would, with per-tool medians.
//!
//! `cargo bench --bench browser` starts a local HTTP server with two small pages (a link, a
//! text field, a button, a `<select>`), starts `kyro mcp` (the binary under test, or
//! `KYRO_BIN`), and measures cold start to the first navigation answered, then ROUNDS rounds
//! of navigate / snapshot / click / type / select / screenshot, alternating the pages. Needs
//! Chromium (`/usr/bin/chromium` or `KYRO_CHROMIUM`); prints "skipped" without it.

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
            "[approvals]\nnetwork = \"auto\"\n[tools.network]\nallow_hosts = [\"127.0.0.1\"]\n",
        )
        .unwrap();
        let mut child = Command::new(binary)
            .args(["mcp", "--toolsets", "all", "--policy", "policy.toml"])
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kyro mcp starts");
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
    server.call("browser_navigate", json!({"url": format!("{base}/a")}));
    let cold = begin.elapsed();
    let steps: [(&str, &str); 6] = [
        ("navigate", "browser_navigate"),
        ("snapshot", "browser_snapshot"),
        ("click", "browser_click"),
        ("type", "browser_type"),
        ("select", "browser_select_option"),
        ("screenshot", "browser_screenshot"),
    ];
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); steps.len()];
    for round in 0..ROUNDS {
        let page = if round % 2 == 0 { "b" } else { "a" };
        let arguments = [
            json!({"url": format!("{base}/{page}")}),
            json!({}),
            json!({"selector": "#btn"}),
            json!({"selector": "#q", "text": "hello"}),
            json!({"selector": "#s", "values": ["y"]}),
            json!({}),
        ];
        for (i, ((_, tool), args)) in steps.iter().zip(arguments).enumerate() {
            samples[i].push(server.call(tool, args));
        }
    }
    println!("kyro mcp, browser tools, median of {ROUNDS} calls each (local pages)");
    println!("| cold start -> first navigate | {:.0} ms |", cold.as_secs_f64() * 1e3);
    for ((name, _), mut taken) in steps.iter().zip(samples) {
        println!("| {name} | {:.1} ms |", median(&mut taken));
    }
}
