//! `file_info`: metadata without content.

use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::list_directory::EntryKind;

/// A path's metadata without reading it: kind, size, modified time, permissions.
/// A final symlink is described, not followed, unless `follow_symlinks`.
#[tool(name = "file_info", title = "File info", category = "files", effect = "read", aliases = ["stat"])]
pub struct FileInfo {
    /// Workspace-relative path.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// Describe a final symlink's target instead of the link.
    #[serde(default)]
    pub follow_symlinks: bool,
}

/// A path's metadata.
#[kyro_core::output]
#[derive(Debug)]
pub struct PathInfo {
    /// The path as given.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, seconds since the Unix epoch.
    pub modified: Option<i64>,
    /// Unix permissions, in octal (`644`).
    pub permissions: String,
    /// Whether the owner cannot write it.
    pub readonly: bool,
    /// The target of a symlink, as written in the link.
    pub link_target: Option<String>,
}

impl Execute for FileInfo {
    type Output = PathInfo;

    async fn run(self, cx: &ToolContext) -> Result<PathInfo, ToolError> {
        let path = cx.path(&self.path)?;
        let info = path.info(self.follow_symlinks)?;
        let link_target = match info.kind {
            EntryType::Symlink => Some(path.read_link()?.to_string_lossy().into_owned()),
            _ => None,
        };
        Ok(PathInfo {
            path: self.path.as_str().to_owned(),
            kind: EntryKind::from(info.kind),
            size: info.size,
            modified: info.modified,
            permissions: format!("{:o}", info.mode & 0o7777),
            readonly: info.readonly,
            link_target,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use kyro_core::ToolError;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn describes_files_directories_and_links_without_following_them() {
        let ws = workspace();
        std::fs::write(ws.path().join("f|é.txt"), "12345").unwrap();
        std::fs::set_permissions(ws.path().join("f|é.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::create_dir(ws.path().join("d")).unwrap();
        symlink("f|é.txt", ws.path().join("link")).unwrap();
        let file = ok(call(ws.path(), "stat", json!({"path": "f|é.txt"})));
        assert_eq!((file["kind"].clone(), file["size"].clone()), (json!("file"), json!(5)));
        assert_eq!(file["permissions"], "640");
        assert!(file["modified"].as_i64().unwrap() > 1_600_000_000);
        assert_eq!(
            ok(call(ws.path(), "file_info", json!({"path": "d"})))["kind"],
            "directory"
        );
        let link = ok(call(ws.path(), "file_info", json!({"path": "link"})));
        assert_eq!(
            (link["kind"].clone(), link["link_target"].clone()),
            (json!("symlink"), json!("f|é.txt"))
        );
        let followed = ok(call(
            ws.path(),
            "file_info",
            json!({"path": "link", "follow_symlinks": true}),
        ));
        assert_eq!(followed["kind"], "file");
    }

    #[test]
    fn a_missing_path_is_not_found() {
        let ws = workspace();
        assert_eq!(
            failed(call(ws.path(), "file_info", json!({"path": "nope"}))),
            ToolError::NotFound { path: "nope".into() }
        );
    }
}
