//! Spawning a program safely: argv (or `sh -c` when asked), the confined working directory,
//! a filtered environment, its own process group, and a group kill that cannot be forgotten.

use crate::Failure;
use std::process::Stdio;

use kyro_core::{ToolContext, ToolError, WorkspacePath};

use crate::settings::{CommandRule, ShellSettings};
use kyro_core::policy::{ApprovalRule, MatchedRule};
use kyro_core::receipt::Denial;
use kyro_core::sandbox::{Sandbox, SandboxRequest};
use rustix::process::{Pid, Signal, kill_process_group};

/// Variables passed through from kyro's own environment, with the policy's
/// `[tools.shell] pass_env`; everything else (tokens, keys, credentials) stays out unless the
/// call names it in `env`.
const INHERITED: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "TERM",
];

/// An environment variable to set for the program.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// The variable's name.
    #[schemars(regex(pattern = "^[A-Za-z_][A-Za-z0-9_]{0,127}$"))]
    pub name: String,
    /// Its value.
    #[schemars(length(max = 32768))]
    pub value: String,
}

/// What to run.
pub(crate) struct Spawn<'a> {
    pub argv: &'a [String],
    pub shell: bool,
    pub cwd: Option<&'a WorkspacePath>,
    pub env: &'a [EnvVar],
}

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

/// Starts the program with piped stdio in a new process group, owned by threads rather
/// than by any async runtime (background processes outlive the call that started them).
pub(crate) fn spawn_detached(cx: &ToolContext, what: &Spawn) -> Result<(std::process::Child, GroupGuard), ToolError> {
    let (mut command, program, sandbox) = command(cx, what)?;
    let child = command.spawn().map_err(|e| spawn_error(&program, &e))?;
    let pgid = Pid::from_raw(child.id() as i32);
    Ok((child, GroupGuard { pgid, sandbox }))
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
    use std::os::unix::process::CommandExt;
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
    let mut command = std::process::Command::new(program);
    command
        .args(&args)
        .current_dir(cwd.host_content_path())
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let shell = cx.scope().settings::<ShellSettings>()?;
    let passed = shell.pass_env.iter().map(|name| name.as_str());
    for name in INHERITED.iter().copied().chain(passed) {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(what.env.iter().map(|v| (&v.name, &v.value)));
    let sandbox = sandbox(cx, &shell, what)?;
    if let Some(temp) = sandbox.temp_dir() {
        command.env("TMPDIR", temp);
    }
    super::contain::contain(&mut command, &sandbox);
    Ok((command, program.to_owned(), sandbox))
}

/// The policy's sandbox for this command, widened by the rule that matches it.
fn sandbox(cx: &ToolContext, shell: &ShellSettings, what: &Spawn) -> Result<Sandbox, ToolError> {
    let mut request = SandboxRequest::for_scope(cx.scope());
    if let Some(rule) = matching_rule(shell, what) {
        request.network |= rule.network;
        request.mode = request.mode.max(rule.sandbox.unwrap_or(request.mode));
    }
    Sandbox::prepare(&request).map_err(|e| ToolError::Denied {
        reason: Denial::SandboxUnavailable { message: e.0 },
    })
}

/// The `[[tools.shell.rules]]` rule for this command: the longest matching argv prefix (on
/// a tie, the strictest decision). A shell script matches none (its words are not an
/// argv), nor does a call that sets a variable changing which code runs.
pub(crate) fn matching_rule<'a>(shell: &'a ShellSettings, what: &Spawn) -> Option<&'a CommandRule> {
    if what.shell || what.env.iter().any(|v| changes_code(&v.name)) {
        return None;
    }
    let strictness = |rule: ApprovalRule| match rule {
        ApprovalRule::Auto => 0,
        ApprovalRule::Ask => 1,
        ApprovalRule::Deny => 2,
    };
    shell
        .rules
        .iter()
        .filter(|rule| what.argv.starts_with(&rule.argv_prefix))
        .max_by_key(|rule| (rule.argv_prefix.len(), strictness(rule.decision)))
}

/// The rule's decision as the runtime takes it, named for the receipt.
pub(crate) fn matched(cx_scope: &kyro_core::policy::Scope, what: &Spawn) -> Option<MatchedRule> {
    let shell = cx_scope.settings::<ShellSettings>().ok()?;
    let rule = matching_rule(&shell, what)?;
    Some(MatchedRule {
        decision: rule.decision,
        rule: format!(
            "[tools.shell] rule argv_prefix {}",
            serde_json::to_string(&rule.argv_prefix).unwrap_or_default()
        ),
    })
}

fn changes_code(name: &str) -> bool {
    CODE_CHANGING_ENV.contains(&name) || name.starts_with("LD_") || name.starts_with("DYLD_")
}

/// Environment variables that change which code a program runs, or how its shell reads
/// the script: flagged to the person approving a command.
const CODE_CHANGING_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "PATH",
    "BASH_ENV",
    "ENV",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_CONFIG_PARAMETERS",
    "RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
];

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
    if !what.shell && !what.env.iter().any(|v| changes_code(&v.name)) {
        let prefix = &what.argv[..what.argv.len().min(2)];
        out.push_str(&format!(
            "\nto run commands starting so without asking, the policy can say:\n[[tools.shell.rules]]\nargv_prefix = {}\ndecision = \"auto\"",
            serde_json::to_string(prefix).unwrap_or_default()
        ));
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
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[… {} more bytes truncated]", self.dropped));
        }
        text
    }
}
