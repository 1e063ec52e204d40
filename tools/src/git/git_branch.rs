//! `git_branch`: list the local branches (read-only; `git_create_branch` and
//! `git_delete_branch` change them).

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::runner::Repo;

/// List local branches (commit, upstream) and the current one.
#[tool(name = "git_branch", title = "Git branches", category = "git", effect = "read")]
pub struct GitBranch {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
}

/// The local branches.
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
        branches(&repo, cx)
    }
}

/// The repository's local branches and the current one.
pub(crate) fn branches(repo: &Repo, cx: &ToolContext) -> Result<Branches, ToolError> {
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
