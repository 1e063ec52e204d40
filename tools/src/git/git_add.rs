//! `git_add`: stage paths.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::runner::Repo;

/// Stage paths for the next commit (`["."]` stages everything).
#[tool(name = "git_add", title = "Git add", category = "git", effect = "write", capabilities = ["git.write"], destructive = false, idempotent = true)]
pub struct GitAdd {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Repo-relative paths.
    #[schemars(length(min = 1, max = 1000))]
    pub paths: Vec<String>,
}

/// What was staged.
#[kyro_core::output]
#[derive(Debug)]
pub struct Staged {
    /// The paths as given.
    pub paths: Vec<String>,
}

impl Execute for GitAdd {
    type Output = Staged;

    async fn run(self, cx: &ToolContext) -> Result<Staged, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let mut args = vec!["add", "--"];
        args.extend(self.paths.iter().map(String::as_str));
        repo.run(cx, &args, None)?;
        Ok(Staged { paths: self.paths })
    }
}
