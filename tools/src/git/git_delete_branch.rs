//! `git_delete_branch`: delete a merged local branch.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::git_branch::{Branches, branches};
use super::runner::{Repo, revision};

/// Delete a local branch, only if merged.
#[tool(
    name = "git_delete_branch",
    title = "Delete a git branch",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    idempotent = true,
)]
pub struct GitDeleteBranch {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Branch to delete.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub name: String,
}

impl Execute for GitDeleteBranch {
    type Output = Branches;

    async fn run(self, cx: &ToolContext) -> Result<Branches, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        repo.run(
            cx,
            &["branch", "--delete", "--end-of-options", revision(&self.name)?],
            None,
        )?;
        branches(&repo, cx)
    }
}
