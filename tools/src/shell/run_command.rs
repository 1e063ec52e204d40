//! `run_command`: run a program to completion.

use kyro_core::policy::{MatchedRule, Scope, SettingsTable};
use std::time::{Duration, Instant};

use kyro_core::receipt::ObservedEffect;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::process::{Capped, EnvVar, Spawn, spawn};
use crate::settings::ShellSettings;

const DEFAULT_TIMEOUT_MS: u64 = 60_000;
const DEFAULT_MAX_OUTPUT: u64 = 1024 * 1024;

/// Run a program and wait: argv, or a `/bin/sh -c` script with `shell`.
/// Filtered environment; own process group, killed past `timeout_ms`; stdout and stderr capped at
/// `max_output_bytes` each.
#[tool(name = "run_command", title = "Run command", category = "shell", effect = "exec", aliases = ["bash", "exec"], task = "optional")]
pub struct RunCommand {
    /// Program and arguments (`["cargo", "test"]`); with `shell`, one script.
    #[schemars(length(min = 1, max = 256))]
    pub argv: Vec<String>,
    /// Run `argv[0]` as a `/bin/sh -c` script.
    #[serde(default)]
    pub shell: bool,
    /// Workspace-relative working directory; default the root.
    pub cwd: Option<WorkspacePath>,
    /// Extra environment variables (the rest is filtered).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub env: Vec<EnvVar>,
    /// Text for standard input.
    #[schemars(length(max = 1048576))]
    pub stdin: Option<String>,
    /// Time limit in ms; default 60000.
    #[schemars(range(min = 100, max = 600000))]
    pub timeout_ms: Option<u64>,
    /// Cap on stdout and on stderr each; default 1048576.
    #[schemars(range(min = 1, max = 8388608))]
    pub max_output_bytes: Option<u64>,
}

/// How a command ended.
#[kyro_core::output]
#[derive(Debug)]
pub struct CommandResult {
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when killed.
    pub signal: Option<i32>,
    /// True when the time limit killed it.
    pub timed_out: bool,
    /// Standard output (lossy UTF-8), capped.
    pub stdout: String,
    /// Standard error (lossy UTF-8), capped.
    pub stderr: String,
    /// True when stdout or stderr was cut.
    pub truncated: bool,
    /// Wall-clock time, in milliseconds.
    pub duration_ms: u64,
    /// The OS sandbox it ran under (a write or connection it refused failed with the
    /// kernel's error: `Permission denied`, `Read-only file system`).
    pub sandbox: String,
}

/// Reads `pipe` to its end into `capped` (which keeps what came if the read is cut off).
async fn drain(mut pipe: impl AsyncReadExt + Unpin, capped: &mut Capped, cap: usize) {
    let mut buffer = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        capped.push(&buffer[..n], cap);
    }
}

impl RunCommand {
    /// What to run, as the spawner and the approval preview both see it.
    fn what(&self) -> Spawn<'_> {
        Spawn {
            argv: &self.argv,
            shell: self.shell,
            cwd: self.cwd.as_ref(),
            env: &self.env,
            input: self.stdin.as_ref().is_some_and(|s| !s.is_empty()),
            tty: false,
        }
    }
}

impl Execute for RunCommand {
    type Output = CommandResult;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<ShellSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<CommandResult, ToolError> {
        use std::os::unix::process::ExitStatusExt;
        let started = Instant::now();
        let (mut child, mut guard) = spawn(cx, &self.what())?;
        let cap = self.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT) as usize;
        let mut stdin = child.stdin.take();
        let input = self.stdin.clone().unwrap_or_default();
        let feed = async move {
            if let Some(pipe) = stdin.as_mut() {
                let _ = pipe.write_all(input.as_bytes()).await;
            }
            drop(stdin);
        };
        let (stdout, stderr) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
        let (mut out, mut err) = (Capped::new(), Capped::new());
        let limit = Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let run = async {
            tokio::join!(feed, drain(stdout, &mut out, cap), drain(stderr, &mut err, cap));
            child.wait().await
        };
        // What the program printed before a time-out is kept: the drains write in place.
        let (timed_out, status) = match tokio::time::timeout(limit, run).await {
            Ok(status) => (false, status),
            Err(_) => {
                // Kill the whole group, then reap the child.
                guard.kill();
                (true, child.wait().await)
            }
        };
        if !timed_out {
            guard.disarm();
        }
        let status = status.map_err(|e| ToolError::io("wait for", &self.argv[0], &e))?;
        let sandbox = guard.sandbox();
        cx.effects().push(ObservedEffect::Process {
            argv: self.argv.clone(),
            exit_code: status.code(),
            sandbox: sandbox.clone(),
        });
        Ok(CommandResult {
            exit_code: status.code(),
            signal: status.signal(),
            timed_out,
            truncated: out.dropped > 0 || err.dropped > 0,
            stdout: out.text(),
            stderr: err.text(),
            duration_ms: started.elapsed().as_millis() as u64,
            sandbox,
        })
    }

    fn preview(&self, _cx: &ToolContext) -> Option<String> {
        Some(super::process::preview_command(&self.what()))
    }

    fn rule(&self, scope: &Scope) -> Option<MatchedRule> {
        super::rules::matched(scope, &self.what())
    }
}

#[cfg(test)]
mod tests {
    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, denied_path, failed, ok, process_with_arg_alive, workspace};

    #[test]
    fn runs_argv_without_a_shell_and_keeps_arguments_intact() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["printf", "%s|%s", "a b", "$HOME;é"]}),
        ));
        assert_eq!(
            (r["exit_code"].clone(), r["stdout"].clone()),
            (json!(0), json!("a b|$HOME;é"))
        );
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["sh", "-c", "echo err >&2; exit 3"]}),
        ));
        assert_eq!(
            (r["exit_code"].clone(), r["stderr"].clone()),
            (json!(3), json!("err\n"))
        );
    }

    #[test]
    fn a_shell_script_only_with_shell_true() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["echo one | tr o 0"], "shell": true}),
        ));
        assert_eq!(r["stdout"], "0ne\n");
        assert!(matches!(
            failed(call(ws.path(), "run_command", json!({"argv": ["echo one | tr o 0"]}))),
            ToolError::NotFound { .. }
        ));
    }

    #[test]
    fn stdin_cwd_and_a_filtered_environment() {
        let ws = workspace();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["cat"], "stdin": "fed | in"}),
        ));
        assert_eq!(r["stdout"], "fed | in");
        let r = ok(call(ws.path(), "run_command", json!({"argv": ["pwd"], "cwd": "sub"})));
        assert!(r["stdout"].as_str().unwrap().trim_end().ends_with("/sub"));
        // Cargo gives the test process variables of its own; none of them reach the child.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["env"], "env": [{"name": "MINE", "value": "1"}]}),
        ));
        let env = r["stdout"].as_str().unwrap();
        assert!(env.contains("MINE=1"));
        assert!(!env.contains("CARGO_MANIFEST_DIR"), "the environment is filtered");
        denied_path(call(ws.path(), "run_command", json!({"argv": ["pwd"], "cwd": ".."})));
    }

    #[test]
    fn a_timeout_kills_the_whole_group_and_keeps_the_output_so_far() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["echo before; sleep 30.11 & wait"], "shell": true, "timeout_ms": 1500}),
        ));
        assert_eq!(r["timed_out"], true);
        assert_eq!(r["signal"], 9);
        assert_eq!(r["stdout"], "before\n", "output printed before the limit is returned");
        assert!(
            !process_with_arg_alive("30.11"),
            "the grandchild was killed with its group"
        );
    }

    #[test]
    fn a_background_child_ends_with_its_command() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["sleep 30.12 >/dev/null 2>&1 & echo started"], "shell": true}),
        ));
        assert_eq!(r["stdout"], "started\n");
        assert!(
            !process_with_arg_alive("30.12"),
            "a background child outlived run_command"
        );
    }

    #[test]
    fn a_setsid_child_ends_with_its_command_even_after_a_time_out() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["setsid sleep 30.13 & sleep 30"], "shell": true, "timeout_ms": 500}),
        ));
        assert_eq!(r["timed_out"], true);
        assert!(
            !process_with_arg_alive("30.13"),
            "a setsid child escaped the time-out kill"
        );
    }

    #[test]
    fn a_grandchild_holding_stdout_does_not_turn_success_into_a_time_out() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["echo x; sleep 30.14 >&1 & exit 0"], "shell": true, "timeout_ms": 10000}),
        ));
        assert_eq!(
            (r["timed_out"].clone(), r["exit_code"].clone(), r["stdout"].clone()),
            (json!(false), json!(0), json!("x\n"))
        );
        assert!(!process_with_arg_alive("30.14"));
    }

    #[test]
    fn output_is_capped_with_a_marker() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["head", "-c", "5000", "/dev/zero"], "max_output_bytes": 100}),
        ));
        assert_eq!(r["truncated"], true);
        assert!(r["stdout"].as_str().unwrap().ends_with("[… 4900 more bytes truncated]"));
    }
}
