//! The upstream as a process: the environment it gets, and its end (and that of what it
//! starts) with kyro's.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Setup;

/// An upstream sees kyro's PATH, HOME, LANG... and what its spec sets or passes by name;
/// no other variable of kyro's (a token, a cloud key, cargo's own) reaches it.
pub(super) fn an_upstream_gets_only_the_variables_it_is_given() {
    let setup = Setup::new();
    let output = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .arg("call")
        .arg("--workspace")
        .arg(setup.dir.path())
        .arg("--policy")
        .arg(setup.dir.path().join("auto.toml"))
        .arg("--upstream")
        .arg(setup.upstream_with("KYRO_TEST_SET='given value' --pass-env=KYRO_TEST_PASSED"))
        .env("KYRO_TEST_PASSED", "passed")
        .env("KYRO_TEST_SECRET", "leaked")
        .env("GITHUB_TOKEN", "ghp_leaked")
        .env("AWS_SECRET_ACCESS_KEY", "leaked")
        .args(["up.env", "{}"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answer: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    let text = answer["result"]["text"].as_str().unwrap_or_else(|| panic!("{answer}"));
    let vars: Vec<(&str, &str)> = text.lines().filter_map(|l| l.split_once('=')).collect();
    assert!(vars.contains(&("KYRO_TEST_PASSED", "passed")), "{text}");
    assert!(vars.contains(&("KYRO_TEST_SET", "given value")), "{text}");
    assert!(vars.iter().any(|(name, _)| *name == "PATH"), "{text}");
    for (name, _) in &vars {
        assert!(
            // What an upstream inherits (the README's list), and what its spec gives it.
            [
                "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "TERM"
            ]
            .contains(name)
                || ["KYRO_TEST_PASSED", "KYRO_TEST_SET"].contains(name),
            "`{name}` reached the upstream: {text}"
        );
    }
}

/// The processes whose command line is exactly `argv`, alive (zombies are not).
fn running(argv: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .filter(|pid| alive(*pid))
        .collect()
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
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

/// Waits up to 10 s for `gone` to hold.
fn within_10_s(gone: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// `kyro mcp --upstream SPEC`, spoken to in JSON-RPC lines, initialized; killed on drop.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Mcp {
    fn start(setup: &Setup, spec: &str) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kyro"))
            .arg("mcp")
            .arg("--workspace")
            .arg(setup.dir.path())
            .arg("--policy")
            .arg(setup.dir.path().join("auto.toml"))
            .arg("--upstream")
            .arg(spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        };
        let init =
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        mcp.ask(1, "initialize", init);
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "kyro closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// `up.spawn` with `marker`: the upstream has started `sleep MARKER`.
    fn spawn(&mut self, marker: &str) {
        let params = json!({"name": "up.spawn", "arguments": {"marker": marker}});
        let answer = self.ask(2, "tools/call", params);
        assert_eq!(answer["result"]["structuredContent"]["text"], "spawned", "{answer}");
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An upstream and what it starts end with kyro: when kyro is done with it (the end of a
/// `kyro call`, its client gone), on SIGTERM, and, for the upstream itself, when kyro is
/// killed outright (even an upstream that does not end when its stdin closes).
pub(super) fn an_upstream_and_what_it_starts_end_with_kyro() {
    let setup = Setup::new();
    let marker = |n: u32| format!("{}.{n}", 86_000 + std::process::id() % 1000);

    // The end of `kyro call`.
    let first = marker(1);
    let (spawned, _) = setup.kyro_call(Some("auto.toml"), &[], "up.spawn", json!({"marker": first}));
    assert_eq!(spawned["result"], json!({"text": "spawned"}), "{spawned}");
    assert!(
        within_10_s(|| running(&["sleep", first.as_str()]).is_empty()),
        "what the upstream started outlived `kyro call`"
    );

    // The client goes, then SIGTERM.
    for (n, ending) in [(2, "stdin closed"), (3, "SIGTERM")] {
        let mut mcp = Mcp::start(&setup, &setup.upstream_arg());
        let sleeper = marker(n);
        mcp.spawn(&sleeper);
        assert!(
            !running(&["sleep", sleeper.as_str()]).is_empty(),
            "{ending}: sleep did not start"
        );
        if n == 2 {
            mcp.stdin = None; // the client goes
        } else {
            let killed = Command::new("kill")
                .args(["-TERM", &mcp.child.id().to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
        }
        let _ = mcp.child.wait();
        assert!(
            within_10_s(|| running(&["sleep", sleeper.as_str()]).is_empty()),
            "{ending}: what the upstream started outlived kyro"
        );
    }

    // SIGKILL: kyro cleans nothing up; the upstream dies with it all the same.
    let mcp = Mcp::start(&setup, &setup.upstream_with("UPSTREAM_LINGER_MS=60000"));
    let kyro = mcp.child.id();
    let upstreams = children_of(kyro);
    assert!(!upstreams.is_empty(), "no upstream under kyro");
    drop(mcp); // SIGKILL, then reaped
    assert!(
        within_10_s(|| !upstreams.iter().any(|pid| alive(*pid))),
        "the upstream outlived a killed kyro: {upstreams:?}"
    );
}
