//! `git_commit`: commit the index.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::runner::Repo;

/// Commit what is staged.
/// Hooks never run. Needs approval by default.
#[tool(
    name = "git_commit",
    title = "Git commit",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    approval = "required",
    destructive = false,
)]
pub struct GitCommit {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Commit message.
    #[schemars(length(min = 1, max = 20000))]
    pub message: String,
    /// Allow a commit with no changes.
    #[serde(default)]
    pub allow_empty: bool,
}

/// The new commit.
#[kyro_core::output]
#[derive(Debug)]
pub struct Committed {
    /// Its hash.
    pub sha: String,
    /// Its subject line.
    pub subject: String,
}

impl Execute for GitCommit {
    type Output = Committed;

    async fn run(self, cx: &ToolContext) -> Result<Committed, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let mut args: Vec<&str> = repo.identity(cx).to_vec();
        args.extend(["commit", "--no-verify", "--file=-"]);
        if self.allow_empty {
            args.push("--allow-empty");
        }
        repo.run(cx, &args, Some(&self.message))?;
        let sha = repo.run(cx, &["rev-parse", "HEAD"], None)?.trim().to_owned();
        Ok(Committed {
            sha,
            subject: self.message.lines().next().unwrap_or_default().to_owned(),
        })
    }
}
