//! `move_path`: rename or move a file or directory inside the workspace.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

/// Move or rename a file or directory.
/// Refuses an existing destination unless `overwrite`; missing parents are not created.
#[tool(name = "move_path", title = "Move path", category = "files", effect = "write", aliases = ["mv", "rename_path"])]
pub struct MovePath {
    /// Workspace-relative path to move.
    pub source: WorkspacePath,
    /// Workspace-relative new path.
    pub destination: WorkspacePath,
    /// Replace an existing destination.
    #[serde(default)]
    pub overwrite: bool,
}

/// What moved.
#[kyro_core::output]
#[derive(Debug)]
pub struct Moved {
    /// The source as given.
    pub source: String,
    /// The destination as given.
    pub destination: String,
    /// True when an existing destination was replaced.
    pub replaced: bool,
}

impl Execute for MovePath {
    type Output = Moved;

    async fn run(self, cx: &ToolContext) -> Result<Moved, ToolError> {
        let source = cx.path(&self.source)?;
        let destination = cx.path(&self.destination)?;
        if source.entry_type()?.is_none() {
            return Err(ToolError::NotFound {
                path: self.source.to_string(),
            });
        }
        let replaced = source.rename_to(&destination, self.overwrite)?;
        Ok(Moved {
            source: self.source.to_string(),
            destination: self.destination.to_string(),
            replaced,
        })
    }
}

#[cfg(test)]
mod tests {
    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, denied_path, failed, ok, workspace};

    #[test]
    fn moves_files_and_directories() {
        let ws = workspace();
        std::fs::write(ws.path().join("a|é.txt"), "x").unwrap();
        std::fs::create_dir_all(ws.path().join("d/e")).unwrap();
        let moved = ok(call(
            ws.path(),
            "mv",
            json!({"source": "a|é.txt", "destination": "d/b.txt"}),
        ));
        assert_eq!(moved["replaced"], false);
        assert_eq!(std::fs::read_to_string(ws.path().join("d/b.txt")).unwrap(), "x");
        ok(call(
            ws.path(),
            "move_path",
            json!({"source": "d", "destination": "renamed"}),
        ));
        assert!(ws.path().join("renamed/e").is_dir());
    }

    #[test]
    fn an_existing_destination_needs_overwrite() {
        let ws = workspace();
        std::fs::write(ws.path().join("a"), "new").unwrap();
        std::fs::write(ws.path().join("b"), "old").unwrap();
        assert_eq!(
            failed(call(ws.path(), "move_path", json!({"source": "a", "destination": "b"}))),
            ToolError::AlreadyExists { path: "b".into() }
        );
        assert_eq!(std::fs::read_to_string(ws.path().join("b")).unwrap(), "old");
        let moved = ok(call(
            ws.path(),
            "move_path",
            json!({"source": "a", "destination": "b", "overwrite": true}),
        ));
        assert_eq!(moved["replaced"], true);
        assert_eq!(std::fs::read_to_string(ws.path().join("b")).unwrap(), "new");
    }

    #[test]
    fn a_missing_source_and_an_escaping_destination_are_refused() {
        let ws = workspace();
        assert_eq!(
            failed(call(
                ws.path(),
                "move_path",
                json!({"source": "nope", "destination": "x"})
            )),
            ToolError::NotFound { path: "nope".into() }
        );
        std::fs::write(ws.path().join("a"), "x").unwrap();
        denied_path(call(
            ws.path(),
            "move_path",
            json!({"source": "a", "destination": "../a"}),
        ));
        assert!(ws.path().join("a").exists());
    }
}
