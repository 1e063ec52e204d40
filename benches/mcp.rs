//! MCP over stdio: `kyro mcp` against a peer written with rmcp's own `#[tool]` macros
//! (`benches/peer`), both driven by the same load client in one run.
//!
//! `cargo bench --bench mcp` builds the peer (release) and measures, for each server:
//! cold start to the `initialize` answer, `tools/list` latency, sequential `tools/call`
//! p50/p99, pipelined throughput for 100,000 calls, RSS after the first call and at its
//! peak, and how long a `ping` waits while a blocking call runs. The calls are the same
//! `read_file` work on both servers: lines 11-210 of a 1,000-line file, 2.5 s old. kyro's numbers include what it always does per call: validation,
//! authorization, fingerprint and a receipt appended to `.kyro/receipts.jsonl`.
//!
//! The blocking call: on the peer, a `slow` tool that sleeps its thread for 1 s (plain
//! blocking code, as an author writes it); on kyro, `web_fetch` of a local server that
//! accepts and never answers, under a 1 s time limit (ureq blocking on the read).

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
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
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

fn measure(name: &'static str, command: &[String], dir: &Path, file: &str, slow: &Value) -> Report {
    let mut starts = Vec::new();
    for _ in 0..COLD_STARTS {
        let begin = Instant::now();
        let mut server = Server::spawn(command, dir);
        server.initialize();
        starts.push(begin.elapsed());
    }
    let mut server = Server::spawn(command, dir);
    server.initialize();
    let call = |id: u64| call_message(id, file);
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
    let owned = file.to_owned();
    let writer = std::thread::spawn(move || {
        for i in 0..PIPELINED {
            writeln!(stdin, "{}", call_message(100_000 + i as u64, &owned)).unwrap();
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

fn call_message(id: u64, file: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": file, "offset": 11, "limit": 200}}})
}

/// A placeholder to swap in while the real stdin is with the writer thread.
fn dummy_stdin() -> ChildStdin {
    let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let _ = child.wait();
    stdin
}

fn build_peer() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("peer");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(root.join("benches/peer/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the peer did not build");
    target.join("release/kyro-bench-peer")
}

fn main() {
    let peer = build_peer();
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
    // A server that accepts and never answers: kyro's blocking call.
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        "[approvals]\nnetwork = \"auto\"\n[limits]\ntimeout_ms = 1000\n[tools.network]\nallow_hosts = [\"127.0.0.1\"]\n",
    )
    .unwrap();
    let kyro = vec![
        env!("CARGO_BIN_EXE_kyro").to_owned(),
        "mcp".to_owned(),
        "--policy".to_owned(),
        policy.to_string_lossy().into_owned(),
    ];
    let kyro_slow =
        json!({"name": "web_fetch", "arguments": {"url": format!("http://{}/", stalled.local_addr().unwrap())}});
    let peer = vec![peer.to_string_lossy().into_owned()];
    let peer_slow = json!({"name": "slow", "arguments": {"ms": 1000}});
    let reports = [
        measure("kyro mcp", &kyro, &dir, &file, &kyro_slow),
        measure("rmcp #[tool] peer", &peer, &dir, &file, &peer_slow),
    ];
    println!(
        "mcp bench: stdio, read_file lines 11-210 of a 1,000-line file; {COLD_STARTS} cold starts, {LISTS} lists, {SEQUENTIAL} sequential and {PIPELINED} pipelined calls; ping during a 1 s blocking call, median of {SLOW_ROUNDS}"
    );
    println!(
        "{:<20} {:>12} {:>12} {:>10} {:>10} {:>14} {:>10} {:>10} {:>14}",
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
    for r in &reports {
        println!(
            "{:<20} {:>9.2} ms {:>9.3} ms {:>7.3} ms {:>7.3} ms {:>9.0} call/s {:>6.1} MiB {:>6} MiB {:>11.3} ms",
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
    let (k, p) = (&reports[0], &reports[1]);
    println!(
        "ratios kyro/peer: cold start {:.2}, tools/list {:.2}, call p50 {:.2}, pipelined throughput {:.2}, RSS after the first call {:.2}, peak RSS {:.2}, ping while blocked {:.4}",
        ms(k.cold_start) / ms(p.cold_start),
        ms(k.list) / ms(p.list),
        ms(k.p50) / ms(p.p50),
        k.throughput / p.throughput,
        k.rss_first_kib as f64 / p.rss_first_kib as f64,
        k.rss_kib as f64 / p.rss_kib as f64,
        ms(k.ping_while_blocked) / ms(p.ping_while_blocked)
    );
}
