//! `write_process_input`: type into a background process's terminal.

use std::io::Write;
use std::time::Duration;

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};

use super::read_process_output::{ProcessOutput, Until, collect, find};

/// Type `text`, then `keys`, into a `tty` process; wait up to `wait_ms` for its answer (output that
/// pauses 100 ms, or exit) and return what it printed since the last read.
#[tool(
    name = "write_process_input",
    title = "Write process input",
    category = "shell",
    effect = "exec",
    open_world = false
)]
pub struct WriteProcessInput {
    /// Id from `start_process`.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// Text typed as is (a newline is Enter).
    #[schemars(length(max = 65536))]
    pub text: Option<String>,
    /// Keys pressed after the text.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub keys: Vec<Key>,
    /// Most ms to wait for the answer; default 1000.
    #[schemars(range(max = 30000))]
    pub wait_ms: Option<u64>,
}

/// `enter`, `tab`, `escape`, `backspace`, `up`, `down`, `left`, `right`, `ctrl_c`, `ctrl_d`,
/// `ctrl_z` or `ctrl_l`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Key {
    /// Enter (carriage return).
    Enter,
    /// Tab (completion in most shells).
    Tab,
    /// Escape.
    Escape,
    /// Backspace.
    Backspace,
    /// Arrow up (history).
    Up,
    /// Arrow down.
    Down,
    /// Arrow left.
    Left,
    /// Arrow right.
    Right,
    /// Ctrl-C: interrupt.
    CtrlC,
    /// Ctrl-D: end of input.
    CtrlD,
    /// Ctrl-Z: suspend.
    CtrlZ,
    /// Ctrl-L: clear the screen.
    CtrlL,
}

impl Key {
    fn bytes(self) -> &'static [u8] {
        match self {
            Key::Enter => b"\r",
            Key::Tab => b"\t",
            Key::Escape => b"\x1b",
            Key::Backspace => b"\x7f",
            Key::Up => b"\x1b[A",
            Key::Down => b"\x1b[B",
            Key::Right => b"\x1b[C",
            Key::Left => b"\x1b[D",
            Key::CtrlC => b"\x03",
            Key::CtrlD => b"\x04",
            Key::CtrlZ => b"\x1a",
            Key::CtrlL => b"\x0c",
        }
    }
}

impl Execute for WriteProcessInput {
    type Output = ProcessOutput;

    async fn run(self, cx: &ToolContext) -> Result<ProcessOutput, ToolError> {
        let process = find(cx, &self.id)?;
        if process.terminal.is_none() {
            return Err(Failure::InvalidRequest {
                message: format!(
                    "`{}` was started without a terminal, so its input is closed; start it with `tty: true` to type into it",
                    self.id
                ),
            }
            .into());
        }
        if self.text.as_deref().is_none_or(str::is_empty) && self.keys.is_empty() {
            return Err(Failure::InvalidRequest {
                message: "give `text` or `keys` to type".into(),
            }
            .into());
        }
        let mut typed: Vec<u8> = self.text.as_deref().unwrap_or_default().as_bytes().to_vec();
        for key in &self.keys {
            typed.extend_from_slice(key.bytes());
        }
        // A terminal's input queue is bounded: a program that does not read blocks the
        // write. It runs off the async threads, one at a time per process (a second write
        // while one waits is refused), so a silent program holds one thread at most.
        let (typing, id) = (process.clone(), self.id.clone());
        let written = tokio::task::spawn_blocking(move || {
            let Some(terminal) = &typing.terminal else {
                return Ok(());
            };
            match terminal.try_lock() {
                Ok(mut terminal) => terminal
                    .write_all(&typed)
                    .map_err(|e| ToolError::io("write to", &id, &e)),
                Err(std::sync::TryLockError::Poisoned(p)) => p
                    .into_inner()
                    .write_all(&typed)
                    .map_err(|e| ToolError::io("write to", &id, &e)),
                Err(std::sync::TryLockError::WouldBlock) => Err(Failure::InvalidRequest {
                    message: format!("`{id}` has not read the input typed before yet; read its output or stop it"),
                }
                .into()),
            }
        })
        .await;
        written.map_err(|e| ToolError::io("write to", &self.id, &std::io::Error::other(e.to_string())))??;
        let wait = Duration::from_millis(self.wait_ms.unwrap_or(1000));
        Ok(collect(&process, &self.id, wait, Until::Output).await)
    }

    /// What is typed, and into what program: the approval names the process, not only its id.
    fn preview(&self, cx: &ToolContext) -> Option<String> {
        let process = find(cx, &self.id).ok()?;
        let keys: Vec<String> = self.keys.iter().map(|k| format!("{k:?}")).collect();
        Some(format!(
            "types into {} ({}):\n{}{}",
            self.id,
            process.what.lines().next().unwrap_or_default(),
            super::process::visible(self.text.as_deref().unwrap_or_default()),
            if keys.is_empty() {
                String::new()
            } else {
                format!("\nthen keys: {}", keys.join(", "))
            }
        ))
    }
}
