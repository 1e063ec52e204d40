//! `--state` on a PostgreSQL that takes TLS connections only (`Postgres::start_tls`: its
//! own CA, `hostssl` lines): libpq's `sslmode` and `sslrootcert` in the URL, a replica
//! serving and recording over a verified session, and every refusal (plaintext, a
//! certificate of another CA, a certificate for another host) said at start, before
//! anything is served.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::postgres::{Postgres, make_ca};
use super::replicas::{kyro, replica, tool_call};
use super::{TOKEN, workspace};

/// The server's URL with `sslmode` and, when given, `sslrootcert`.
fn with_tls(pg: &Postgres, mode: &str, root: Option<&Path>) -> String {
    let mut url = format!("{}?sslmode={mode}", pg.url);
    if let Some(root) = root {
        url.push_str(&format!("&sslrootcert={}", root.display()));
    }
    url
}

/// The same server under a name its certificate does not hold, reached at 127.0.0.1.
fn under_another_name(pg: &Postgres, mode: &str, root: &Path) -> String {
    let port = pg.url.rsplit(':').next().unwrap().split('/').next().unwrap();
    format!(
        "postgres://kyro@pg.invalid:{port}/postgres?hostaddr=127.0.0.1&sslmode={mode}&sslrootcert={}",
        root.display()
    )
}

/// `kyro mcp --http` on `url`, which must stop before serving: its stderr.
fn refused_at_start(ws: &Path, url: &str) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kyro"));
    command
        .env_remove("KYRO_STATE")
        .env("KYRO_HTTP_TOKEN", TOKEN)
        .args(["mcp", "--http", "127.0.0.1:0", "--state", url, "--workspace"])
        .arg(ws);
    refused_before_serving(command)
}

/// `command` (a `kyro mcp --http`), which must exit unsuccessfully before it serves: its
/// stderr. Bounded: a server that serves after all (or neither serves nor stops in 30 s)
/// is killed and the test fails.
pub(super) fn refused_before_serving(mut command: Command) -> String {
    let url = format!("{:?}", command.get_args().collect::<Vec<_>>());
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, said) = std::sync::mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stderr = String::new();
    loop {
        match said.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains("serving MCP on") => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("kyro {url} serves: {stderr}{line}");
            }
            Ok(line) => stderr.push_str(&format!("{line}\n")),
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("kyro {url} neither serves nor stops after 30 s: {stderr}");
            }
        }
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "{url}: {stderr}");
    stderr
}

#[test]
fn a_replica_on_verified_tls_serves_and_records_in_postgres() {
    let Some(pg) = Postgres::start_tls() else { return };
    let ca = pg.ca.clone().unwrap();
    let ws = workspace();
    let url = with_tls(&pg, "verify-full", Some(&ca));
    let server = replica(ws.path(), &url, &[], Some(TOKEN));
    let answered = tool_call(&server.url, "calculate", json!({"expression": "6*7"})).unwrap();
    assert_eq!(answered["isError"], false, "{answered}");
    // The receipt is in the store, read back over TLS by the command line.
    let (ok, listed) = kyro(&["receipts", "--json"], &url);
    assert!(ok, "{listed}");
    let receipt: Value = serde_json::from_str(listed.trim()).unwrap();
    assert_eq!(
        (receipt["tool"].as_str(), receipt["caller"].as_str()),
        (Some("calculate"), Some("http"))
    );
    assert_eq!(pg.sql("SELECT count(*) FROM kyro_receipts"), "1");
    // A grant given over `require` (encrypted, the certificate not checked) is one the
    // replica honours: a write it would otherwise ask about runs.
    let require = with_tls(&pg, "require", None);
    let (ok, added) = kyro(
        &["grants", "add", "write_file", "--caller", "http", "--for", "1h"],
        &require,
    );
    assert!(ok, "{added}");
    let wrote = tool_call(
        &server.url,
        "write_file",
        json!({"path": "granted.txt", "content": "x"}),
    )
    .unwrap();
    assert_eq!(wrote["isError"], false, "{wrote}");
    assert!(ws.path().join("granted.txt").exists());
    // `verify-ca` checks the chain and not the name: the server is reached under another.
    let (ok, listed) = kyro(
        &["grants", "list", "--json"],
        &under_another_name(&pg, "verify-ca", &ca),
    );
    assert!(ok, "{listed}");
    assert!(listed.contains("write_file"), "{listed}");
    // Every session the server has is a TLS one (a plaintext one would have found no line).
    let plaintext = pg.sql("SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.client_addr IS NOT NULL AND NOT s.ssl");
    assert_eq!(plaintext, "0");
}

#[test]
fn plaintext_another_ca_and_another_host_name_are_refused_at_start() {
    let Some(pg) = Postgres::start_tls() else { return };
    let ca = pg.ca.clone().unwrap();
    let ws = workspace();
    // Plaintext, by default on loopback or by `disable`: the server finds no line for it.
    for url in [pg.url.clone(), with_tls(&pg, "disable", None)] {
        let said = refused_at_start(ws.path(), &url);
        assert!(
            said.contains("no pg_hba.conf entry") && said.contains("no encryption"),
            "{url}: {said}"
        );
    }
    // A CA the server's certificate does not chain to: the test's second CA, and the
    // public roots of `system`.
    let other = tempfile::tempdir().unwrap();
    let other_ca = make_ca(other.path(), "other");
    let said = refused_at_start(ws.path(), &with_tls(&pg, "verify-full", Some(&other_ca)));
    assert!(
        said.contains("the server's certificate does not verify (sslmode=verify-full)")
            && said.contains(&format!("not signed by a CA of sslrootcert `{}`", other_ca.display())),
        "{said}"
    );
    let said = refused_at_start(ws.path(), &format!("{}?sslrootcert=system", pg.url));
    assert!(said.contains("not signed by a CA of sslrootcert system"), "{said}");
    // The right CA, a host name the certificate does not hold.
    let said = refused_at_start(ws.path(), &under_another_name(&pg, "verify-full", &ca));
    assert!(
        said.contains("does not verify (sslmode=verify-full): it is not valid for the host `pg.invalid`"),
        "{said}"
    );
    // A CA file that is not there: refused before any connection.
    let said = refused_at_start(
        ws.path(),
        &with_tls(&pg, "verify-full", Some(&other.path().join("none.pem"))),
    );
    assert!(said.contains("none.pem`: cannot be read"), "{said}");
    // Nothing reached the store: no table was made.
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'kyro%'"),
        "0"
    );
}

#[test]
fn a_server_without_tls_is_refused_under_require_not_spoken_to_in_plaintext() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let said = refused_at_start(ws.path(), &with_tls(&pg, "require", None));
    assert!(
        said.contains("error performing TLS handshake: server does not support TLS"),
        "{said}"
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'kyro%'"),
        "0"
    );
}
