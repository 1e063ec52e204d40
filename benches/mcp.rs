//! MCP over stdio and Streamable HTTP: `kyro mcp` and an author's server built on kyro
//! (`benches/author`, built-ins off) against a peer written with rmcp's own `#[tool]`
//! macros (`benches/peer`), all driven by the same load client in one run.
//!
//! `cargo bench --bench mcp` builds the peer and the author's server (release, as kyro) and
//! measures, over stdio, for each server: cold start to the `initialize` answer,
//! `tools/list` latency, sequential `tools/call` p50/p99, pipelined throughput for 100,000
//! calls, RSS after the first call and at its peak, and how long a `ping` waits while a
//! blocking call runs; over Streamable HTTP (2026-07-28 requests, no session, a bearer
//! token), sequential p50/p99 on one kept-alive connection and the calls/s of sixteen clients
//! at once. The work: `read_file` of lines 11-210 of a 1,000-line file, 2.5 s old (kyro's
//! own tool, and the same function on the author's server and the peer), and `echo` (a
//! trivial tool: what the framework itself costs). kyro's numbers include what it always
//! does per call: validation, authorization, fingerprint and a receipt appended to
//! `.kyro/receipts.jsonl`. `KYRO_BENCH_ONLY=read,echo,http` picks parts.
//!
//! The blocking call: on the peer and the author's server, a `slow` tool that sleeps its
//! thread for 1 s (plain blocking code, as an author writes it); on kyro, `web_fetch` of a
//! local server that accepts and never answers, under a 1 s time limit (ureq blocking on
//! the read).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const COLD_STARTS: usize = 15;
const LISTS: usize = 200;
const SEQUENTIAL: usize = 2000;
const PIPELINED: usize = 100_000;
const SLOW_ROUNDS: u64 = 5;

struct Server {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn spawn(command: &[String], dir: &Path) -> Server {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let stdin = BufWriter::new(child.stdin.take().unwrap());
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server { child, stdin, stdout }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed");
        serde_json::from_str(&line).unwrap()
    }

    /// The next message's `id` only (the rest is checked as JSON, not built): the load
    /// client reads this fast, so that the figures are the server's, not the client's.
    fn receive_id(&mut self) -> Option<u64> {
        #[derive(serde::Deserialize)]
        struct Head {
            id: Option<u64>,
        }
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "server closed");
        serde_json::from_str::<Head>(&line).unwrap().id
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.receive();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        let init = self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// `VmRSS` (now) or `VmHWM` (peak) of the server, in KiB.
    fn rss_kib(&self, field: &str) -> u64 {
        rss_kib(self.child.id(), field)
    }
}

/// `field` (`VmRSS:`, `VmHWM:`) of process `pid`, in KiB.
fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Report {
    name: &'static str,
    cold_start: Duration,
    list: Duration,
    p50: Duration,
    p99: Duration,
    throughput: f64,
    rss_first_kib: u64,
    rss_kib: u64,
    ping_while_blocked: Duration,
}

/// How long a `ping` sent 100 ms into a blocking call waits for its answer (median).
fn ping_while_blocked(server: &mut Server, slow: &Value) -> Duration {
    let mut waits = Vec::new();
    for round in 0..SLOW_ROUNDS {
        let (slow_id, ping_id) = (900_000 + round * 10, 900_001 + round * 10);
        server.send(&json!({"jsonrpc": "2.0", "id": slow_id, "method": "tools/call", "params": slow}));
        std::thread::sleep(Duration::from_millis(100));
        let begin = Instant::now();
        server.send(&json!({"jsonrpc": "2.0", "id": ping_id, "method": "ping"}));
        let mut slow_done = false;
        loop {
            let message = server.receive();
            if message["id"] == slow_id {
                slow_done = true;
            }
            if message["id"] == ping_id {
                break;
            }
        }
        waits.push(begin.elapsed());
        while !slow_done {
            slow_done = server.receive()["id"] == slow_id;
        }
    }
    percentile(&mut waits, 0.5)
}

/// What each call sends: the `params` of a `tools/call`.
type Work<'a> = &'a (dyn Fn() -> Value + Sync);

fn measure(name: &'static str, command: &[String], dir: &Path, work: Work, slow: &Value) -> Report {
    let mut starts = Vec::new();
    for _ in 0..COLD_STARTS {
        let begin = Instant::now();
        let mut server = Server::spawn(command, dir);
        server.initialize();
        starts.push(begin.elapsed());
    }
    let mut server = Server::spawn(command, dir);
    server.initialize();
    let call = |id: u64| call_message(id, work());
    let first = server.request(1, "tools/call", call(1)["params"].clone());
    assert!(
        first["result"]["isError"] != true && first.get("error").is_none(),
        "{name}: {first}"
    );
    let rss_first_kib = server.rss_kib("VmRSS:");

    let mut lists = Vec::new();
    for i in 0..LISTS {
        let begin = Instant::now();
        let list = server.request(10 + i as u64, "tools/list", json!({}));
        lists.push(begin.elapsed());
        assert!(list["result"]["tools"].is_array());
    }

    let mut sequential = Vec::new();
    for i in 0..SEQUENTIAL {
        let id = 1_000 + i as u64;
        let begin = Instant::now();
        server.send(&call(id));
        while server.receive_id() != Some(id) {}
        sequential.push(begin.elapsed());
    }

    // Pipelined: one thread writes every request, this one reads every answer.
    let mut stdin = std::mem::replace(&mut server.stdin, BufWriter::new(dummy_stdin()));
    let begin = Instant::now();
    let params = work();
    let writer = std::thread::spawn(move || {
        for i in 0..PIPELINED {
            writeln!(stdin, "{}", call_message(100_000 + i as u64, params.clone())).unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });
    let mut answered = 0;
    while answered < PIPELINED {
        if server.receive_id().is_some_and(|id| id >= 100_000) {
            answered += 1;
        }
    }
    let throughput = PIPELINED as f64 / begin.elapsed().as_secs_f64();
    server.stdin = writer.join().unwrap();
    let rss_kib = server.rss_kib("VmHWM:");
    let ping_while_blocked = ping_while_blocked(&mut server, slow);
    Report {
        name,
        cold_start: percentile(&mut starts, 0.5),
        list: percentile(&mut lists, 0.5),
        p50: percentile(&mut sequential.clone(), 0.5),
        p99: percentile(&mut sequential, 0.99),
        throughput,
        rss_first_kib,
        rss_kib,
        ping_while_blocked,
    }
}

fn call_message(id: u64, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A placeholder to swap in while the real stdin is with the writer thread.
fn dummy_stdin() -> ChildStdin {
    let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let _ = child.wait();
    stdin
}

/// Builds a bench crate (`benches/NAME`, its own package) with the release profile; its binary.
fn build(package: &str, binary: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join(package);
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(root.join("benches").join(package).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "benches/{package} did not build");
    target.join("release").join(binary)
}

const HTTP_SEQUENTIAL: usize = 2000;
const HTTP_CLIENTS: usize = 16;
const HTTP_CONCURRENT: usize = 20_000;
const TOKEN: &str = "bench-token-0123456789abcdef0123456789abcdef";

struct HttpReport {
    name: &'static str,
    p50: Duration,
    p99: Duration,
    throughput: f64,
    rss_kib: u64,
}

/// One 2026-07-28 request (no session, `_meta` and the `Mcp-*` headers), with the bearer
/// token, over a kept-alive connection of `agent`: whether its answer is a result that is
/// not a tool error.
fn post(agent: &ureq::Agent, url: &str, id: u64, params: &Value) -> bool {
    let mut params = params.clone();
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
    let Ok(mut answer) = agent
        .post(url)
        .header("Authorization", format!("Bearer {TOKEN}"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
        .send(body)
    else {
        return false;
    };
    let text = answer.body_mut().read_to_string().unwrap_or_default();
    answer.status() == 200 && text.contains("\"result\"") && !text.contains("\"isError\":true")
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(HTTP_CLIENTS)
        .build()
        .into()
}

/// A server on Streamable HTTP: sequential calls on one connection (p50, p99), then
/// `HTTP_CLIENTS` connections calling at once (calls/s), then its RSS.
fn measure_http(name: &'static str, command: &[String], dir: &Path, env: (&str, &str), work: Work) -> HttpReport {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .args(["--http", &format!("127.0.0.1:{port}")])
        .env(env.0, env.1)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server starts");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = agent();
    let params = work();
    let begin = Instant::now();
    while !post(&client, &url, 1, &params) {
        assert!(
            begin.elapsed() < Duration::from_secs(10),
            "{name} did not answer over HTTP"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut sequential = Vec::new();
    for i in 0..HTTP_SEQUENTIAL {
        let begin = Instant::now();
        assert!(post(&client, &url, 10 + i as u64, &params), "{name}");
        sequential.push(begin.elapsed());
    }
    let begin = Instant::now();
    std::thread::scope(|scope| {
        for c in 0..HTTP_CLIENTS {
            let (url, params) = (&url, &params);
            scope.spawn(move || {
                let client = agent();
                for i in 0..HTTP_CONCURRENT / HTTP_CLIENTS {
                    assert!(post(&client, url, (c * 1_000_000 + i) as u64, params), "{name}");
                }
            });
        }
    });
    let throughput = HTTP_CONCURRENT as f64 / begin.elapsed().as_secs_f64();
    let rss_kib = rss_kib(child.id(), "VmRSS:");
    let _ = child.kill();
    let _ = child.wait();
    HttpReport {
        name,
        p50: percentile(&mut sequential.clone(), 0.5),
        p99: percentile(&mut sequential, 0.99),
        throughput,
        rss_kib,
    }
}

fn print_stdio(title: &str, reports: &[Report]) {
    println!("\n{title}");
    println!(
        "{:<22} {:>12} {:>12} {:>10} {:>10} {:>14} {:>10} {:>10} {:>14}",
        "server",
        "cold start",
        "tools/list",
        "call p50",
        "call p99",
        "pipelined",
        "RSS first",
        "peak RSS",
        "ping (blocked)"
    );
    for r in reports {
        println!(
            "{:<22} {:>9.2} ms {:>9.3} ms {:>7.3} ms {:>7.3} ms {:>9.0} call/s {:>6.1} MiB {:>6} MiB {:>11.3} ms",
            r.name,
            ms(r.cold_start),
            ms(r.list),
            ms(r.p50),
            ms(r.p99),
            r.throughput,
            r.rss_first_kib as f64 / 1024.0,
            r.rss_kib / 1024,
            ms(r.ping_while_blocked)
        );
    }
    let p = reports.last().unwrap();
    for k in &reports[..reports.len() - 1] {
        println!(
            "  {} / peer: cold start {:.2}, tools/list {:.2}, call p50 {:.2}, pipelined {:.2}, RSS after the first call {:.2}, peak RSS {:.2}, ping while blocked {:.4}",
            k.name,
            ms(k.cold_start) / ms(p.cold_start),
            ms(k.list) / ms(p.list),
            ms(k.p50) / ms(p.p50),
            k.throughput / p.throughput,
            k.rss_first_kib as f64 / p.rss_first_kib as f64,
            k.rss_kib as f64 / p.rss_kib as f64,
            ms(k.ping_while_blocked) / ms(p.ping_while_blocked)
        );
    }
}

fn print_http(title: &str, reports: &[HttpReport]) {
    println!("\n{title}");
    println!(
        "{:<22} {:>10} {:>10} {:>16} {:>10}",
        "server",
        "call p50",
        "call p99",
        format!("{HTTP_CLIENTS} clients"),
        "RSS"
    );
    for r in reports {
        println!(
            "{:<22} {:>7.3} ms {:>7.3} ms {:>9.0} call/s {:>6.1} MiB",
            r.name,
            ms(r.p50),
            ms(r.p99),
            r.throughput,
            r.rss_kib as f64 / 1024.0
        );
    }
    let p = reports.last().unwrap();
    for k in &reports[..reports.len() - 1] {
        println!(
            "  {} / peer: call p50 {:.2}, calls/s {:.2}, RSS {:.2}",
            k.name,
            ms(k.p50) / ms(p.p50),
            k.throughput / p.throughput,
            k.rss_kib as f64 / p.rss_kib as f64
        );
    }
}

fn main() {
    let peer = build("peer", "kyro-bench-peer");
    let author = build("author", "kyro-bench-author");
    let workspace = tempfile::tempdir().unwrap();
    let dir = workspace.path().canonicalize().unwrap();
    let lines: String = (1..=1000)
        .map(|n| format!("line {n}: the quick brown fox jumps over the lazy dog | café\n"))
        .collect();
    std::fs::write(dir.join("lines.txt"), lines).unwrap();
    // As a project's files are, the file is a few seconds old when it is read: kyro's
    // read_file then remembers its hash and line count and reads only the window (a file
    // written less than 2 s before is read whole, hashed, on every call).
    std::thread::sleep(Duration::from_millis(2500));
    let file = dir.join("lines.txt").to_string_lossy().into_owned();
    let read = move || json!({"name": "read_file", "arguments": {"path": file, "offset": 11, "limit": 200}});
    let echo = || json!({"name": "echo", "arguments": {"text": "hello"}});
    // A server that accepts and never answers: kyro's blocking call.
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "[approvals]\nnetwork = \"auto\"\n[limits]\ntimeout_ms = 1000\n[tools.network]\nallow_hosts = [\"127.0.0.1\"]\n",
    )
    .unwrap();
    let policy = policy.to_string_lossy().into_owned();
    let kyro = vec![
        env!("CARGO_BIN_EXE_kyro").to_owned(),
        "mcp".to_owned(),
        "--policy".to_owned(),
        policy,
    ];
    let kyro_slow =
        json!({"name": "web_fetch", "arguments": {"url": format!("http://{}/", stalled.local_addr().unwrap())}});
    let author = vec![author.to_string_lossy().into_owned()];
    let peer = vec![peer.to_string_lossy().into_owned()];
    let slow = json!({"name": "slow", "arguments": {"ms": 1000}});
    let only = std::env::var("KYRO_BENCH_ONLY").unwrap_or_default();
    let runs = |part: &str| only.is_empty() || only.split(',').any(|p| p == part);
    println!(
        "mcp bench: {COLD_STARTS} cold starts, {LISTS} lists, {SEQUENTIAL} sequential and {PIPELINED} pipelined calls over stdio; ping during a 1 s blocking call, median of {SLOW_ROUNDS}; over HTTP {HTTP_SEQUENTIAL} sequential calls and {HTTP_CONCURRENT} from {HTTP_CLIENTS} clients at once"
    );
    if runs("read") {
        let reports = [
            measure("kyro mcp", &kyro, &dir, &read, &kyro_slow),
            measure("author's server", &author, &dir, &read, &slow),
            measure("rmcp #[tool] peer", &peer, &dir, &read, &slow),
        ];
        print_stdio("stdio, read_file lines 11-210 of a 1,000-line file", &reports);
    }
    if runs("echo") {
        let reports = [
            measure("author's server", &author, &dir, &echo, &slow),
            measure("rmcp #[tool] peer", &peer, &dir, &echo, &slow),
        ];
        print_stdio("stdio, echo (a trivial tool: the framework's own cost)", &reports);
    }
    if runs("http") {
        let reports = [
            measure_http("kyro mcp --http", &kyro, &dir, ("KYRO_HTTP_TOKEN", TOKEN), &read),
            measure_http("author's --http", &author, &dir, ("KYRO_HTTP_TOKEN", TOKEN), &read),
            measure_http("rmcp peer (HTTP)", &peer, &dir, ("PEER_TOKEN", TOKEN), &read),
        ];
        print_http(
            "Streamable HTTP, 2026-07-28 stateless requests with a bearer token, read_file as above",
            &reports,
        );
    }
}
