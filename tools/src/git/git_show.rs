//! `git_show`: one commit with its changes.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::diff_parse::{FileDiff, parse};
use super::git_log::{Commit, FORMAT, parse_commits};
use super::runner::{Repo, revision};

/// Show one commit: its metadata, full message and changes per file.
#[tool(name = "git_show", title = "Git show", category = "git", effect = "read", capabilities = ["fs.read"])]
pub struct GitShow {
    /// The repository, relative to the workspace root; default the root.
    pub repo: Option<WorkspacePath>,
    /// The commit.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub revision: String,
}

/// A commit and its changes.
#[kyro_core::output]
#[derive(Debug)]
pub struct Shown {
    /// The commit.
    pub commit: Commit,
    /// The full message.
    pub message: String,
    /// The changes, per file.
    pub files: Vec<FileDiff>,
}

impl Execute for GitShow {
    type Output = Shown;

    async fn run(self, cx: &ToolContext) -> Result<Shown, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let rev = revision(&self.revision)?;
        let head = repo.run(
            cx,
            &["log", FORMAT, "--max-count=1", "--end-of-options", rev, "--"],
            None,
        )?;
        let commit = parse_commits(&head).into_iter().next().ok_or_else(|| Failure::Git {
            command: "show".into(),
            message: format!("no commit `{rev}`"),
        })?;
        let message = repo.run(
            cx,
            &["log", "--format=%B", "--max-count=1", "--end-of-options", rev, "--"],
            None,
        )?;
        let diff = repo.run(
            cx,
            &[
                "show",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--format=",
                "--end-of-options",
                rev,
                "--",
            ],
            None,
        )?;
        Ok(Shown {
            commit,
            message: message.trim_end().to_owned(),
            files: parse(&diff),
        })
    }
}
