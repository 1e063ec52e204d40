//! `copy_path`: copy a file, or a directory tree, inside the workspace.

use kyro_core::{ConfinedPath, EntryType, Execute, StopSignal, ToolContext, ToolError, WorkspacePath, tool};

/// Copy a file, or with `recursive` a directory tree.
/// Refuses an existing destination unless `overwrite`; symlinks in a copied tree are skipped.
#[tool(name = "copy_path", title = "Copy path", category = "files", effect = "write", aliases = ["cp"], idempotent = true)]
pub struct CopyPath {
    /// Workspace-relative path to copy.
    pub source: WorkspacePath,
    /// Workspace-relative path of the copy.
    pub destination: WorkspacePath,
    /// Copy a directory and its contents.
    #[serde(default)]
    pub recursive: bool,
    /// Replace existing files at the destination.
    #[serde(default)]
    pub overwrite: bool,
}

/// What was copied.
#[kyro_core::output]
#[derive(Debug)]
pub struct Copied {
    /// The source as given.
    pub source: String,
    /// The destination as given.
    pub destination: String,
    /// Files copied.
    pub files: u64,
    /// Bytes copied.
    pub bytes: u64,
}

fn copy(
    source: &ConfinedPath,
    destination: &ConfinedPath,
    overwrite: bool,
    totals: &mut (u64, u64),
    stop: &StopSignal,
) -> Result<(), ToolError> {
    stop.check()?;
    match source.entry_type()? {
        Some(EntryType::File) => {
            if !overwrite && destination.entry_type()?.is_some() {
                return Err(ToolError::AlreadyExists {
                    path: destination.given().to_owned(),
                });
            }
            totals.0 += 1;
            totals.1 += source.copy_file_to(destination)?;
        }
        Some(EntryType::Directory) => {
            destination.create_dir(false)?;
            for entry in source.read_dir()? {
                if matches!(entry.kind, EntryType::File | EntryType::Directory) {
                    copy(
                        &source.join(&entry.name),
                        &destination.join(&entry.name),
                        overwrite,
                        totals,
                        stop,
                    )?;
                }
            }
        }
        Some(_) => {}
        None => {
            return Err(ToolError::NotFound {
                path: source.given().to_owned(),
            });
        }
    }
    Ok(())
}

impl Execute for CopyPath {
    type Output = Copied;

    async fn run(self, cx: &ToolContext) -> Result<Copied, ToolError> {
        let source = cx.path(&self.source)?;
        let destination = cx.path(&self.destination)?;
        match source.entry_type()? {
            None => {
                return Err(ToolError::NotFound {
                    path: self.source.to_string(),
                });
            }
            Some(EntryType::Directory) if !self.recursive => {
                return Err(ToolError::NotAFile {
                    path: self.source.to_string(),
                });
            }
            _ => {}
        }
        if destination.host_content_path().starts_with(source.host_content_path()) {
            return Err(ToolError::io(
                "copy",
                self.source.as_str(),
                &std::io::Error::other(format!(
                    "the destination `{}` is inside the source; a folder cannot be copied into itself",
                    self.destination
                )),
            ));
        }
        let mut totals = (0, 0);
        copy(&source, &destination, self.overwrite, &mut totals, cx.stop())?;
        Ok(Copied {
            source: self.source.to_string(),
            destination: self.destination.to_string(),
            files: totals.0,
            bytes: totals.1,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn copies_a_file_byte_for_byte() {
        let ws = workspace();
        std::fs::write(ws.path().join("a"), "a|b\r\né\n").unwrap();
        let copied = ok(call(ws.path(), "cp", json!({"source": "a", "destination": "b"})));
        assert_eq!((copied["files"].clone(), copied["bytes"].clone()), (json!(1), json!(8)));
        assert_eq!(
            std::fs::read(ws.path().join("b")).unwrap(),
            std::fs::read(ws.path().join("a")).unwrap()
        );
    }

    #[test]
    fn copies_a_tree_with_recursive_and_skips_symlinks() {
        let ws = workspace();
        std::fs::create_dir_all(ws.path().join("src/inner")).unwrap();
        std::fs::write(ws.path().join("src/one"), "1").unwrap();
        std::fs::write(ws.path().join("src/inner/two"), "22").unwrap();
        symlink("/etc/passwd", ws.path().join("src/link")).unwrap();
        assert_eq!(
            failed(call(
                ws.path(),
                "copy_path",
                json!({"source": "src", "destination": "dst"})
            )),
            ToolError::NotAFile { path: "src".into() }
        );
        let copied = ok(call(
            ws.path(),
            "copy_path",
            json!({"source": "src", "destination": "dst", "recursive": true}),
        ));
        assert_eq!((copied["files"].clone(), copied["bytes"].clone()), (json!(2), json!(3)));
        assert_eq!(std::fs::read_to_string(ws.path().join("dst/inner/two")).unwrap(), "22");
        assert!(!ws.path().join("dst/link").exists());
    }

    #[test]
    fn an_existing_destination_needs_overwrite() {
        let ws = workspace();
        std::fs::write(ws.path().join("a"), "new").unwrap();
        std::fs::write(ws.path().join("b"), "old").unwrap();
        assert_eq!(
            failed(call(ws.path(), "copy_path", json!({"source": "a", "destination": "b"}))),
            ToolError::AlreadyExists { path: "b".into() }
        );
        ok(call(
            ws.path(),
            "copy_path",
            json!({"source": "a", "destination": "b", "overwrite": true}),
        ));
        assert_eq!(std::fs::read_to_string(ws.path().join("b")).unwrap(), "new");
    }

    #[test]
    fn a_folder_is_never_copied_into_itself() {
        let ws = workspace();
        std::fs::create_dir_all(ws.path().join("src/inner")).unwrap();
        std::fs::write(ws.path().join("src/a.txt"), "a").unwrap();
        for destination in ["src/inner/copy", "src", "./src/../src/x"] {
            let error = failed(call(
                ws.path(),
                "copy_path",
                json!({"source": "src", "destination": destination, "recursive": true}),
            ));
            assert!(
                error.to_string().contains("inside the source"),
                "{destination}: {error}"
            );
        }
        assert!(!ws.path().join("src/inner/copy").exists());
    }
}
