//! `read_file`: a window of lines from a UTF-8 text file.

use kyro_core::{ConfinedPath, Execute, ToolContext, ToolError, WorkspacePath, sha256_hex, tool};
use schemars::JsonSchema;
use serde::Serialize;

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
        let bytes = read_text_bytes(&cx.path(&self.path)?)?;
        let sha256 = sha256_hex(&bytes);
        let text = String::from_utf8(bytes).map_err(|_| ToolError::BinaryFile { path: given.clone() })?;
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

/// Reads a regular file, refusing files with NUL bytes as binary.
pub(crate) fn read_text_bytes(path: &ConfinedPath) -> Result<Vec<u8>, ToolError> {
    let bytes = path.read()?;
    if bytes.contains(&0) {
        return Err(ToolError::BinaryFile {
            path: path.given().to_owned(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use kyro_core::{Outcome, ToolError};
    use serde_json::json;

    use kyro_core::policy::PathDenial;

    use crate::testing::{call, denied_path, failed, ok, workspace};

    #[test]
    fn reads_a_window_with_line_endings_pipes_and_unicode_kept() {
        let ws = workspace();
        std::fs::write(ws.path().join("f.txt"), "a|b\r\nhé 😀\nthird\nfourth").unwrap();
        let window = ok(call(
            ws.path(),
            "read_file",
            json!({"path": "f.txt", "offset": 2, "limit": 2}),
        ));
        assert_eq!(window["content"], "hé 😀\nthird\n");
        assert_eq!(window["start_line"], 2);
        assert_eq!(window["end_line"], 3);
        assert_eq!(window["total_lines"], 4);
        assert_eq!(window["truncated"], true);
        assert_eq!(window["next_offset"], 4);
        let all = ok(call(ws.path(), "cat", json!({"file_path": "f.txt"})));
        assert_eq!(all["content"], "a|b\r\nhé 😀\nthird\nfourth");
        assert_eq!(all["truncated"], false);
        assert_eq!(
            all["sha256"],
            kyro_core::sha256_hex("a|b\r\nhé 😀\nthird\nfourth".as_bytes())
        );
    }

    #[test]
    fn an_empty_file_has_no_lines() {
        let ws = workspace();
        std::fs::write(ws.path().join("empty"), "").unwrap();
        let window = ok(call(ws.path(), "read_file", json!({"path": "empty"})));
        assert_eq!(window["content"], "");
        assert_eq!(window["total_lines"], 0);
        assert_eq!(window["start_line"], 0);
    }

    #[test]
    fn a_very_long_line_survives() {
        let ws = workspace();
        let line = "x|".repeat(500_000);
        std::fs::write(ws.path().join("long"), &line).unwrap();
        let window = ok(call(ws.path(), "read_file", json!({"path": "long"})));
        assert_eq!(window["content"].as_str().unwrap().len(), line.len());
    }

    #[test]
    fn an_offset_past_the_end_is_refused() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "one\n").unwrap();
        assert_eq!(
            failed(call(ws.path(), "read_file", json!({"path": "f", "offset": 3}))),
            ToolError::OffsetOutOfRange {
                path: "f".into(),
                offset: 3,
                total_lines: 1
            }
        );
    }

    #[test]
    fn binary_and_non_utf8_files_are_refused_clearly() {
        let ws = workspace();
        std::fs::write(ws.path().join("nul"), b"ab\0cd").unwrap();
        std::fs::write(ws.path().join("latin1"), b"caf\xe9").unwrap();
        for name in ["nul", "latin1"] {
            assert_eq!(
                failed(call(ws.path(), "read_file", json!({"path": name}))),
                ToolError::BinaryFile { path: name.into() }
            );
        }
    }

    #[test]
    fn missing_files_and_directories_are_typed_failures() {
        let ws = workspace();
        std::fs::create_dir(ws.path().join("dir")).unwrap();
        assert_eq!(
            failed(call(ws.path(), "read_file", json!({"path": "nope.txt"}))),
            ToolError::NotFound {
                path: "nope.txt".into()
            }
        );
        assert_eq!(
            failed(call(ws.path(), "read_file", json!({"path": "dir"}))),
            ToolError::NotAFile { path: "dir".into() }
        );
    }

    #[test]
    fn paths_outside_the_workspace_are_refused() {
        let parent = workspace();
        let root = parent.path().join("root");
        let evil = parent.path().join("root-evil");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&evil).unwrap();
        std::fs::write(evil.join("secret"), "s").unwrap();
        symlink(evil.join("secret"), root.join("link")).unwrap();
        let evil_abs = evil.join("secret").to_string_lossy().into_owned();
        for path in [
            "../root-evil/secret",
            "/etc/passwd",
            evil_abs.as_str(),
            "link",
            "a/../../root-evil/secret",
        ] {
            assert_eq!(
                denied_path(call(&root, "read_file", json!({"path": path}))),
                PathDenial::OutsideRoots,
                "{path}"
            );
        }
    }

    #[test]
    fn an_absolute_path_inside_the_workspace_is_accepted() {
        let ws = workspace();
        std::fs::write(ws.path().join("in"), "ok\n").unwrap();
        let path = ws.path().canonicalize().unwrap().join("in");
        let window = ok(call(ws.path(), "read_file", json!({"path": path})));
        assert_eq!(window["content"], "ok\n");
    }

    #[test]
    fn limits_are_enforced_by_the_schema() {
        let ws = workspace();
        for args in [
            json!({"path": "f", "offset": 0}),
            json!({"path": "f", "limit": 20001}),
            json!({"path": ""}),
        ] {
            assert!(matches!(
                call(ws.path(), "read_file", args),
                Outcome::InvalidArguments { .. }
            ));
        }
    }
}
