//! `git_diff`: changes of the work tree, the index, or between revisions.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::diff_parse::{FileDiff, parse};
use super::runner::{Repo, revision};

/// Diff per file with hunks: work tree vs index (default), index vs HEAD (`staged`), or between
/// revisions (`base`, `target`).
#[tool(name = "git_diff", title = "Git diff", category = "git", effect = "read", capabilities = ["fs.read"])]
pub struct GitDiff {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Compare the index with HEAD.
    #[serde(default)]
    pub staged: bool,
    /// Revision to compare from.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub base: Option<String>,
    /// Revision to compare to (with `base`).
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub target: Option<String>,
    /// Only these repo-relative paths.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub paths: Vec<String>,
    /// Context lines; default 3.
    #[schemars(range(max = 100))]
    pub context: Option<u32>,
}

/// A diff.
#[kyro_core::output]
#[derive(Debug)]
pub struct Diff {
    /// Per file, in git's order.
    pub files: Vec<FileDiff>,
    /// The diff as text.
    pub text: String,
}

impl Execute for GitDiff {
    type Output = Diff;

    /// The unified diff as git printed it.
    fn text(d: &Diff) -> Option<String> {
        Some(if d.text.is_empty() {
            "(no changes)".into()
        } else {
            d.text.clone()
        })
    }

    async fn run(self, cx: &ToolContext) -> Result<Diff, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let context = format!("-U{}", self.context.unwrap_or(3));
        let mut args = vec!["diff", "--no-ext-diff", "--no-textconv", "--no-color", context.as_str()];
        if self.staged {
            args.push("--cached");
        }
        args.push("--end-of-options");
        if let Some(base) = &self.base {
            args.push(revision(base)?);
        }
        if let Some(target) = &self.target {
            args.push(revision(target)?);
        }
        args.push("--");
        args.extend(self.paths.iter().map(String::as_str));
        let text = repo.run(cx, &args, None)?;
        Ok(Diff {
            files: parse(&text),
            text,
        })
    }
}
