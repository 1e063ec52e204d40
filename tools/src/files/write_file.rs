//! `write_file`: create or replace a text file, atomically.

use crate::Failure;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, sha256_hex, tool};

/// Create or overwrite a UTF-8 text file, atomically.
#[tool(
    name = "write_file",
    title = "Write file",
    category = "files",
    effect = "write",
    idempotent = true
)]
pub struct WriteFile {
    /// Workspace-relative path.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// The full new content.
    pub content: String,
    /// SHA-256 from the last read; refused if the file changed.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub expected_sha256: Option<String>,
    /// Create missing parent directories.
    #[serde(default)]
    pub create_dirs: bool,
}

/// What was written.
#[kyro_core::output]
#[derive(Debug)]
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
        let path = cx.path(&self.path)?;
        let given = path.given().to_owned();
        let existing = match path.entry_type()? {
            Some(EntryType::File) => Some(path.read()?),
            Some(_) => return Err(ToolError::NotAFile { path: given }),
            None => None,
        };
        if let Some(expected) = &self.expected_sha256 {
            let actual = existing.as_deref().map(sha256_hex).unwrap_or_default();
            if *expected != actual {
                return Err(Failure::StaleFile {
                    path: given,
                    expected: expected.clone(),
                    actual,
                }
                .into());
            }
        }
        if !path.parent_exists() {
            if self.create_dirs {
                path.create_parents()?;
            } else {
                return Err(ToolError::NotFound {
                    path: path.parent_display(),
                });
            }
        }
        path.write_atomic(self.content.as_bytes(), existing.as_deref())?;
        Ok(Written {
            path: given,
            bytes: self.content.len() as u64,
            created: existing.is_none(),
            sha256: sha256_hex(self.content.as_bytes()),
        })
    }

    fn preview(&self, cx: &ToolContext) -> Option<String> {
        let path = cx.path(&self.path).ok()?;
        let old = match path.entry_type().ok()? {
            Some(EntryType::File) => match super::whole::read_text_bytes(&path).map(String::from_utf8) {
                Ok(Ok(text)) => text,
                _ => return Some(format!("replaces `{}`, a binary or very large file", path.display())),
            },
            _ => String::new(),
        };
        Some(super::text_file::preview_diff(&path.display(), &old, &self.content))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use crate::Failure;
    use kyro_core::ToolError;
    use serde_json::json;

    use kyro_core::policy::PathDenial;
    use kyro_core::sha256_hex;

    use crate::testing::{call, denied_path, failed, ok, workspace};

    #[test]
    fn creates_then_overwrites_with_content_unchanged() {
        let ws = workspace();
        for content in ["a|b\r\nc", "", "é😀\n", "no newline"] {
            let written = ok(call(
                ws.path(),
                "write_file",
                json!({"path": "f.txt", "content": content}),
            ));
            assert_eq!(std::fs::read_to_string(ws.path().join("f.txt")).unwrap(), content);
            assert_eq!(written["sha256"], sha256_hex(content.as_bytes()));
            assert_eq!(written["bytes"], content.len());
        }
        let first = ok(call(ws.path(), "write_file", json!({"path": "g.txt", "content": "x"})));
        assert_eq!(first["created"], true);
        let second = ok(call(ws.path(), "write_file", json!({"path": "g.txt", "content": "y"})));
        assert_eq!(second["created"], false);
    }

    #[test]
    fn the_sha_from_a_read_guards_the_write() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "v1").unwrap();
        let read = ok(call(ws.path(), "read_file", json!({"path": "f"})));
        let sha = read["sha256"].as_str().unwrap().to_owned();
        ok(call(
            ws.path(),
            "write_file",
            json!({"path": "f", "content": "v2", "expected_sha256": sha}),
        ));
        let stale = failed(call(
            ws.path(),
            "write_file",
            json!({"path": "f", "content": "v3", "expected_sha256": sha}),
        ));
        assert_eq!(
            Failure::of(&stale),
            Some(Failure::StaleFile {
                path: "f".into(),
                expected: sha.clone(),
                actual: sha256_hex(b"v2")
            })
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("f")).unwrap(),
            "v2",
            "a refused write changes nothing"
        );
    }

    #[test]
    fn a_missing_parent_needs_create_dirs() {
        let ws = workspace();
        assert_eq!(
            failed(call(ws.path(), "write_file", json!({"path": "a/b/f", "content": "x"}))),
            ToolError::NotFound { path: "a/b".into() }
        );
        ok(call(
            ws.path(),
            "write_file",
            json!({"path": "a/b/f", "content": "x", "create_dirs": true}),
        ));
        assert_eq!(std::fs::read_to_string(ws.path().join("a/b/f")).unwrap(), "x");
    }

    #[test]
    fn a_directory_is_not_overwritten() {
        let ws = workspace();
        std::fs::create_dir(ws.path().join("d")).unwrap();
        assert_eq!(
            failed(call(ws.path(), "write_file", json!({"path": "d", "content": "x"}))),
            ToolError::NotAFile { path: "d".into() }
        );
    }

    #[test]
    fn writes_through_escaping_symlinks_are_refused() {
        let parent = workspace();
        let root = parent.path().join("root");
        std::fs::create_dir(&root).unwrap();
        symlink(parent.path(), root.join("up")).unwrap();
        symlink(parent.path().join("dangling"), root.join("dangle")).unwrap();
        for path in ["up/escaped", "dangle", "../escaped"] {
            assert_eq!(
                denied_path(call(&root, "write_file", json!({"path": path, "content": "x"}))),
                PathDenial::OutsideRoots,
                "{path}"
            );
        }
        assert!(!parent.path().join("escaped").exists());
        assert!(!parent.path().join("dangling").exists());
    }

    #[test]
    fn a_malformed_expected_sha_is_invalid_arguments() {
        let ws = workspace();
        let outcome = call(
            ws.path(),
            "write_file",
            json!({"path": "f", "content": "x", "expected_sha256": "ABC"}),
        );
        assert!(
            matches!(outcome, kyro_core::Outcome::InvalidArguments { .. }),
            "{outcome:?}"
        );
        assert!(!ws.path().join("f").exists());
    }
}
