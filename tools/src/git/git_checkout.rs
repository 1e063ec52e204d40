//! `git_checkout`: switch branches.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::runner::{Repo, revision};

/// Switch to a branch (or create it with `create`); refused when local changes would be overwritten.
/// Needs approval by default.
#[tool(
    name = "git_checkout",
    title = "Git checkout",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    approval = "required",
    idempotent = true,
)]
pub struct GitCheckout {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Branch to switch to.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub branch: String,
    /// Create it from HEAD first.
    #[serde(default)]
    pub create: bool,
}

/// Where HEAD is now.
#[kyro_core::output]
#[derive(Debug)]
pub struct CheckedOut {
    /// The branch.
    pub branch: String,
    /// The commit.
    pub sha: String,
}

impl Execute for GitCheckout {
    type Output = CheckedOut;

    async fn run(self, cx: &ToolContext) -> Result<CheckedOut, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let branch = revision(&self.branch)?;
        // `--create` takes the name as its value, so it cannot follow `--end-of-options`;
        // the name was checked not to start with `-` either way.
        if !self.create {
            // The branch itself: `switch` takes only a branch, where a bare name could
            // resolve to a tag of the same name.
            repo.refuse_kyro_from(cx, &[&format!("refs/heads/{branch}")])?;
        }
        let args = if self.create {
            vec!["switch", "--no-guess", "--create", branch]
        } else {
            vec!["switch", "--no-guess", "--end-of-options", branch]
        };
        repo.run(cx, &args, None)?;
        let sha = repo.run(cx, &["rev-parse", "HEAD"], None)?.trim().to_owned();
        Ok(CheckedOut {
            branch: branch.to_owned(),
            sha,
        })
    }
}
