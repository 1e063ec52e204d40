//! `git_create_branch`: create a local branch.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::git_branch::{Branches, branches};
use super::runner::{Repo, revision};

/// Create a local branch at a commit (default HEAD). It does not switch to it (see
/// `git_checkout`). Returns the branches after.
#[tool(
    name = "git_create_branch",
    title = "Create a git branch",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    destructive = false,
)]
pub struct GitCreateBranch {
    /// The repository, relative to the workspace root; default the root.
    pub repo: Option<WorkspacePath>,
    /// The new branch's name.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub name: String,
    /// Where it starts (a branch, tag or commit); default HEAD.
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
