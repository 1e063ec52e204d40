//! `list_directory`: the entries of one directory.

use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

const DEFAULT_LIMIT: u32 = 500;

/// List a directory's entries by name: kind, and size of files.
/// Symlinks are not followed.
#[tool(
    name = "list_directory",
    title = "List directory",
    category = "files",
    effect = "read",
    aliases = ["ls"]
)]
pub struct ListDirectory {
    /// Workspace-relative directory; default the root.
    pub path: Option<WorkspacePath>,
    /// Include names starting with `.`.
    #[serde(default)]
    pub include_hidden: bool,
    /// Most entries; default 500.
    #[schemars(range(min = 1, max = 5000))]
    pub limit: Option<u32>,
}

/// A directory's entries.
#[kyro_core::output]
#[derive(Debug)]
pub struct Listing {
    /// The directory, relative to the workspace root.
    pub path: String,
    /// Entries sorted by name.
    pub entries: Vec<DirectoryEntry>,
    /// True when more entries exist than were returned.
    pub truncated: bool,
}

/// One entry of a directory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DirectoryEntry {
    /// The entry's file name.
    pub name: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes, for files.
    pub size: Option<u64>,
}

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else (socket, device, fifo).
    Other,
}

impl From<EntryType> for EntryKind {
    fn from(kind: EntryType) -> EntryKind {
        match kind {
            EntryType::File => EntryKind::File,
            EntryType::Directory => EntryKind::Directory,
            EntryType::Symlink => EntryKind::Symlink,
            EntryType::Other => EntryKind::Other,
        }
    }
}

impl Execute for ListDirectory {
    type Output = Listing;

    /// One entry a line; directories end in `/`, sizes in bytes after files.
    fn text(l: &Listing) -> Option<String> {
        let mut out = format!("{}:\n", l.path);
        for e in &l.entries {
            match (e.kind, e.size) {
                (EntryKind::Directory, _) => out.push_str(&format!("{}/\n", e.name)),
                (EntryKind::Symlink, _) => out.push_str(&format!("{} (symlink)\n", e.name)),
                (_, Some(size)) => out.push_str(&format!("{}  {size} B\n", e.name)),
                (_, None) => out.push_str(&format!("{}\n", e.name)),
            }
        }
        if l.truncated {
            out.push_str("(more entries not shown)\n");
        }
        Some(out.trim_end().to_owned())
    }

    async fn run(self, cx: &ToolContext) -> Result<Listing, ToolError> {
        let path = cx.path(&self.path.unwrap_or_else(|| WorkspacePath::new(".")))?;
        let mut entries: Vec<DirectoryEntry> = path
            .read_dir()?
            .into_iter()
            .filter(|e| self.include_hidden || !e.name.starts_with('.'))
            .map(|e| DirectoryEntry {
                name: e.name,
                kind: EntryKind::from(e.kind),
                size: e.size,
            })
            .collect();
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT) as usize;
        let truncated = entries.len() > limit;
        entries.truncate(limit);
        Ok(Listing {
            path: path.display(),
            entries,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use kyro_core::ToolError;
    use serde_json::json;

    use kyro_core::policy::PathDenial;

    use crate::testing::{call, denied_path, failed, ok, workspace};

    #[test]
    fn lists_sorted_with_kinds_and_sizes() {
        let ws = workspace();
        std::fs::write(ws.path().join("b|pipe.txt"), "12345").unwrap();
        std::fs::create_dir(ws.path().join("a dir")).unwrap();
        std::fs::write(ws.path().join(".hidden"), "").unwrap();
        symlink("/etc", ws.path().join("link")).unwrap();
        let listing = ok(call(ws.path(), "ls", json!({})));
        assert_eq!(listing["path"], ".");
        assert_eq!(
            listing["entries"],
            json!([
                {"name": "a dir", "kind": "directory", "size": null},
                {"name": "b|pipe.txt", "kind": "file", "size": 5},
                {"name": "link", "kind": "symlink", "size": null},
            ])
        );
        let all = ok(call(ws.path(), "list_directory", json!({"include_hidden": true})));
        assert_eq!(all["entries"][0]["name"], ".hidden");
    }

    #[test]
    fn a_limit_truncates_and_says_so() {
        let ws = workspace();
        for i in 0..5 {
            std::fs::write(ws.path().join(format!("f{i}")), "").unwrap();
        }
        let listing = ok(call(ws.path(), "list_directory", json!({"path": ".", "limit": 2})));
        assert_eq!(listing["entries"].as_array().unwrap().len(), 2);
        assert_eq!(listing["truncated"], true);
    }

    #[test]
    fn files_missing_paths_and_escapes_are_typed_failures() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "").unwrap();
        assert_eq!(
            failed(call(ws.path(), "list_directory", json!({"path": "f"}))),
            ToolError::NotADirectory { path: "f".into() }
        );
        assert_eq!(
            failed(call(ws.path(), "list_directory", json!({"path": "nope"}))),
            ToolError::NotFound { path: "nope".into() }
        );
        assert_eq!(
            denied_path(call(ws.path(), "list_directory", json!({"path": ".."}))),
            PathDenial::OutsideRoots
        );
    }
}
