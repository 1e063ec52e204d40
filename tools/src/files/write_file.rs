//! `write_file`: create or replace a text file, atomically.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::read_file::not_found_or_io;
use super::sha256_hex;

/// Create or overwrite a UTF-8 text file in the workspace.
///
/// The content is written exactly as given, through a temporary file renamed into place, so
/// a reader never sees half a file. With `expected_sha256`, the write is refused when the
/// file changed since it was read.
#[tool(
    name = "write_file",
    title = "Write file",
    category = "files",
    effect = "write"
)]
pub struct WriteFile {
    /// Path of the file, relative to the workspace root.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// The complete new content.
    pub content: String,
    /// SHA-256 (lowercase hex) of the file as last read; refuses the write if it changed.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub expected_sha256: Option<String>,
    /// Create missing parent directories; default false.
    #[serde(default)]
    pub create_dirs: bool,
}

/// What was written.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Written {
    /// The path as given.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// True when the file did not exist before.
    pub created: bool,
    /// SHA-256 of the new content, lowercase hex.
    pub sha256: String,
}

impl Execute for WriteFile {
    type Output = Written;

    async fn run(self, cx: &ToolContext) -> Result<Written, ToolError> {
        let given = self.path.as_str().to_owned();
        let host = cx.workspace().resolve(&self.path)?;
        let existing = match std::fs::symlink_metadata(&host) {
            Ok(meta) if meta.is_file() => {
                Some(std::fs::read(&host).map_err(|e| ToolError::io("read", &given, &e))?)
            }
            Ok(_) => return Err(ToolError::NotAFile { path: given }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ToolError::io("inspect", &given, &e)),
        };
        if let Some(expected) = &self.expected_sha256 {
            let actual = existing.as_deref().map(sha256_hex).unwrap_or_default();
            if *expected != actual {
                return Err(ToolError::StaleFile {
                    path: given,
                    expected: expected.clone(),
                    actual,
                });
            }
        }
        let parent = host.parent().ok_or_else(|| ToolError::NotAFile {
            path: given.clone(),
        })?;
        if !parent.is_dir() {
            if self.create_dirs {
                std::fs::create_dir_all(parent)
                    .map_err(|e| ToolError::io("create directories for", &given, &e))?;
            } else {
                return Err(ToolError::NotFound {
                    path: cx.workspace().display(parent),
                });
            }
        }
        write_atomically(&host, self.content.as_bytes())
            .map_err(|e| not_found_or_io("write", &given, &e))?;
        Ok(Written {
            path: given,
            bytes: self.content.len() as u64,
            created: existing.is_none(),
            sha256: sha256_hex(self.content.as_bytes()),
        })
    }
}

/// Writes to a sibling temporary file, then renames it over `target`.
fn write_atomically(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = target.with_file_name(format!(
        ".{name}.kyro-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Ok(meta) = std::fs::metadata(target) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
