//! A real PostgreSQL server for a test: `initdb` into a temporary directory, `pg_ctl start`
//! on a free loopback port, stopped when dropped (and, should the test process die, by a
//! watcher that outlives it by half a second at most). Run as the `postgres` user when the
//! tests run as root, as PostgreSQL refuses root.
//!
//! Without PostgreSQL's programs the test is skipped with a message, unless
//! `KYRO_REQUIRE_POSTGRES=1` (CI sets it) makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// `Some("postgres")` when commands run as that user.
    user: Option<&'static str>,
    pub url: String,
    /// `pg_ctl start -o` options.
    options: String,
    /// Stops the server should this process die first; killed when the server is dropped.
    watcher: Option<std::process::Child>,
}

/// Where `initdb` and `pg_ctl` are: `pg_config --bindir`, Debian's versioned directories,
/// or the PATH.
fn bindir() -> Option<PathBuf> {
    let configured = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let debian = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|versions| {
        let mut dirs: Vec<PathBuf> = versions.flatten().map(|v| v.path().join("bin")).collect();
        dirs.sort();
        dirs.pop()
    });
    let path =
        std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).find(|dir| dir.join("initdb").exists()));
    [configured, debian, path]
        .into_iter()
        .flatten()
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Postgres {
    /// A fresh server, or `None` (the test skipped) where PostgreSQL is not installed.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = bindir() else {
            assert!(
                std::env::var("KYRO_REQUIRE_POSTGRES").is_err(),
                "KYRO_REQUIRE_POSTGRES is set and PostgreSQL's initdb and pg_ctl are not installed"
            );
            eprintln!(
                "skipped: PostgreSQL (initdb, pg_ctl) is not installed; set KYRO_REQUIRE_POSTGRES=1 to fail instead"
            );
            return None;
        };
        let dir = tempfile::Builder::new().prefix("kyro-pg").tempdir().unwrap();
        let user = is_root().then_some("postgres");
        if let Some(user) = user {
            let chowned = Command::new("chown")
                .arg("-R")
                .arg(user)
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(chowned.success(), "chown {user} {}", dir.path().display());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let data = dir.path().join("data");
        let mut server = Postgres {
            url: format!("postgres://kyro@127.0.0.1:{port}/postgres"),
            dir,
            bin,
            user,
            options: String::new(),
            watcher: None,
        };
        server.run(
            "initdb",
            &[
                "-D",
                path(&data),
                "-U",
                "kyro",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            path(server.dir.path())
        );
        server.options = options;
        server.resume();
        // Should this process die without dropping the server, it goes too.
        let watcher = format!(
            "while [ -d /proc/{} ]; do sleep 0.5; done; exec {} -D {} stop -m immediate",
            std::process::id(),
            path(&server.bin.join("pg_ctl")),
            path(&data),
        );
        server.watcher = server
            .command("sh")
            .args(["-c", &watcher])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Some(server)
    }

    /// Stops the server (fast shutdown: connections are closed), as an outage would.
    pub fn pause(&self) {
        let data = self.dir.path().join("data");
        self.run("pg_ctl", &["-D", path(&data), "-w", "-m", "fast", "stop"]);
    }

    /// Starts the server (again), on the same port and data.
    pub fn resume(&self) {
        let (data, log) = (self.dir.path().join("data"), self.dir.path().join("log"));
        let args = [
            "-D",
            path(&data),
            "-o",
            &self.options,
            "-l",
            path(&log),
            "-w",
            "-t",
            "60",
            "start",
        ];
        self.run("pg_ctl", &args);
    }

    fn command(&self, program: &str) -> Command {
        let program = if program == "sh" {
            PathBuf::from("sh")
        } else {
            self.bin.join(program)
        };
        match self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }

    /// Runs `sql` with `psql` as the test's database user: what it printed, unaligned.
    pub fn sql(&self, sql: &str) -> String {
        let port = self.url.rsplit(':').next().unwrap().split('/').next().unwrap();
        let out = self
            .command("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                port,
                "-U",
                "kyro",
                "-d",
                "postgres",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self.command(program).args(args).stdin(Stdio::null()).output().unwrap();
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}\n{log}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self
            .command("pg_ctl")
            .args(["-D", path(&data), "stop", "-m", "immediate"])
            .stdin(Stdio::null())
            .output();
        if let Some(mut watcher) = self.watcher.take() {
            let _ = watcher.kill();
            let _ = watcher.wait();
        }
    }
}
