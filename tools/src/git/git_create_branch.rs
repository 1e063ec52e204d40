//! `git_create_branch`: create a local branch.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::git_branch::{Branches, branches};
use super::runner::{Repo, revision};

/// Create a local branch without switching to it.
#[tool(
    name = "git_create_branch",
    title = "Create a git branch",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    destructive = false,
)]
pub struct GitCreateBranch {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// New branch name.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub name: String,
    /// Branch, tag or commit to start at; default HEAD.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub start_point: Option<String>,
}

impl Execute for GitCreateBranch {
    type Output = Branches;

    async fn run(self, cx: &ToolContext) -> Result<Branches, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let start = revision(self.start_point.as_deref().unwrap_or("HEAD"))?;
        repo.run(cx, &["branch", "--end-of-options", revision(&self.name)?, start], None)?;
        branches(&repo, cx)
    }
}
