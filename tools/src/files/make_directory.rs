//! `make_directory`: create a directory.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

/// Create a directory, and its missing parents unless `parents` is false.
/// An existing one is not an error (`created` says whether anything was made).
#[tool(name = "make_directory", title = "Make directory", category = "files", effect = "write", aliases = ["mkdir"], destructive = false, idempotent = true)]
pub struct MakeDirectory {
    /// Workspace-relative directory.
    pub path: WorkspacePath,
    /// Create missing parents.
    #[serde(default = "super::yes")]
    pub parents: bool,
}

/// The directory.
#[kyro_core::output]
#[derive(Debug)]
pub struct MadeDirectory {
    /// The path as given.
    pub path: String,
    /// False when it already existed.
    pub created: bool,
}

impl Execute for MakeDirectory {
    type Output = MadeDirectory;

    async fn run(self, cx: &ToolContext) -> Result<MadeDirectory, ToolError> {
        let path = cx.path(&self.path)?;
        if !self.parents && !path.parent_exists() {
            return Err(ToolError::NotFound {
                path: path.parent_display(),
            });
        }
        let created = path.create_dir(self.parents)?;
        Ok(MadeDirectory {
            path: self.path.to_string(),
            created,
        })
    }
}

#[cfg(test)]
mod tests {
    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn creates_nested_directories_and_is_idempotent() {
        let ws = workspace();
        assert_eq!(
            ok(call(ws.path(), "mkdir", json!({"path": "a/b é/c"})))["created"],
            true
        );
        assert!(ws.path().join("a/b é/c").is_dir());
        assert_eq!(
            ok(call(ws.path(), "make_directory", json!({"path": "a/b é/c"})))["created"],
            false
        );
    }

    #[test]
    fn without_parents_a_missing_parent_or_a_file_in_the_way_fails() {
        let ws = workspace();
        assert_eq!(
            failed(call(
                ws.path(),
                "make_directory",
                json!({"path": "x/y", "parents": false})
            )),
            ToolError::NotFound { path: "x".into() }
        );
        std::fs::write(ws.path().join("file"), "").unwrap();
        assert_eq!(
            failed(call(ws.path(), "make_directory", json!({"path": "file"}))),
            ToolError::AlreadyExists { path: "file".into() }
        );
    }
}
