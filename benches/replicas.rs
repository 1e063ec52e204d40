//! A team's service: `kyro mcp --http` on the embedded SQLite store, on PostgreSQL
//! (`--state`) with one replica, and with two replicas behind a round-robin client, in one
//! run, on one machine.
//!
//! `cargo bench --bench replicas` starts its own PostgreSQL (`initdb`, `pg_ctl`, as the
//! tests do; prints "skipped" without it). Every call is a stateless 2026-07-28
//! `tools/call` over its own loopback connection, alternately `memory_store` (a new key)
//! and `memory_get` (the key just stored), each with its receipt. For each setup, in
//! alternation, `ROUNDS` times: `CLIENTS` clients make `CALLS` calls each at once (calls/s),
//! then one client makes `CALLS` calls one after another (latency per call). Medians are
//! reported, with the ratios between setups measured in the same run.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[allow(dead_code)]
#[path = "../tests/support/postgres.rs"]
mod postgres;

const ROUNDS: usize = 3;
const CLIENTS: usize = 8;
const CALLS: usize = 150;
const TOKEN: &str = "kyro-bench-token-0123456789";

/// One `kyro mcp --http`, killed on drop.
struct Replica {
    child: Child,
    address: String,
}

impl Replica {
    fn start(workspace: &std::path::Path, state: Option<&str>) -> Replica {
        let mut command = Command::new(std::env::var("KYRO_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kyro").into()));
        command
            .env("KYRO_HTTP_TOKEN", TOKEN)
            .env("KYRO_STATE_KEY", "a-bench-wide-state-key-of-more-than-32-bytes")
            .env_remove("KYRO_STATE")
            .args(["mcp", "--http", "127.0.0.1:0", "--workspace"])
            .arg(workspace);
        if let Some(url) = state {
            command.args(["--state", url]);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        Replica { child, address }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One stateless call; panics unless it succeeded.
fn call(address: &str, name: &str, arguments: Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("\"isError\":false"),
        "{answer}"
    );
}

/// `calls` calls of one client over `replicas` in turn: store a key, then get it.
fn client(replicas: &[String], tag: &str, calls: usize) {
    for i in 0..calls {
        let address = &replicas[i % replicas.len()];
        let key = format!("{tag}-{}", i / 2);
        if i % 2 == 0 {
            call(
                address,
                "memory_store",
                json!({"key": key, "value": format!("note {key}")}),
            );
        } else {
            call(address, "memory_get", json!({"key": key}));
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One round of a setup: calls/s of `CLIENTS` at once, and the median latency (ms) of one
/// client's calls one after another.
fn round(replicas: &[String], tag: &str) -> (f64, f64) {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for c in 0..CLIENTS {
            scope.spawn(move || client(replicas, &format!("{tag}-c{c}"), CALLS));
        }
    });
    let rate = (CLIENTS * CALLS) as f64 / started.elapsed().as_secs_f64();
    let mut latencies = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        let at = Instant::now();
        client(&replicas[i % replicas.len()..][..1], &format!("{tag}-solo-{i}"), 1);
        latencies.push(at.elapsed().as_secs_f64() * 1000.0);
    }
    (rate, median(latencies))
}

fn main() {
    let Some(pg) = postgres::Postgres::start() else {
        println!("replicas: skipped (PostgreSQL's initdb and pg_ctl are not installed)");
        return;
    };
    let (sqlite_ws, pg_ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let embedded = Replica::start(sqlite_ws.path(), None);
    let first = Replica::start(pg_ws.path(), Some(&pg.url));
    let second = Replica::start(pg_ws.path(), Some(&pg.url));
    let setups: [(&str, Vec<String>); 3] = [
        ("sqlite, 1 replica", vec![embedded.address.clone()]),
        ("postgres, 1 replica", vec![first.address.clone()]),
        (
            "postgres, 2 replicas",
            vec![first.address.clone(), second.address.clone()],
        ),
    ];
    // Warm-up: schemas migrated, pools filled, pages cached.
    for (i, (_, replicas)) in setups.iter().enumerate() {
        round(replicas, &format!("warm{i}"));
    }
    let mut rates = vec![Vec::new(); setups.len()];
    let mut latencies = vec![Vec::new(); setups.len()];
    for r in 0..ROUNDS {
        for (i, (_, replicas)) in setups.iter().enumerate() {
            let (rate, latency) = round(replicas, &format!("r{r}s{i}"));
            rates[i].push(rate);
            latencies[i].push(latency);
        }
    }
    println!(
        "replicas: {CLIENTS} clients x {CALLS} calls (memory_store, memory_get in turn; one connection a call), medians of {ROUNDS} rounds"
    );
    let rate: Vec<f64> = rates.into_iter().map(median).collect();
    let latency: Vec<f64> = latencies.into_iter().map(median).collect();
    for (i, (name, _)) in setups.iter().enumerate() {
        println!(
            "  {name:<22} {:>7.0} calls/s   one client: {:>6.2} ms a memory_store",
            rate[i], latency[i]
        );
    }
    println!(
        "  two replicas / one (postgres): {:.2}x calls/s; postgres / sqlite: {:.2}x calls/s, {:.2}x latency",
        rate[2] / rate[1],
        rate[1] / rate[0],
        latency[1] / latency[0]
    );
    std::thread::sleep(Duration::from_millis(10));
}
