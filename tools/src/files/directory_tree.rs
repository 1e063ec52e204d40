//! `directory_tree`: a directory's contents several levels deep.

use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::list_directory::EntryKind;
use super::walk::{WalkOptions, walk};

const DEFAULT_DEPTH: u32 = 3;
const DEFAULT_LIMIT: u32 = 1000;

/// Show a directory's tree as an indented outline and a list.
/// Respects .gitignore and skips hidden entries by default; symlinks are not followed.
#[tool(name = "directory_tree", title = "Directory tree", category = "files", effect = "read", aliases = ["tree"])]
pub struct DirectoryTree {
    /// Workspace-relative directory; default the root.
    pub path: Option<WorkspacePath>,
    /// Levels to descend; default 3.
    #[schemars(range(min = 1, max = 10))]
    pub max_depth: Option<u32>,
    /// Include names starting with `.`.
    #[serde(default)]
    pub include_hidden: bool,
    /// Skip what .gitignore and .ignore exclude.
    #[serde(default = "super::yes")]
    pub respect_gitignore: bool,
    /// Most entries; default 1000.
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<u32>,
}

/// A directory tree.
#[kyro_core::output]
#[derive(Debug)]
pub struct Tree {
    /// The directory, relative to the workspace root.
    pub path: String,
    /// An indented outline, directories ending in `/`.
    pub tree: String,
    /// The entries in outline order.
    pub entries: Vec<TreeEntry>,
    /// True when more entries exist than were returned.
    pub truncated: bool,
}

/// One entry of a tree.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TreeEntry {
    /// Path relative to the workspace root.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Depth below the directory shown (1 for its children).
    pub depth: u32,
}

impl Execute for DirectoryTree {
    type Output = Tree;

    /// The tree as drawn.
    fn text(t: &Tree) -> Option<String> {
        let mut out = t.tree.trim_end().to_owned();
        if t.truncated {
            out.push_str("\n(more entries not shown)");
        }
        Some(out)
    }

    async fn run(self, cx: &ToolContext) -> Result<Tree, ToolError> {
        let root = cx.path(&self.path.unwrap_or_else(|| WorkspacePath::new(".")))?;
        if root.entry_type()? != Some(EntryType::Directory) {
            return Err(ToolError::NotADirectory {
                path: root.given().to_owned(),
            });
        }
        let options = WalkOptions {
            include_hidden: self.include_hidden,
            respect_gitignore: self.respect_gitignore,
            max_depth: Some(self.max_depth.unwrap_or(DEFAULT_DEPTH) as usize),
        };
        let walked = walk(&root, &options, cx.stop())?;
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT) as usize;
        let truncated = walked.len() > limit;
        let mut tree = String::new();
        let mut entries = Vec::new();
        for w in walked.into_iter().take(limit) {
            let name = w
                .path
                .relative()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let slash = if w.kind == EntryType::Directory { "/" } else { "" };
            tree.push_str(&format!("{}{name}{slash}\n", "  ".repeat(w.depth - 1)));
            entries.push(TreeEntry {
                path: w.path.display(),
                kind: EntryKind::from(w.kind),
                depth: w.depth as u32,
            });
        }
        Ok(Tree {
            path: root.display(),
            tree,
            entries,
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{call, ok, workspace};

    fn setup() -> tempfile::TempDir {
        let ws = workspace();
        for dir in ["src/a/deep/deeper", ".hidden", "target"] {
            std::fs::create_dir_all(ws.path().join(dir)).unwrap();
        }
        std::fs::write(ws.path().join("src/main|é.rs"), "").unwrap();
        std::fs::write(ws.path().join("src/a/deep/deeper/x"), "").unwrap();
        std::fs::write(ws.path().join(".gitignore"), "target/\n").unwrap();
        ws
    }

    #[test]
    fn outlines_to_the_depth_asked_honouring_gitignore_and_hidden() {
        let ws = setup();
        let tree = ok(call(ws.path(), "tree", json!({"max_depth": 3})));
        assert_eq!(tree["tree"], "src/\n  a/\n    deep/\n  main|é.rs\n");
        assert_eq!(tree["entries"][3]["path"], "src/main|é.rs");
        let all = ok(call(
            ws.path(),
            "directory_tree",
            json!({"include_hidden": true, "respect_gitignore": false, "max_depth": 1}),
        ));
        assert_eq!(all["tree"], ".gitignore\n.hidden/\nsrc/\ntarget/\n");
    }

    #[test]
    fn a_limit_truncates() {
        let ws = setup();
        let tree = ok(call(ws.path(), "directory_tree", json!({"limit": 2, "max_depth": 5})));
        assert_eq!(tree["entries"].as_array().unwrap().len(), 2);
        assert_eq!(tree["truncated"], true);
    }
}
