//! `delete_path`: remove a file, a symlink, or a directory tree.

use crate::Failure;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::list_directory::EntryKind;

/// Delete a file or symlink (never followed), or with `recursive` a directory tree.
/// The workspace root cannot be deleted.
#[tool(name = "delete_path", title = "Delete path", category = "files", effect = "write", aliases = ["rm"], idempotent = true)]
pub struct DeletePath {
    /// Workspace-relative path.
    pub path: WorkspacePath,
    /// Delete a non-empty directory and its contents.
    #[serde(default)]
    pub recursive: bool,
}

/// What was deleted.
#[kyro_core::output]
#[derive(Debug)]
pub struct Deleted {
    /// The path as given.
    pub path: String,
    /// What it was.
    pub kind: EntryKind,
    /// Entries removed, the path itself included.
    pub entries: u64,
}

impl Execute for DeletePath {
    type Output = Deleted;

    async fn run(self, cx: &ToolContext) -> Result<Deleted, ToolError> {
        let path = cx.path(&self.path)?;
        let kind = path.entry_type()?.ok_or_else(|| ToolError::NotFound {
            path: self.path.to_string(),
        })?;
        let entries = match kind {
            EntryType::Directory => {
                if !self.recursive && !path.read_dir()?.is_empty() {
                    return Err(Failure::DirectoryNotEmpty {
                        path: self.path.to_string(),
                    }
                    .into());
                }
                path.remove_dir_all()?
            }
            _ => {
                path.remove_file()?;
                1
            }
        };
        Ok(Deleted {
            path: self.path.to_string(),
            kind: EntryKind::from(kind),
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use std::os::unix::fs::symlink;

    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn deletes_files_links_and_trees() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "x").unwrap();
        std::fs::create_dir_all(ws.path().join("d/e")).unwrap();
        std::fs::write(ws.path().join("d/e/g"), "x").unwrap();
        std::fs::write(ws.path().join("keep"), "k").unwrap();
        symlink(ws.path().join("keep"), ws.path().join("link")).unwrap();
        assert_eq!(ok(call(ws.path(), "rm", json!({"path": "f"})))["kind"], "file");
        ok(call(ws.path(), "delete_path", json!({"path": "link"})));
        assert!(ws.path().join("keep").exists(), "the link's target stays");
        assert_eq!(
            failed(call(ws.path(), "delete_path", json!({"path": "d"}))),
            Failure::DirectoryNotEmpty { path: "d".into() }.into()
        );
        let tree = ok(call(ws.path(), "delete_path", json!({"path": "d", "recursive": true})));
        assert_eq!(tree["entries"], 3);
        assert!(!ws.path().join("d").exists());
    }

    #[test]
    fn the_root_and_missing_paths_are_refused() {
        let ws = workspace();
        assert!(matches!(
            failed(call(ws.path(), "delete_path", json!({"path": ".", "recursive": true}))),
            ToolError::Io { .. }
        ));
        assert!(ws.path().exists());
        assert_eq!(
            failed(call(ws.path(), "delete_path", json!({"path": "nope"}))),
            ToolError::NotFound { path: "nope".into() }
        );
    }

    /// Runs `f` on a thread and fails the test if it has not returned within 10 seconds.
    fn within_seconds<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the call blocked on the FIFO")
    }

    #[test]
    fn a_fifo_is_deleted_and_moved_without_opening_it() {
        let ws = workspace();
        for name in ["pipe", "pipe2"] {
            let path = std::ffi::CString::new(ws.path().join(name).to_str().unwrap()).unwrap();
            // SAFETY: a valid path.
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
        }
        let root = ws.path().to_path_buf();
        within_seconds(move || ok(call(&root, "delete_path", json!({"path": "pipe"}))));
        let root = ws.path().to_path_buf();
        within_seconds(move || {
            ok(call(
                &root,
                "move_path",
                json!({"source": "pipe2", "destination": "moved"}),
            ))
        });
        assert!(!ws.path().join("pipe").exists() && ws.path().join("moved").exists());
    }
}
