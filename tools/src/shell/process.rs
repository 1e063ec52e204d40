//! Spawning a program safely: argv (or `sh -c` when asked), the confined working directory,
//! a filtered environment, its own session and process group, and a group kill that cannot be forgotten.

pub(crate) use super::spawn::{EnvVar, Spawn};
use crate::Failure;
use std::process::Stdio;

use kyro_core::{ToolContext, ToolError, WorkspacePath};

use super::environment::changes_code;
use super::rules::{governing_rule, suggestion};
use crate::settings::{CommandRule, ShellSettings};
use kyro_core::receipt::Denial;
use kyro_core::sandbox::{Sandbox, SandboxRequest};
use rustix::process::{Pid, Signal, kill_process_group};

/// Variables passed through from kyro's own environment, with the policy's
/// `[tools.shell] pass_env`; everything else (tokens, keys, credentials) stays out unless the
/// call names it in `env`.
const INHERITED: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "TERM",
];

/// Kills the process group when dropped (time limit, cancellation, or the tool returning);
/// holds the program's sandbox (its temporary directory goes with it).
pub(crate) struct GroupGuard {
    pgid: Option<Pid>,
    sandbox: Sandbox,
}

impl GroupGuard {
    /// The sandbox the program runs under, as its receipt says it.
    pub fn sandbox(&self) -> String {
        self.sandbox.description().to_owned()
    }

    /// The group no longer needs killing (its leader exited and was reaped).
    pub fn disarm(&mut self) {
        self.pgid = None;
    }

    /// Kills the group now.
    pub fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts the program with piped stdio in a new process group, for awaiting.
pub(crate) fn spawn(cx: &ToolContext, what: &Spawn) -> Result<(tokio::process::Child, GroupGuard), ToolError> {
    let (command, program, sandbox) = command(cx, what)?;
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let child = command.spawn().map_err(|e| spawn_error(&program, &e))?;
    let pgid = child.id().and_then(|id| Pid::from_raw(id as i32));
    Ok((child, GroupGuard { pgid, sandbox }))
}

/// Starts the program with piped stdio (or, with `tty`, under a pseudo-terminal whose
/// controlling side is returned) in a new process group, owned by threads rather than by
/// any async runtime (background processes outlive the call that started them).
pub(crate) fn spawn_detached(
    cx: &ToolContext,
    what: &Spawn,
) -> Result<(std::process::Child, GroupGuard, Option<std::os::fd::OwnedFd>), ToolError> {
    let (mut command, program, sandbox) = command(cx, what)?;
    let pty = match what.tty {
        true => {
            let pty = super::pty::open().map_err(|e| ToolError::io("open a terminal for", &program, &e))?;
            super::pty::attach(&mut command, &pty.terminal)
                .map_err(|e| ToolError::io("open a terminal for", &program, &e))?;
            // Programs print fewer escape sequences to a terminal that says it has none.
            if !what.env.iter().any(|v| v.name == "TERM") {
                command.env("TERM", "dumb");
            }
            Some(pty)
        }
        false => None,
    };
    let child = spawn_held(command).map_err(|e| spawn_error(&program, &e))?;
    let pgid = Pid::from_raw(child.id() as i32);
    // The program holds its side now; kyro keeps only the controlling one.
    let controller = pty.map(|pty| pty.controller);
    Ok((child, GroupGuard { pgid, sandbox }, controller))
}

/// A command to spawn and where to send the child.
type SpawnRequest = (
    std::process::Command,
    std::sync::mpsc::SyncSender<std::io::Result<std::process::Child>>,
);

/// Spawns `command` from one thread that lives as long as kyro. The program's supervisor
/// dies with the thread that forked it (`PR_SET_PDEATHSIG`, see `contain`), and the
/// thread a call runs on is a pooled one that exits once idle for a while: a background
/// process forked there was killed about ten seconds after its call returned.
fn spawn_held(command: std::process::Command) -> std::io::Result<std::process::Child> {
    static SPAWNER: std::sync::Mutex<Option<std::sync::mpsc::Sender<SpawnRequest>>> = std::sync::Mutex::new(None);
    let spawner = {
        let mut slot = SPAWNER.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some(spawner) => spawner.clone(),
            // Made on first use, and again if making it failed before.
            None => {
                let (requests, received) = std::sync::mpsc::channel::<SpawnRequest>();
                std::thread::Builder::new().name("kyro-spawner".into()).spawn(move || {
                    for (mut command, answer) in received {
                        // A panic in one spawn must not end the thread, and with it
                        // (PDEATHSIG) every background process it started.
                        let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| command.spawn()))
                            .unwrap_or_else(|_| Err(std::io::Error::other("starting the program panicked")));
                        let _ = answer.send(spawned);
                    }
                })?;
                slot.insert(requests).clone()
            }
        }
    };
    let gone = || std::io::Error::other("kyro's spawner thread is gone");
    let (answer, child) = std::sync::mpsc::sync_channel(1);
    spawner.send((command, answer)).map_err(|_| gone())?;
    child.recv().map_err(|_| gone())?
}

fn spawn_error(program: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound {
            path: program.to_owned(),
        },
        _ => ToolError::io("run", program, e),
    }
}

fn command(cx: &ToolContext, what: &Spawn) -> Result<(std::process::Command, String, Sandbox), ToolError> {
    let (program, args): (&str, Vec<&str>) = if what.shell {
        let [script] = what.argv else {
            return Err(Failure::InvalidRequest {
                message: "with shell: true, argv must hold exactly one string: the script".into(),
            }
            .into());
        };
        ("/bin/sh", vec!["-c", script.as_str()])
    } else {
        let (first, rest) = what.argv.split_first().ok_or_else(|| Failure::InvalidRequest {
            message: "argv is empty".into(),
        })?;
        (first.as_str(), rest.iter().map(String::as_str).collect())
    };
    let cwd = cx.path(what.cwd.unwrap_or(&WorkspacePath::new(".")))?;
    if cwd.entry_type()? != Some(kyro_core::EntryType::Directory) {
        return Err(ToolError::NotADirectory {
            path: cwd.given().to_owned(),
        });
    }
    let resolved = program_path(program, what)?;
    let cwd = cwd.host_content_path();
    let mut command = std::process::Command::new(&resolved);
    command
        .args(&args)
        .current_dir(&cwd)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shell = cx.scope().settings::<ShellSettings>()?;
    let passed = shell.pass_env.iter().map(|name| name.as_str());
    for name in INHERITED.iter().copied().chain(passed) {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(what.env.iter().map(|v| (&v.name, &v.value)));
    // The program sees the name it was asked by, though kyro runs it by its absolute path.
    std::os::unix::process::CommandExt::arg0(&mut command, program);
    // A rule trusts the program it names, not what the tree's config names through it.
    let rule = governing_rule(&shell, what);
    if let (Some(_), Ok(git)) = (rule, program_path("git", what)) {
        super::tree_config::isolate_git(cx, what.argv, &git, &cwd, &mut command)?;
    }
    let sandbox = sandbox(cx, rule, what, &cwd, cargo_home(&shell).as_deref())?;
    if let Some(temp) = sandbox.temp_dir() {
        command.env("TMPDIR", temp);
    }
    #[cfg(target_os = "linux")]
    super::contain::contain(&mut command, &sandbox);
    // No PID namespace to make: the program leads a session of its own, unsandboxed (the
    // policy allowed that, or `prepare` refused).
    #[cfg(not(target_os = "linux"))]
    sandbox.apply(&mut command);
    Ok((command, program.to_owned(), sandbox))
}

/// The policy's sandbox for this command, widened by the rule that names it (never for a
/// `cargo` that reads config from the tree: refused instead).
fn sandbox(
    cx: &ToolContext,
    rule: Option<&CommandRule>,
    what: &Spawn,
    cwd: &std::path::Path,
    cargo_home: Option<&std::path::Path>,
) -> Result<Sandbox, ToolError> {
    let mut request = SandboxRequest::for_scope(cx.scope());
    // A rule widens the sandbox of a call it names, not of one it only holds back.
    if let Some(rule) = rule {
        let widens = super::tree_config::widens(rule, request.network, request.mode);
        super::tree_config::refuse_widening_for_cargo(rule, what.argv, widens, cwd, cargo_home)?;
        request.network |= rule.network;
        request.mode = request.mode.max(rule.sandbox.unwrap_or(request.mode));
    }
    Sandbox::prepare(&request).map_err(|e| ToolError::Denied {
        reason: Denial::SandboxUnavailable { message: e.0 },
    })
}

/// The cargo home a ruled program uses: kyro's `CARGO_HOME` when the policy passes it (a
/// call setting it is ruled by no rule), else `~/.cargo`.
fn cargo_home(shell: &ShellSettings) -> Option<std::path::PathBuf> {
    let passed = shell.pass_env.iter().any(|name| name.as_str() == "CARGO_HOME");
    passed
        .then(|| std::env::var_os("CARGO_HOME"))
        .flatten()
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".cargo")))
}

/// Where `program` is run from. A name with a `/` is a path (relative to the working
/// directory); a bare name is looked up in the absolute entries of the `PATH` the program
/// gets (the call's own, else kyro's) and nowhere else: a relative entry (`.`,
/// `node_modules/.bin`) would run whatever the workspace put there, so a program only
/// such an entry holds is not found.
fn program_path(program: &str, what: &Spawn) -> Result<std::path::PathBuf, ToolError> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Ok(std::path::PathBuf::from(program));
    }
    let path = what
        .env
        .iter()
        .rev()
        .find(|v| v.name == "PATH")
        .map(|v| std::ffi::OsString::from(&v.value))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute() && !program.is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| ToolError::NotFound {
            path: program.to_owned(),
        })
}

/// The command line a person approves: shell-quoted so it reads as it will run, the
/// working directory, and every variable set, those that change which code runs flagged.
pub(crate) fn preview_command(what: &Spawn) -> String {
    let quote = |arg: &str| {
        let plain = !arg.is_empty()
            && arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        if plain {
            arg.to_owned()
        } else {
            format!("'{}'", arg.replace('\'', "'\\''"))
        }
    };
    let mut out = String::from("$ ");
    if what.tty {
        out = String::from("(under a terminal, typed into afterwards) $ ");
    }
    if what.shell {
        out.push_str("/bin/sh -c ");
    }
    out.push_str(&what.argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "));
    out.push_str(&format!(
        "\nin {}",
        what.cwd.map_or("the workspace root".to_owned(), |c| format!("`{c}`"))
    ));
    for var in what.env {
        out.push_str(&format!("\nenv {}={}", var.name, quote(&var.value)));
        if changes_code(&var.name) {
            out.push_str(&format!("   ⚠ {} changes which code the program runs", var.name));
        }
    }
    if let Some(rule) = suggestion(what) {
        out.push_str("\nto run exactly this command (no argument more or less) without asking, the policy can say:\n");
        out.push_str(&rule);
    }
    out
}

/// Keeps the first `cap` bytes of a stream and counts the rest.
pub(crate) struct Capped {
    pub kept: Vec<u8>,
    pub dropped: u64,
}

impl Capped {
    pub fn new() -> Capped {
        Capped {
            kept: Vec::new(),
            dropped: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.kept.len());
        let take = room.min(bytes.len());
        self.kept.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }

    /// The text, with a marker when something was cut.
    pub fn text(&self) -> String {
        let mut text = visible(&String::from_utf8_lossy(&self.kept));
        if self.dropped > 0 {
            text.push_str(&format!("\n[… {} more bytes truncated]", self.dropped));
        }
        text
    }
}

/// Program output as text that shows on a terminal as itself and drives nothing: C0 and C1
/// control characters (ESC opening an escape sequence, BEL ending an OSC 52 clipboard
/// write, a lone CR overwriting the line) become visible pictures (`␛`, `␇`, `␍`, `␡`) or
/// `\u{9b}`; newlines, tabs and CR-LF line ends stay.
pub(crate) fn visible(text: &str) -> String {
    let kept = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(kept) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push(c),
            c if kept(c) => out.push(c),
            c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{FFFD}')),
            '\u{7f}' => out.push('\u{2421}'),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out
}
