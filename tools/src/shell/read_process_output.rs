//! `read_process_output`: what a background process printed since the last read.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::process::visible;
use super::process_table::{get, remove};

/// Read what a background process printed since the last read, and whether it has exited.
///
/// Optionally waits up to `wait_ms` for it to exit first. Once an exited process has been
/// read, its id is forgotten.
#[tool(
    name = "read_process_output",
    title = "Read process output",
    category = "shell",
    effect = "exec",
    destructive = false,
    open_world = false
)]
pub struct ReadProcessOutput {
    /// The id from `start_process`.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// Wait up to this many milliseconds for the process to exit; default 0, at most 30000.
    #[schemars(range(max = 30000))]
    pub wait_ms: Option<u64>,
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
        let process = get(cx.scope(), &self.id).ok_or_else(|| Failure::NoSuchRecord {
            record: "process".into(),
            key: self.id.clone(),
        })?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(self.wait_ms.unwrap_or(0));
        loop {
            let exited = process.output.lock().unwrap_or_else(|p| p.into_inner()).exited;
            if exited || std::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let mut output = process.output.lock().unwrap_or_else(|p| p.into_inner());
        // Shown as text that drives no terminal (escape sequences made visible).
        let stdout = visible(&String::from_utf8_lossy(&output.stdout.kept[output.stdout_read..]));
        let stderr = visible(&String::from_utf8_lossy(&output.stderr.kept[output.stderr_read..]));
        output.stdout_read = output.stdout.kept.len();
        output.stderr_read = output.stderr.kept.len();
        let result = ProcessOutput {
            id: self.id.clone(),
            stdout,
            stderr,
            exited: output.exited,
            exit_code: output.exit_code,
            signal: output.signal,
        };
        drop(output);
        if result.exited {
            remove(&self.id);
        }
        Ok(result)
    }
}
