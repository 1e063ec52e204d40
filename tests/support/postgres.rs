//! A real PostgreSQL server for a test: `initdb` into a temporary directory, `pg_ctl start`
//! on a free loopback port, stopped when dropped (and, should the test process die, by a
//! watcher that outlives it by half a second at most). Run as the `postgres` user when the
//! tests run as root, as PostgreSQL refuses root.
//!
//! With [`Postgres::start_tls`] the server speaks TLS only (`ssl=on`, `hostssl` lines in
//! `pg_hba.conf`, so a plaintext connection is refused), its certificate for `localhost`
//! and 127.0.0.1 signed by a CA the test makes with the `openssl` program.
//!
//! Without PostgreSQL's programs (or, for TLS, `openssl`) the test is skipped with a
//! message, unless `KYRO_REQUIRE_POSTGRES=1` (CI sets it) makes that a failure.

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
    /// With TLS: the CA that signed the server's certificate (PEM), for `sslrootcert`.
    pub ca: Option<PathBuf>,
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

/// Whether the test can go on without `what`: not when `KYRO_REQUIRE_POSTGRES` is set.
fn missing(what: &str) -> Option<Postgres> {
    assert!(
        std::env::var("KYRO_REQUIRE_POSTGRES").is_err(),
        "KYRO_REQUIRE_POSTGRES is set and {what} is not installed"
    );
    eprintln!("skipped: {what} is not installed; set KYRO_REQUIRE_POSTGRES=1 to fail instead");
    None
}

/// Whether the `openssl` program runs here.
fn has_openssl() -> bool {
    Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs `openssl` with `args` in `dir`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA of the test's own, `NAME.pem` and `NAME.key` in `dir` (a P-256 key, a day long):
/// its certificate's path.
pub fn make_ca(dir: &Path, name: &str) -> PathBuf {
    let (cert, key) = (format!("{name}.pem"), format!("{name}.key"));
    let subject = format!("/CN=kyro test CA {name}");
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &cert,
            "-days",
            "1",
            "-subj",
            &subject,
        ],
    );
    dir.join(cert)
}

/// `server.pem` and `server.key` in `dir`: a server certificate for `localhost` and
/// 127.0.0.1, signed by the CA `ca` made by [`make_ca`] in `dir`; the key readable by its
/// owner alone, as PostgreSQL requires.
fn make_server_certificate(dir: &Path, ca: &str) {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    let (ca_cert, ca_key) = (format!("{ca}.pem"), format!("{ca}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &ca_cert,
            "-CAkey",
            &ca_key,
            "-set_serial",
            "2",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
}

impl Postgres {
    /// A fresh server, or `None` (the test skipped) where PostgreSQL is not installed.
    pub fn start() -> Option<Postgres> {
        Postgres::start_with(false)
    }

    /// A fresh server that takes TLS connections only, its CA in [`Postgres::ca`]; or
    /// `None` (the test skipped) where PostgreSQL or `openssl` is not installed.
    pub fn start_tls() -> Option<Postgres> {
        Postgres::start_with(true)
    }

    fn start_with(tls: bool) -> Option<Postgres> {
        let Some(bin) = bindir() else {
            return missing("PostgreSQL (initdb, pg_ctl)");
        };
        if tls && !has_openssl() {
            return missing("openssl (to make the test's certificates)");
        }
        let dir = tempfile::Builder::new().prefix("kyro-pg").tempdir().unwrap();
        let ca = tls.then(|| {
            let ca = make_ca(dir.path(), "ca");
            make_server_certificate(dir.path(), "ca");
            ca
        });
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
            ca,
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
        let mut options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
            path(server.dir.path())
        );
        if tls {
            let (cert, key) = (
                server.dir.path().join("server.pem"),
                server.dir.path().join("server.key"),
            );
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                path(&cert),
                path(&key)
            ));
            // TCP only with TLS: a plaintext connection finds no line and is refused.
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
            )
            .unwrap();
        }
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
