//! `git_branch`: list, create or delete branches.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::runner::{Repo, revision};

/// List branches, or create or delete one. Creating does not switch to it (see `git_checkout`).
#[tool(name = "git_branch", title = "Git branch", category = "git", effect = "write", capabilities = ["git.write"])]
pub struct GitBranch {
    /// The repository, relative to the workspace root; default the root.
    pub repo: Option<WorkspacePath>,
    /// `list` (default), `create` or `delete`.
    #[serde(default)]
    pub action: BranchAction,
    /// The branch to create or delete.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub name: Option<String>,
    /// Where a new branch starts; default HEAD.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub start_point: Option<String>,
}

/// What to do with branches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BranchAction {
    /// List them.
    #[default]
    List,
    /// Create one.
    Create,
    /// Delete one (only when merged).
    Delete,
}

/// The branches after the action.
#[kyro_core::output]
#[derive(Debug)]
pub struct Branches {
    /// The current branch; absent when detached.
    pub current: Option<String>,
    /// Local branches.
    pub branches: Vec<Branch>,
}

/// One branch.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Branch {
    /// Its name.
    pub name: String,
    /// The commit it points to.
    pub sha: String,
    /// Its upstream, when set.
    pub upstream: Option<String>,
}

impl Execute for GitBranch {
    type Output = Branches;

    async fn run(self, cx: &ToolContext) -> Result<Branches, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let name = || {
            self.name.as_deref().ok_or_else(|| Failure::InvalidRequest {
                message: "`name` is required to create or delete a branch".into(),
            })
        };
        match self.action {
            BranchAction::List => {}
            BranchAction::Create => {
                let start = revision(self.start_point.as_deref().unwrap_or("HEAD"))?;
                repo.run(cx, &["branch", "--end-of-options", revision(name()?)?, start], None)?;
            }
            BranchAction::Delete => {
                repo.run(
                    cx,
                    &["branch", "--delete", "--end-of-options", revision(name()?)?],
                    None,
                )?;
            }
        }
        let listed = repo.run(
            cx,
            &[
                "for-each-ref",
                "--format=%(refname:short)%1f%(objectname)%1f%(upstream:short)",
                "refs/heads",
            ],
            None,
        )?;
        let branches = listed
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split('\u{1f}').collect();
                (f.len() == 3).then(|| Branch {
                    name: f[0].to_owned(),
                    sha: f[1].to_owned(),
                    upstream: (!f[2].is_empty()).then(|| f[2].to_owned()),
                })
            })
            .collect();
        let current = repo.run(cx, &["branch", "--show-current"], None)?.trim().to_owned();
        Ok(Branches {
            current: (!current.is_empty()).then_some(current),
            branches,
        })
    }
}
