//! `run_command`: run a program to completion.

use std::time::{Duration, Instant};

use kyro_core::receipt::ObservedEffect;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::process::{Capped, EnvVar, Spawn, spawn};

const DEFAULT_TIMEOUT_MS: u64 = 60_000;
const DEFAULT_MAX_OUTPUT: u64 = 1024 * 1024;

/// Run a program and wait for it: argv by default, a `/bin/sh -c` script only with
/// `shell: true`.
///
/// Runs in the workspace (or `cwd` inside it) with a filtered environment, in its own
/// process group; past `timeout_ms` the whole group is killed. Returns the exit code or
/// signal, and stdout and stderr capped at `max_output_bytes` each with a truncation marker.
#[tool(name = "run_command", title = "Run command", category = "shell", effect = "exec", aliases = ["bash", "exec"])]
pub struct RunCommand {
    /// The program and its arguments (`["cargo", "test"]`); with `shell`, one script string.
    #[schemars(length(min = 1, max = 256))]
    pub argv: Vec<String>,
    /// Run `argv[0]` as a `/bin/sh -c` script; default false.
    #[serde(default)]
    pub shell: bool,
    /// Working directory, relative to the workspace root; default the root.
    pub cwd: Option<WorkspacePath>,
    /// Extra environment variables (the environment is otherwise filtered).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub env: Vec<EnvVar>,
    /// Text written to the program's standard input.
    #[schemars(length(max = 1048576))]
    pub stdin: Option<String>,
    /// Time limit in milliseconds; default 60000, 100 to 600000.
    #[schemars(range(min = 100, max = 600000))]
    pub timeout_ms: Option<u64>,
    /// Most bytes kept of stdout and of stderr each; default 1048576.
    #[schemars(range(min = 1, max = 8388608))]
    pub max_output_bytes: Option<u64>,
}

/// How a command ended.
#[derive(Debug, Serialize, JsonSchema)]
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
}

async fn drain(mut pipe: impl AsyncReadExt + Unpin, cap: usize) -> Capped {
    let mut capped = Capped::new();
    let mut buffer = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        capped.push(&buffer[..n], cap);
    }
    capped
}

impl Execute for RunCommand {
    type Output = CommandResult;

    async fn run(self, cx: &ToolContext) -> Result<CommandResult, ToolError> {
        use std::os::unix::process::ExitStatusExt;
        let started = Instant::now();
        let (mut child, mut guard) = spawn(
            cx,
            &Spawn {
                argv: &self.argv,
                shell: self.shell,
                cwd: self.cwd.as_ref(),
                env: &self.env,
            },
        )?;
        let cap = self.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT) as usize;
        let mut stdin = child.stdin.take();
        let input = self.stdin.clone().unwrap_or_default();
        let feed = async move {
            if let Some(pipe) = stdin.as_mut() {
                let _ = pipe.write_all(input.as_bytes()).await;
            }
            drop(stdin);
        };
        let out = drain(child.stdout.take().expect("piped"), cap);
        let err = drain(child.stderr.take().expect("piped"), cap);
        let limit = Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let run = async {
            let ((), out, err) = tokio::join!(feed, out, err);
            let status = child.wait().await;
            (out, err, status)
        };
        let finished = tokio::time::timeout(limit, run).await;
        let (timed_out, out, err, status) = match finished {
            Ok((out, err, status)) => (false, out, err, status),
            Err(_) => {
                // Kill the whole group, then reap the child.
                guard.kill();
                let status = child.wait().await;
                (true, Capped::new(), Capped::new(), status)
            }
        };
        if !timed_out {
            guard.disarm();
        }
        let status = status.map_err(|e| ToolError::io("wait for", &self.argv[0], &e))?;
        cx.effects().push(ObservedEffect::Process {
            argv: self.argv.clone(),
            exit_code: status.code(),
        });
        Ok(CommandResult {
            exit_code: status.code(),
            signal: status.signal(),
            timed_out,
            truncated: out.dropped > 0 || err.dropped > 0,
            stdout: out.text(),
            stderr: err.text(),
            duration_ms: started.elapsed().as_millis() as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, denied_path, failed, ok, workspace};

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
    fn a_timeout_kills_the_whole_group() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_command",
            json!({"argv": ["sleep 30 & echo $! > child.pid; wait"], "shell": true, "timeout_ms": 1500}),
        ));
        assert_eq!(r["timed_out"], true);
        assert_eq!(r["signal"], 9);
        let pid: i32 = std::fs::read_to_string(ws.path().join("child.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "the grandchild was killed with its group");
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
