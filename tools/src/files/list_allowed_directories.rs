//! `list_allowed_directories`: the roots this call may touch, and how.

use kyro_core::policy::Access;
use kyro_core::{Execute, ToolContext, ToolError, tool};

/// List the roots this call may read or write, with their access.
/// Relative paths resolve against the first; absolute ones must lie inside one. Writes into `.git`
/// and `.kyro` are refused.
#[tool(
    name = "list_allowed_directories",
    title = "List allowed directories",
    category = "files",
    effect = "none"
)]
pub struct ListAllowedDirectories {}

/// The roots of the call.
#[kyro_core::output]
#[derive(Debug)]
pub struct AllowedDirectories {
    /// Each root, the first being where relative paths resolve.
    pub roots: Vec<AllowedDirectory>,
}

/// One root.
#[kyro_core::output]
#[derive(Debug)]
pub struct AllowedDirectory {
    /// The root's absolute path on the host.
    pub path: String,
    /// `read` or `read_write`.
    pub access: String,
}

impl Execute for ListAllowedDirectories {
    type Output = AllowedDirectories;

    /// One root per line, its access after it, as the reference server lists them.
    fn text(out: &AllowedDirectories) -> Option<String> {
        let mut text = String::from("Allowed directories (relative paths resolve in the first):");
        for root in &out.roots {
            let access = if root.access == "read" {
                "read only"
            } else {
                "read and write"
            };
            text.push_str(&format!("\n{} ({access})", root.path));
        }
        Some(text)
    }

    async fn run(self, cx: &ToolContext) -> Result<AllowedDirectories, ToolError> {
        let roots = cx
            .scope()
            .roots()
            .iter()
            .map(|root| AllowedDirectory {
                path: root.path().to_string_lossy().into_owned(),
                access: match root.access() {
                    Access::Read => "read",
                    Access::ReadWrite => "read_write",
                }
                .to_owned(),
            })
            .collect();
        Ok(AllowedDirectories { roots })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{call, ok, workspace};

    #[test]
    fn lists_the_workspace_with_its_access() {
        let ws = workspace();
        let listed = ok(call(ws.path(), "list_allowed_directories", json!({})));
        let root = ws.path().canonicalize().unwrap();
        assert_eq!(
            listed["roots"],
            json!([{"path": root.to_string_lossy(), "access": "read_write"}])
        );
    }
}
