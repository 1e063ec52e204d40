//! `start_process`: start a long-running program in the background.

use kyro_core::policy::SettingsTable;
use std::sync::{Arc, Mutex};

use kyro_core::receipt::ObservedEffect;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use std::io::Read;

use super::process::{EnvVar, Spawn, spawn_detached};
use super::process_table::{BUFFER, Background, Output, insert};
use crate::settings::ShellSettings;

/// Start a program in the background (rules as `run_command`) and return its id.
/// Read output with `read_process_output`, stop it with `stop_process`. With `tty` it gets a
/// terminal: type with `write_process_input`; output is one stream, `stdout`.
#[tool(
    name = "start_process",
    title = "Start background process",
    category = "shell",
    effect = "exec"
)]
pub struct StartProcess {
    /// Program and arguments; with `shell`, one script string.
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
    /// Run under a pseudo-terminal (80x24, `TERM=dumb` unless `env` sets it).
    #[serde(default)]
    pub tty: bool,
}

/// A started process.
#[kyro_core::output]
#[derive(Debug)]
pub struct Started {
    /// The id to pass to `read_process_output` and `stop_process`.
    pub id: String,
    /// The operating-system process id.
    pub pid: u32,
}

fn pump(mut pipe: impl Read, process: Arc<Background>, stderr: bool) {
    let mut buffer = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buffer) {
        if n == 0 {
            break;
        }
        let mut output = process.output.lock().unwrap_or_else(|p| p.into_inner());
        let stream = if stderr { &mut output.stderr } else { &mut output.stdout };
        stream.push(&buffer[..n], BUFFER);
        output.chunks += 1;
    }
}

impl StartProcess {
    /// What to run, as the spawner and the approval preview both see it.
    fn what(&self) -> Spawn<'_> {
        Spawn {
            argv: &self.argv,
            shell: self.shell,
            cwd: self.cwd.as_ref(),
            env: &self.env,
            // What is typed into a terminal is code no rule names.
            input: self.tty,
            tty: self.tty,
        }
    }
}

impl Execute for StartProcess {
    type Output = Started;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<ShellSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Started, ToolError> {
        use std::os::unix::process::ExitStatusExt;
        let (mut child, guard, controller) = spawn_detached(cx, &self.what())?;
        drop(child.stdin.take());
        let pid = child.id();
        let sandbox = guard.sandbox();
        let io = |e: std::io::Error| ToolError::io("read the terminal of", &self.argv[0], &e);
        let (reader, terminal) = match controller {
            Some(controller) => {
                let writer = std::fs::File::from(controller.try_clone().map_err(io)?);
                (Some(std::fs::File::from(controller)), Some(Mutex::new(writer)))
            }
            None => (None, None),
        };
        let process = Arc::new(Background {
            pid,
            owner: cx.scope().lineage().to_vec(),
            caller: cx.caller().clone(),
            what: super::process::preview_command(&self.what()),
            output: Mutex::new(Output::new()),
            guard: Mutex::new(Some(guard)),
            terminal,
        });
        let watched = process.clone();
        // Readers for both streams (the terminal's one), and the reaper: it owns the
        // child, waits for it (so it never lingers as a zombie) and records how it ended.
        let (out_process, err_process) = (watched.clone(), watched.clone());
        let readers = match reader {
            // A terminal's reads end in EIO once the program's side is closed.
            Some(reader) => vec![std::thread::spawn(move || pump(reader, out_process, false))],
            None => {
                let (stdout, stderr) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
                vec![
                    std::thread::spawn(move || pump(stdout, out_process, false)),
                    std::thread::spawn(move || pump(stderr, err_process, true)),
                ]
            }
        };
        std::thread::spawn(move || {
            let status = child.wait();
            {
                let mut output = watched.output.lock().unwrap_or_else(|p| p.into_inner());
                if let Ok(status) = status {
                    output.exit_code = status.code();
                    output.signal = status.signal();
                }
                output.reaped = true;
            }
            // The group leader is gone; nothing left to kill through it.
            if let Some(mut guard) = watched.guard.lock().unwrap_or_else(|p| p.into_inner()).take() {
                guard.disarm();
            }
            for reader in readers {
                let _ = reader.join();
            }
            watched.output.lock().unwrap_or_else(|p| p.into_inner()).exited = true;
        });
        cx.effects().push(ObservedEffect::Process {
            argv: self.argv,
            exit_code: None,
            sandbox,
        });
        Ok(Started {
            id: insert(process),
            pid,
        })
    }

    fn preview(&self, _cx: &ToolContext) -> Option<String> {
        Some(super::process::preview_command(&self.what()))
    }

    fn rule(&self, scope: &kyro_core::policy::Scope) -> Option<kyro_core::policy::MatchedRule> {
        super::rules::matched(scope, &self.what())
    }
}
