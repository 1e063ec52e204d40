//! `git_stash`: set local changes aside, list them, bring them back or drop them.

use kyro_core::policy::{ApprovalRule, MatchedRule, Scope};
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, input, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::runner::Repo;
use crate::Failure;

/// Stash local changes (`push`), `list` stashes, `pop` one (apply and drop) or `drop` it.
/// A conflicting pop keeps the stash; a drop loses its changes and needs approval.
#[tool(
    name = "git_stash",
    title = "Git stash",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    destructive = true,
)]
pub struct GitStash {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// `push`, `list`, `pop` or `drop`.
    pub action: StashAction,
    /// Stash message (push).
    #[schemars(length(max = 1000))]
    pub message: Option<String>,
    /// Stash untracked files too (push).
    #[serde(default)]
    pub include_untracked: bool,
    /// Stash for pop and drop; default 0, the newest.
    #[schemars(range(max = 10000))]
    pub index: Option<u32>,
}

/// What `git_stash` does.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StashAction {
    /// Set the local changes aside.
    Push,
    /// List the stashes.
    List,
    /// Apply a stash and drop it.
    Pop,
    /// Drop a stash.
    Drop,
}

/// The stashes after the action.
#[kyro_core::output]
#[derive(Debug)]
pub struct Stashes {
    /// What was done, in a few words.
    pub done: String,
    /// The stashes, newest first.
    pub stashes: Vec<Stash>,
}

/// One stash.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Stash {
    /// Its index (`stash@{index}`).
    pub index: u32,
    /// Its commit.
    pub sha: String,
    /// Its message (`WIP on main: ...` when none was given).
    pub message: String,
}

impl Execute for GitStash {
    type Output = Stashes;

    fn text(out: &Stashes) -> Option<String> {
        let mut text = out.done.clone();
        if out.stashes.is_empty() {
            text.push_str("\nno stashes");
        }
        for s in &out.stashes {
            text.push_str(&format!(
                "\nstash@{{{}}} {} {}",
                s.index,
                &s.sha[..s.sha.len().min(12)],
                s.message
            ));
        }
        Some(text)
    }

    async fn run(self, cx: &ToolContext) -> Result<Stashes, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let index = self.index.unwrap_or(0);
        let reference = format!("stash@{{{index}}}");
        let done = match self.action {
            StashAction::List => "stashes".to_owned(),
            StashAction::Push => {
                let mut args = repo.identity(cx).to_vec();
                args.extend(["stash", "push", "--quiet"]);
                if self.include_untracked {
                    args.push("--include-untracked");
                }
                if let Some(message) = &self.message {
                    args.extend(["--message", message]);
                }
                // A push resets the work tree to HEAD: never to one (or with an index)
                // holding `.kyro`.
                repo.refuse_kyro_from(cx, &["HEAD"])?;
                repo.refuse_kyro_in_index(cx)?;
                let before = list(&repo, cx)?.len();
                repo.run(cx, &args, None)?;
                if list(&repo, cx)?.len() == before {
                    return Err(Failure::InvalidRequest {
                        message: "there are no local changes to stash".to_owned(),
                    }
                    .into());
                }
                "stashed the local changes as stash@{0}".to_owned()
            }
            StashAction::Pop | StashAction::Drop => {
                let stashes = list(&repo, cx)?;
                if index as usize >= stashes.len() {
                    return Err(Failure::InvalidRequest {
                        message: format!("there is no {reference}: {} stashes", stashes.len()),
                    }
                    .into());
                }
                let verb = if self.action == StashAction::Pop { "pop" } else { "drop" };
                if verb == "pop" {
                    // The stash's work tree and, when it kept them, its untracked files.
                    let untracked = format!("{reference}^3");
                    repo.refuse_kyro_from(cx, &[&reference, &untracked])?;
                }
                repo.run(cx, &["stash", verb, "--quiet", &reference], None)?;
                format!("{}ped {reference}", if verb == "pop" { "pop" } else { "dropp" })
            }
        };
        Ok(Stashes {
            done,
            stashes: list(&repo, cx)?,
        })
    }

    /// A drop loses the stash's changes: it is asked, whatever the write rule says.
    fn rule(&self, _scope: &Scope) -> Option<MatchedRule> {
        (self.action == StashAction::Drop).then(|| MatchedRule {
            decision: ApprovalRule::Ask,
            rule: "git_stash drop loses the stash and is asked".to_owned(),
            each_call: true,
        })
    }
}

/// The stashes, newest first.
fn list(repo: &Repo, cx: &ToolContext) -> Result<Vec<Stash>, ToolError> {
    let listed = repo.run(cx, &["stash", "list", "--format=%H%x1f%gs"], None)?;
    Ok(listed
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let (sha, message) = line.split_once('\x1f')?;
            Some(Stash {
                index: i as u32,
                sha: sha.to_owned(),
                message: message.to_owned(),
            })
        })
        .collect())
}
