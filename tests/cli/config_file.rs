//! What an operator runs: `kyro mcp --config FILE` (the command line wins over it, a key
//! that is no flag or a value of the wrong type refused by name), `--help` naming the
//! environment, a read of kyro's state that makes none, a warning for a token file others
//! can read, and a bounded start-up line on the tools a policy makes unusable.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{kyro, stdout_json};

const TOKEN: &str = "a-token-of-the-config-file";

/// `kyro mcp ARGS` over HTTP, killed on drop, with what it said before serving.
struct Serving {
    child: Child,
    address: String,
    said: String,
}

impl Serving {
    /// Starts `kyro mcp` and waits for its address; `None` (with what it said) when it
    /// exits first.
    fn start(args: &[&str], cwd: &Path) -> Result<Serving, String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kyro"))
            .arg("mcp")
            .args(args)
            .current_dir(cwd)
            .env_remove("KYRO_HTTP_TOKEN")
            .env_remove("KYRO_STATE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kyro mcp starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap() > 0 {
            said.push_str(&line);
            if line.contains("serving MCP on") {
                let address = line.trim().rsplit(' ').next().unwrap().trim_start_matches("http://");
                let address = address.split('/').next().unwrap().to_owned();
                return Ok(Serving { child, address, said });
            }
            line.clear();
        }
        let _ = child.wait();
        Err(said)
    }

    /// The status of an `initialize` POSTed to `/mcp`, with this bearer token or none.
    fn initialize(&self, token: Option<&str>) -> u16 {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let mut stream = std::net::TcpStream::connect(&self.address).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .unwrap();
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head[9..12]).parse().unwrap()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token file of one caller, with this mode.
fn token_file(dir: &Path, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join(format!("tokens-{mode:o}"));
    std::fs::write(&file, format!("alice {TOKEN}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    file
}

/// `kyro mcp --config FILE` with `text` as the file, refused: its exit status and stderr.
fn refused(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kyro.toml");
    std::fs::write(&config, text).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
        .args(["mcp", "--workspace"])
        .arg(&ws)
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!ws.join(".kyro").exists(), "nothing runs before the file is read whole");
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn a_config_file_serves_http_with_its_token_file_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = token_file(dir.path(), 0o600);
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let config = dir.path().join("kyro.toml");
    let write_config = |http: &str| {
        std::fs::write(
            &config,
            format!(
                "http = \"{http}\"\ntoken-file = {:?}\nworkspace = {:?}\nallow-origin = [\"https://a.example\", \"https://b.example\"]\nlog-json = false\n",
                tokens.display().to_string(),
                ws.display().to_string()
            ),
        )
        .unwrap();
    };

    // The file alone: HTTP on its address, the token of its token file required.
    write_config("127.0.0.1:0");
    let served =
        Serving::start(&["--config", config.to_str().unwrap()], dir.path()).unwrap_or_else(|said| panic!("{said}"));
    assert_eq!(served.initialize(None), 401, "the file's token file is in force");
    assert_eq!(served.initialize(Some(TOKEN)), 200);
    assert!(ws.join(".kyro").is_dir(), "the file's workspace is served");
    drop(served);

    // The file names an address in use; --http on the command line wins, and is served.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    write_config(&busy.local_addr().unwrap().to_string());
    let in_use = Serving::start(&["--config", config.to_str().unwrap()], dir.path());
    assert!(in_use.is_err(), "the file's address is taken, so this one cannot serve");
    let served = Serving::start(
        &["--config", config.to_str().unwrap(), "--http", "127.0.0.1:0"],
        dir.path(),
    )
    .unwrap_or_else(|said| panic!("the command line's --http did not win: {said}"));
    assert_ne!(served.address, busy.local_addr().unwrap().to_string());
    assert_eq!(served.initialize(Some(TOKEN)), 200);
    drop(served);

    // A flag on the command line that contradicts the file's (--no-auth against its
    // token-file) wins too: the file's token file is left out, not refused.
    write_config("127.0.0.1:0");
    let open = Serving::start(&["--config", config.to_str().unwrap(), "--no-auth"], dir.path())
        .unwrap_or_else(|said| panic!("{said}"));
    assert_eq!(open.initialize(None), 200, "--no-auth on the command line is in force");
}

#[test]
fn a_key_that_is_no_flag_or_a_value_of_the_wrong_type_is_refused_by_name() {
    for (text, says) in [
        (
            "token_fil = \"/etc/kyro/tokens\"\n",
            "`token_fil` is not a flag of this server; did you mean `token-file`?",
        ),
        ("http = 5\n", "`http` takes a string, not an integer"),
        (
            "http = \"localhost\"\n",
            "`http = \"localhost\"`: invalid socket address syntax",
        ),
        ("read-only = \"yes\"\n", "`read-only` takes true or false, not a string"),
        (
            "allow-host = [\"a.example\", 7]\n",
            "`allow-host` takes an array of strings, not an integer",
        ),
        ("text = \"xml\"\n", "`text = \"xml\"`: expected one of readable, json"),
        ("toolsets = []\n", "`toolsets` is an empty array"),
        (
            "config = \"other.toml\"\n",
            "`config` cannot be set in the file it names",
        ),
        (
            "no-auth = true\ntoken-file = \"/t\"\n",
            "`no-auth` and `token-file` cannot be set together",
        ),
        ("http = \n", "TOML parse error at line 1"),
    ] {
        let (status, stderr) = refused(text);
        assert_eq!(status, Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains("--config `") && stderr.contains(says),
            "{text}: {stderr}"
        );
    }
}

#[test]
fn mcp_help_names_the_environment_an_operator_sets() {
    let ws = tempfile::tempdir().unwrap();
    let help = kyro(&["mcp", "--help"], ws.path());
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    for name in [
        "KYRO_STATE_KEY",
        "KYRO_STATE ",
        "KYRO_HTTP_TOKEN",
        "KYRO_STATE_HOME",
        "--config <FILE>",
    ] {
        assert!(help.contains(name), "{name} missing from kyro mcp --help:\n{help}");
    }
}

#[test]
fn reading_state_where_kyro_never_ran_says_so_and_makes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let state_home = home.path().join("state");
    let folder = tempfile::tempdir().unwrap();
    let run = |args: &[&str], cwd: &Path| {
        Command::new(env!("CARGO_BIN_EXE_kyro"))
            .args(args)
            .current_dir(cwd)
            .env_remove("KYRO_STATE")
            .env("KYRO_STATE_HOME", &state_home)
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    for args in [
        &["grants"][..],
        &["grants", "list"],
        &["grants", "list", "--json"],
        &["grants", "revoke", "1"],
        &["approvals"],
        &["approvals", "list", "--all"],
        &["approvals", "show", "x"],
        &["approvals", "approve", "x"],
        &["receipts"],
        &["receipts", "verify"],
    ] {
        let out = run(args, folder.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no kyro state here: `") && stderr.contains("--workspace DIR or --state URL"),
            "{args:?}: {stderr}"
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(
            std::fs::read_dir(folder.path()).unwrap().count(),
            0,
            "{args:?} made state in the folder"
        );
        assert!(!state_home.exists(), "{args:?} made the state home");
    }

    // A workspace kyro served, which holds no grant yet: an empty answer, nothing made.
    std::fs::create_dir(folder.path().join(".kyro")).unwrap();
    let listed = run(&["grants", "list"], folder.path());
    assert_eq!(listed.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "no grants in force\n");
    let queue = run(&["approvals", "list", "--json"], folder.path());
    assert_eq!(stdout_json(&queue), serde_json::json!([]));
    let receipts = run(&["receipts"], folder.path());
    assert_eq!((receipts.status.code(), receipts.stdout.len()), (Some(0), 0));
    assert!(!state_home.exists(), "a read made the state home");
    assert_eq!(std::fs::read_dir(folder.path().join(".kyro")).unwrap().count(), 0);

    // A grant given makes the store, and the list then reads it.
    let granted = run(&["grants", "add", "write_file", "--for", "1h"], folder.path());
    assert!(granted.status.success(), "{}", String::from_utf8_lossy(&granted.stderr));
    let listed = run(&["grants", "list"], folder.path());
    assert!(String::from_utf8_lossy(&listed.stdout).contains("local  write_file"));
}

#[test]
fn a_token_file_others_can_read_is_warned_about_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let start = |tokens: &Path| {
        let args = [
            "--http",
            "127.0.0.1:0",
            "--workspace",
            ws.to_str().unwrap(),
            "--token-file",
            tokens.to_str().unwrap(),
        ];
        let served = Serving::start(&args, dir.path()).unwrap_or_else(|said| panic!("{said}"));
        served.said.clone()
    };
    let open = token_file(dir.path(), 0o644);
    let said = start(&open);
    let warning = format!(
        "warning: the token file {} is mode 0644: users other than its owner may read or change its tokens; `chmod 600 {}`",
        open.display(),
        open.display()
    );
    assert!(said.contains(&warning), "{said}");
    let group = token_file(dir.path(), 0o640);
    assert!(start(&group).contains("is mode 0640"), "a group may read it too");
    let private = token_file(dir.path(), 0o600);
    let said = start(&private);
    assert!(!said.contains("warning"), "{said}");
}

#[test]
fn the_start_counts_the_tools_a_narrow_policy_makes_unusable_in_one_short_line() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("narrow.toml");
    std::fs::write(&policy, "capabilities = [\"fs.read\"]\n").unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let started = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
            .args([
                "mcp",
                "--workspace",
                ws.to_str().unwrap(),
                "--policy",
                policy.to_str().unwrap(),
            ])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        stderr
            .lines()
            .find(|l| l.contains("served tools unusable"))
            .unwrap_or_else(|| panic!("no line on unusable tools: {stderr}"))
            .to_owned()
    };
    // Every tool served: a count a capability, three names, where the whole list is.
    let all = started(&[]);
    assert!(all.len() < 500, "{} bytes: {all}", all.len());
    assert!(
        all.contains(" need `network`") && all.contains("`kyro tools --json`"),
        "{all}"
    );
    assert!(
        !all.contains("(needs `"),
        "no tool named with its needs past three: {all}"
    );

    // Only the toolsets served are counted: files' tools that need more than `fs.read`.
    let tools = stdout_json(&kyro(&["tools", "--json"], dir.path()));
    let files_unusable = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["category"] == "files")
        .filter(|t| t["capabilities"].as_array().unwrap().iter().any(|c| c != "fs.read"))
        .count();
    assert!(files_unusable > 3);
    let files = started(&["--toolsets", "files"]);
    assert!(
        files.contains(&format!("makes {files_unusable} served tools unusable")) && !files.contains("`network`"),
        "{files}"
    );
}

#[test]
fn the_config_file_deploy_md_shows_is_taken_key_by_key() {
    // deploy.md shows this file whole (tests/mcp_client/deploy_files.rs holds that).
    let text = &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deploy/kyro.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kyro.toml");
    let started = |text: &str, flags: &[&str]| {
        std::fs::write(&config, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
            .args(["mcp", "--config", config.to_str().unwrap(), "--http", "127.0.0.1:0"])
            .args(flags)
            .env_remove("KYRO_STATE")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    // Every key is a flag and every value fits it: the server goes on to read the policy
    // the file names, which this machine does not have.
    let (status, stderr) = started(text, &[]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        !stderr.contains("--config `") && stderr.contains("policy: `/etc/kyro/policy.toml`"),
        "{stderr}"
    );
    // A flag on the command line whose companion is in the file (`--issuer` needs
    // `audience`): the two are one command line.
    let without_issuer: String = text
        .lines()
        .filter(|l| !l.starts_with("issuer"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (status, stderr) = started(&without_issuer, &["--issuer", "https://id.example.com"]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("policy: `/etc/kyro/policy.toml`"), "{stderr}");
}
