//! `read_file`: a window of lines from a UTF-8 text file.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::sha256_hex;

const DEFAULT_LIMIT: u64 = 2000;

/// Read a UTF-8 text file from the workspace, a window of lines at a time.
///
/// Returns the lines exactly as stored (line endings kept), the 1-based window, the total
/// line count and the SHA-256 of the whole file, to pass as `expected_sha256` when writing.
#[tool(
    name = "read_file",
    title = "Read file",
    category = "files",
    effect = "read",
    aliases = ["cat"]
)]
pub struct ReadFile {
    /// Path of the file, relative to the workspace root.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// First line to return, 1-based; default 1.
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// Most lines to return; default 2000, at most 20000.
    #[schemars(range(min = 1, max = 20000))]
    pub limit: Option<u64>,
}

/// A window of lines.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileWindow {
    /// The path as given.
    pub path: String,
    /// The lines of the window, concatenated with their original line endings.
    pub content: String,
    /// First line of the window, 1-based (0 for an empty file).
    pub start_line: u64,
    /// Last line of the window, 1-based (0 for an empty file).
    pub end_line: u64,
    /// Lines in the whole file.
    pub total_lines: u64,
    /// True when lines remain after the window.
    pub truncated: bool,
    /// The `offset` that continues after this window, when truncated.
    pub next_offset: Option<u64>,
    /// SHA-256 of the whole file, lowercase hex.
    pub sha256: String,
}

impl Execute for ReadFile {
    type Output = FileWindow;

    async fn run(self, cx: &ToolContext) -> Result<FileWindow, ToolError> {
        let given = self.path.as_str().to_owned();
        let host = cx.workspace().resolve(&self.path)?;
        let bytes = read_text_bytes(&host, &given)?;
        let sha256 = sha256_hex(&bytes);
        let text = String::from_utf8(bytes).map_err(|_| ToolError::BinaryFile {
            path: given.clone(),
        })?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let total = lines.len() as u64;
        let offset = self.offset.unwrap_or(1);
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if offset > total && !(total == 0 && offset == 1) {
            return Err(ToolError::OffsetOutOfRange {
                path: given,
                offset,
                total_lines: total,
            });
        }
        let start = (offset - 1) as usize;
        let end = (start as u64 + limit).min(total) as usize;
        let truncated = (end as u64) < total;
        Ok(FileWindow {
            path: given,
            content: lines[start..end].concat(),
            start_line: if total == 0 { 0 } else { offset },
            end_line: end as u64,
            total_lines: total,
            truncated,
            next_offset: truncated.then_some(end as u64 + 1),
            sha256,
        })
    }
}

/// Reads a regular file, refusing directories and files with NUL bytes.
pub(crate) fn read_text_bytes(host: &std::path::Path, given: &str) -> Result<Vec<u8>, ToolError> {
    let meta = std::fs::metadata(host).map_err(|e| not_found_or_io("read", given, &e))?;
    if !meta.is_file() {
        return Err(ToolError::NotAFile {
            path: given.to_owned(),
        });
    }
    let bytes = std::fs::read(host).map_err(|e| not_found_or_io("read", given, &e))?;
    if bytes.contains(&0) {
        return Err(ToolError::BinaryFile {
            path: given.to_owned(),
        });
    }
    Ok(bytes)
}

/// `NotFound` for a missing path, `Io` for anything else.
pub(crate) fn not_found_or_io(operation: &str, given: &str, err: &std::io::Error) -> ToolError {
    if err.kind() == std::io::ErrorKind::NotFound {
        ToolError::NotFound {
            path: given.to_owned(),
        }
    } else {
        ToolError::io(operation, given, err)
    }
}
