//! `read_process_output`: what a background process printed since the last read.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};

use super::process::visible;
use super::process_table::{Background, get, remove};

/// Read a background process's output since the last read and whether it exited, optionally waiting up to `wait_ms`.
/// An exited process's id is forgotten once read.
#[tool(
    name = "read_process_output",
    title = "Read process output",
    category = "shell",
    effect = "exec",
    destructive = false,
    open_world = false
)]
pub struct ReadProcessOutput {
    /// Id from `start_process`.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// Most ms to wait first; default 0.
    #[schemars(range(max = 30000))]
    pub wait_ms: Option<u64>,
    /// Wait for `exit` (default), or `output` (new output, then 100 ms of quiet).
    #[serde(default)]
    pub until: Until,
}

/// What a read waits for.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Until {
    /// The process to exit.
    #[default]
    Exit,
    /// New output, then 100 ms without more (or the exit).
    Output,
}

/// New output and the process's state.
#[kyro_core::output]
#[derive(Debug)]
pub struct ProcessOutput {
    /// The id.
    pub id: String,
    /// Standard output since the last read (lossy UTF-8).
    pub stdout: String,
    /// Standard error since the last read (lossy UTF-8).
    pub stderr: String,
    /// Whether it has exited.
    pub exited: bool,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when killed.
    pub signal: Option<i32>,
}

impl Execute for ReadProcessOutput {
    type Output = ProcessOutput;

    async fn run(self, cx: &ToolContext) -> Result<ProcessOutput, ToolError> {
        let process = find(cx, &self.id)?;
        Ok(collect(
            &process,
            &self.id,
            Duration::from_millis(self.wait_ms.unwrap_or(0)),
            self.until,
        )
        .await)
    }
}

/// A process the caller may reach, by id; a typed failure otherwise.
pub(crate) fn find(cx: &ToolContext, id: &str) -> Result<Arc<Background>, ToolError> {
    get(cx, id).ok_or_else(|| {
        Failure::NoSuchRecord {
            record: "process".into(),
            key: id.to_owned(),
        }
        .into()
    })
}

/// How long output must pause before a read waiting for it returns.
const QUIET: Duration = Duration::from_millis(100);

/// Waits up to `wait` for what `until` names, then hands out what the process printed
/// since the last read (and forgets an exited process).
pub(crate) async fn collect(process: &Background, id: &str, wait: Duration, until: Until) -> ProcessOutput {
    let start = Instant::now();
    let deadline = start + wait;
    let state = || {
        let output = process.output.lock().unwrap_or_else(|p| p.into_inner());
        (output.exited, output.chunks)
    };
    let (_, first) = state();
    let (mut seen, mut since) = (first, start);
    loop {
        let (exited, chunks) = state();
        let now = Instant::now();
        if chunks != seen {
            (seen, since) = (chunks, now);
        }
        let settled = until == Until::Output && seen != first && now.duration_since(since) >= QUIET;
        if exited || settled || now >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut output = process.output.lock().unwrap_or_else(|p| p.into_inner());
    // Shown as text that drives no terminal (escape sequences made visible, or taken out
    // of a terminal's output).
    let text = |bytes: &[u8]| match process.terminal {
        Some(_) => visible(&super::pty::terminal_text(bytes)),
        None => visible(&String::from_utf8_lossy(bytes)),
    };
    // What is handed out is let go: the buffer bounds only what waits to be read.
    let take = |stream: &mut super::process::Capped| {
        let mut taken = text(&stream.kept);
        if stream.dropped > 0 {
            taken.push_str(&format!(
                "\n[… {} more bytes not kept: read more often]",
                stream.dropped
            ));
        }
        *stream = super::process::Capped::new();
        taken
    };
    let stdout = take(&mut output.stdout);
    let stderr = take(&mut output.stderr);
    let result = ProcessOutput {
        id: id.to_owned(),
        stdout,
        stderr,
        exited: output.exited,
        exit_code: output.exit_code,
        signal: output.signal,
    };
    drop(output);
    if result.exited {
        remove(id);
    }
    result
}
