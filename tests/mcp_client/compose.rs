//! docs/deploy/compose.yaml run as written, where no container engine is needed: each
//! kyro service's command, environment and mounts, on a PostgreSQL the test starts and
//! with the test's own token file; every file docs/deploy.md, the Dockerfile and the
//! compose file cite is there; and, on request (`KYRO_TEST_IMAGE=1`, a machine with a
//! Docker engine), the image itself built and run.

#[path = "compose_yaml.rs"]
mod compose_yaml;
#[path = "deploy_files.rs"]
mod deploy_files;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compose_yaml::{Yaml, interpolate, parse};
use serde_json::{Value, json};

use super::post_as;
use super::postgres::Postgres;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn deploy_dir() -> PathBuf {
    repository().join("docs/deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn compose() -> Yaml {
    parse(&read(&deploy_dir().join("compose.yaml"))).unwrap_or_else(|e| panic!("docs/deploy/compose.yaml: {e}"))
}

/// The services that run kyro: those whose command is `mcp ...`.
fn replicas(compose: &Yaml) -> Vec<(&str, &Yaml)> {
    let services = compose.get("services").expect("compose.yaml has services").entries();
    services
        .iter()
        .filter(|(_, s)| s.get("command").is_some_and(|c| c.strings().first() == Some(&"mcp")))
        .map(|(name, s)| (name.as_str(), s))
        .collect()
}

/// The host path of a path in the container, through the service's mounts (the longest
/// mount that holds it); a `SCOPES=PATH` word's path too.
fn host_path(word: &str, mounts: &[(String, PathBuf)]) -> String {
    let (head, path) = match word.rfind("=/") {
        Some(i) => word.split_at(i + 1),
        None => ("", word),
    };
    let mapped = mounts
        .iter()
        .filter(|(target, _)| path == target || path.starts_with(&format!("{target}/")))
        .max_by_key(|(target, _)| target.len())
        .map(|(target, source)| format!("{}{}", source.display(), &path[target.len()..]));
    format!("{head}{}", mapped.unwrap_or_else(|| path.to_owned()))
}

/// One replica of the compose file, run here: killed on drop.
struct Replica {
    name: String,
    child: Child,
    url: String,
    /// What it wrote on stderr so far.
    stderr: Arc<Mutex<String>>,
    /// The service's healthcheck, its port made this replica's.
    healthcheck: Vec<String>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a replica's container paths are here: the mounts (`./FILE` beside the compose
/// file, named volumes under `volumes`) and its command, environment and healthcheck,
/// interpolated with `vars`.
struct Service {
    mounts: Vec<(String, PathBuf)>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// The `--http` address in the compose file, and its port.
    address: String,
    port: String,
    healthcheck: Vec<String>,
}

impl Service {
    fn read(name: &str, service: &Yaml, vars: &dyn Fn(&str) -> Option<String>, volumes: &Path) -> Service {
        let text = |value: &str| interpolate(value, vars).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut mounts = Vec::new();
        for mount in service.get("volumes").map(Yaml::strings).unwrap_or_default() {
            let mount = text(mount);
            let mut parts = mount.split(':');
            let (source, target) = (parts.next().unwrap(), parts.next().expect("a mount is SOURCE:TARGET"));
            let source = if source.starts_with("./") || source.starts_with("../") {
                deploy_dir().join(source)
            } else if source.starts_with('/') {
                PathBuf::from(source)
            } else {
                let named = volumes.join(source);
                std::fs::create_dir_all(&named).unwrap();
                named
            };
            mounts.push((target.to_owned(), source));
        }
        let command: Vec<String> = service
            .get("command")
            .unwrap()
            .strings()
            .into_iter()
            .map(text)
            .collect();
        let (mut args, mut address, mut words) = (Vec::new(), None, command.into_iter());
        while let Some(word) = words.next() {
            if word == "--http" {
                address = Some(words.next().expect("--http ADDRESS"));
                args.extend(["--http".to_owned(), "127.0.0.1:0".to_owned()]);
            } else {
                args.push(host_path(&word, &mounts));
            }
        }
        let address = address.unwrap_or_else(|| panic!("{name} serves no --http address"));
        let port = address.rsplit(':').next().unwrap().to_owned();
        let env = match service.get("environment") {
            None => Vec::new(),
            Some(Yaml::Map(entries)) => entries
                .iter()
                .map(|(k, v)| (k.clone(), text(v.str().unwrap_or_default())))
                .collect(),
            Some(list) => list
                .strings()
                .into_iter()
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("NAME=VALUE");
                    (k.to_owned(), text(v))
                })
                .collect(),
        };
        let healthcheck = service
            .get("healthcheck")
            .and_then(|h| h.get("test"))
            .map(|test| test.strings().into_iter().map(text).collect())
            .unwrap_or_default();
        Service {
            mounts,
            args,
            env,
            address,
            port,
            healthcheck,
        }
    }

    /// The replica, once it says where it serves.
    fn start(&self, name: &str, database: &str, services: &[&str]) -> Replica {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
        command
            .env_remove("KYRO_HTTP_TOKEN")
            .env_remove("KYRO_STATE")
            .env_remove("KYRO_STATE_KEY");
        for (key, value) in &self.env {
            if key == "KYRO_STATE" {
                // The compose file's database service; here, the test's own server.
                let host = value.split('@').nth(1).and_then(|h| h.split(['/', ':']).next());
                assert!(
                    value.starts_with("postgres://") && host.is_some_and(|h| services.contains(&h)),
                    "{name}: KYRO_STATE is not a URL of a compose service: {value}"
                );
                command.env(key, database);
            } else {
                command.env(key, value);
            }
        }
        // The image's WORKDIR.
        command.current_dir(host_path("/workspace", &self.mounts));
        let mut child = command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (serving, serves) = std::sync::mpsc::channel();
        let (pipe, kept) = (child.stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if line.contains("serving MCP on") {
                    let _ = serving.send(line.clone());
                }
                kept.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let Ok(line) = serves.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not serve: {}", stderr.lock().unwrap());
        };
        let start = line.find("http://127.0.0.1:").expect("a loopback address");
        let url: String = line[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"')
            .collect();
        let port = url.trim_end_matches("/mcp").rsplit(':').next().unwrap().to_owned();
        let own = |word: &String| word.replace(&format!("/{}", self.port), &format!("/{port}"));
        Replica {
            name: name.to_owned(),
            child,
            url,
            stderr,
            healthcheck: self.healthcheck.iter().map(own).collect(),
        }
    }
}

/// One HTTP/1.1 request to the server of `url` naming `host`: the status and the body.
fn request(url: &str, method: &str, path: &str, host: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream.write_all(format!("{head}\r\n{body}").as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// `/readyz` answers 200, within 30 seconds.
fn ready(replica: &Replica) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = request(&replica.url, "GET", "/readyz", "localhost", &[], "");
        if status == 200 {
            assert!(body.contains("ready"), "{body}");
            return;
        }
        assert!(Instant::now() < deadline, "{} not ready: {status} {body}", replica.name);
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A service's healthcheck, run here (`CMD` form): whether it passed within 20 s.
fn healthy(name: &str, healthcheck: &[String]) -> bool {
    let [kind, program, args @ ..] = healthcheck else {
        panic!("{name}: a healthcheck `[\"CMD\", PROGRAM, ARGS...]`")
    };
    assert_eq!(kind, "CMD", "{name}");
    let mut check = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = check.try_wait().unwrap() {
            return status.success();
        }
        if Instant::now() > deadline {
            let _ = check.kill();
            let _ = check.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A 2026-07-28 `tools/call` of `tool` with `token`, able to be asked; its result.
fn call(url: &str, token: &str, tool: &str, arguments: Value, retry: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}});
    if let Value::Object(retry) = retry {
        params.as_object_mut().unwrap().extend(retry);
    }
    post_as(url, token, "tools/call", params)
}

const ALICE: &str = "alice-compose-token-0123456789";
const CI: &str = "ci-compose-token-0123456789ab";
const READER: &str = "reader-compose-token-012345678";
const WRITER: &str = "writer-compose-token-012345678";

#[test]
fn the_compose_files_replicas_serve_as_written() {
    let Some(pg) = Postgres::start() else { return };
    let compose = compose();
    let kyros = replicas(&compose);
    assert!(kyros.len() >= 2, "compose.yaml runs two replicas or more");
    let services: Vec<&str> = compose
        .get("services")
        .unwrap()
        .entries()
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    // What deploy.md asks of replicas: the same command, environment (key and store) and files.
    for (name, service) in &kyros[1..] {
        for key in ["command", "environment", "volumes", "security_opt", "healthcheck"] {
            assert_eq!(
                service.get(key),
                kyros[0].1.get(key),
                "{name}'s {key} differs from the first replica's"
            );
        }
    }
    let (secrets, volumes) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let tokens = secrets.path().join("tokens");
    let vars = |name: &str| match name {
        "KYRO_STATE_KEY" => Some(super::replicas::STATE_KEY.to_owned()),
        "KYRO_TOKEN_FILE" => Some(tokens.display().to_string()),
        "POSTGRES_PASSWORD" => Some("not-used-here".to_owned()),
        _ => None,
    };
    let configs: Vec<Service> = kyros
        .iter()
        .map(|(name, service)| Service::read(name, service, &vars, volumes.path()))
        .collect();
    // The test's token file, where the compose file mounts the operator's; the policies
    // it names are the compose file's, found where its mounts put them.
    let mounts = &configs[0].mounts;
    let beside = mounts
        .iter()
        .find(|(_, source)| *source == tokens)
        .map(|(target, _)| Path::new(target).parent().unwrap().to_owned())
        .expect("compose.yaml mounts $KYRO_TOKEN_FILE");
    let policy = |file: &str| host_path(&beside.join(file).display().to_string(), mounts);
    std::fs::write(
        &tokens,
        format!(
            "alice {ALICE}\nci {CI} {}\nreader {READER} {}\nwriter {WRITER} {}\n",
            policy("ci.toml"),
            policy("read.toml"),
            policy("write.toml")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let words = &configs[0].args;
    let workspace = words
        .iter()
        .position(|w| w == "--workspace")
        .map(|i| PathBuf::from(&words[i + 1]))
        .unwrap_or_else(|| PathBuf::from(host_path("/workspace", mounts)));
    std::fs::write(workspace.join("a.txt"), "one|two\r\n").unwrap();
    let running: Vec<Replica> = kyros
        .iter()
        .zip(&configs)
        .map(|((name, _), config)| config.start(name, &pg.url, &services))
        .collect();
    let allowed = words
        .iter()
        .position(|w| w == "--allow-host")
        .map(|i| words[i + 1].clone());
    // Here each replica serves loopback; in its container, an address kyro serves only with
    // the names clients use.
    let address = &configs[0].address;
    assert!(
        allowed.is_some() || address.starts_with("127.") || address.starts_with("localhost:"),
        "compose.yaml serves {address} without --allow-host: kyro refuses to start"
    );
    for replica in &running {
        ready(replica);
        let (status, body) = request(&replica.url, "GET", "/healthz", "localhost", &[], "");
        assert_eq!((status, body.trim()), (200, "ok"), "{}", replica.name);
        assert!(
            healthy(&replica.name, &replica.healthcheck),
            "{}'s healthcheck fails on a ready replica",
            replica.name
        );
        let read = call(&replica.url, ALICE, "read_file", json!({"path": "a.txt"}), Value::Null);
        assert_eq!(
            read["structuredContent"]["content"], "one|two\r\n",
            "{}: {read}",
            replica.name
        );
        // The name agents use (as nginx passes it) is admitted; another is refused.
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"compose","version":"1"}}}"#;
        let bearer = format!("Bearer {ALICE}");
        let headers = [
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if let Some(host) = &allowed {
            let (status, _) = request(&replica.url, "POST", "/mcp", host, &headers, init);
            assert_eq!(status, 200, "{}: Host {host}", replica.name);
        }
        let (status, _) = request(&replica.url, "POST", "/mcp", "elsewhere.example", &headers, init);
        assert_eq!(status, 403, "{}: a Host not allowed", replica.name);
    }
    let (one, two) = (&running[0], &running[1]);
    // One store and one key: a write asked on one replica is approved on the other, once.
    let write = json!({"path": "b.txt", "content": "b"});
    let asked = call(&one.url, ALICE, "write_file", write.clone(), Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let yes = json!({"inputResponses": {"approval": {"action": "accept", "content": {"approve": true, "remember": "once"}}},
        "requestState": asked["requestState"]});
    let ran = call(&two.url, ALICE, "write_file", write, yes);
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(read(&workspace.join("b.txt")), "b");
    // The token file's callers are held to the policies the compose file mounts.
    let refused = call(
        &one.url,
        READER,
        "write_file",
        json!({"path": "c.txt", "content": "c"}),
        Value::Null,
    );
    assert_eq!(refused["isError"], true, "read.toml lets a reader write: {refused}");
    let wrote = call(
        &two.url,
        WRITER,
        "write_file",
        json!({"path": "d.txt", "content": "d"}),
        Value::Null,
    );
    assert_eq!(wrote["isError"], false, "write.toml asks a writer: {wrote}");
    let fetch = json!({"url": "http://127.0.0.1:9/"});
    let closed = call(&one.url, CI, "web_fetch", fetch.clone(), Value::Null);
    assert_eq!(closed["isError"], true, "ci.toml opens the network: {closed}");
    let asked = call(&one.url, ALICE, "web_fetch", fetch, Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(!workspace.join("c.txt").exists());
    assert_eq!(read(&workspace.join("d.txt")), "d");
    // Their receipts are the database's: alice's reads through every replica.
    let (listed, receipts) = super::replicas::kyro(
        &["receipts", "--json", "--caller", "alice", "--tool", "read_file"],
        &pg.url,
    );
    assert!(listed, "{receipts}");
    assert_eq!(
        receipts.lines().count(),
        running.len(),
        "alice's reads in PostgreSQL:\n{receipts}"
    );
    if configs[0].args.iter().any(|a| a == "--log-json") {
        let logged = one.stderr.lock().unwrap().clone();
        let alice_read = logged
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| l["caller"] == "alice" && l["tool"] == "read_file");
        assert!(alice_read, "--log-json: no line of alice's read_file:\n{logged}");
    }
    // The healthcheck tells a stopped replica.
    let (name, healthcheck) = (two.name.clone(), two.healthcheck.clone());
    drop(running);
    assert!(
        !healthy(&name, &healthcheck),
        "{name}'s healthcheck passes with the replica stopped"
    );
}
