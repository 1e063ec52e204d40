//! `git_show`: one commit with its changes.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::diff_parse::{FileDiff, parse};
use super::git_log::{Commit, FORMAT, parse_commits};
use super::runner::{Repo, revision};

/// Show one commit: metadata, full message and changes per file.
#[tool(name = "git_show", title = "Git show", category = "git", effect = "read", capabilities = ["fs.read"])]
pub struct GitShow {
    /// Workspace-relative repo; default the root.
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

    /// As `git show` prints it: the commit header, the message indented, then the diff.
    fn text(shown: &Shown) -> Option<String> {
        let c = &shown.commit;
        let mut out = format!(
            "commit {}\nAuthor: {} <{}>\nDate:   {}\n\n",
            c.sha, c.author, c.email, c.date
        );
        for line in shown.message.trim_end().lines() {
            out.push_str(&format!("    {line}\n"));
        }
        for file in &shown.files {
            let old = file
                .old_path
                .as_deref()
                .map_or("/dev/null".to_owned(), |p| format!("a/{p}"));
            let new = file
                .new_path
                .as_deref()
                .map_or("/dev/null".to_owned(), |p| format!("b/{p}"));
            out.push_str(&format!("\n--- {old}\n+++ {new}\n"));
            if file.binary {
                out.push_str("(binary file)\n");
            }
            for hunk in &file.hunks {
                out.push_str(&hunk.header);
                out.push('\n');
                for line in &hunk.lines {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        Some(out.trim_end().to_owned())
    }

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
