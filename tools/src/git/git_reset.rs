//! `git_reset`: unstage paths, or move HEAD (and with `hard`, the work tree).

use kyro_core::policy::{MatchedRule, Scope};
use kyro_core::{Effect, Execute, ToolContext, ToolError, WorkspacePath, input, tool};

use super::runner::{Repo, revision};
use crate::Failure;

/// Unstage `paths` (index only), or move the current branch to `target` by `mode`.
/// Unstaging follows the write rule, as `git_add`; moving HEAD needs approval.
#[tool(
    name = "git_reset",
    title = "Git reset",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    approval = "required",
    destructive = true,
)]
pub struct GitReset {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Repo-relative paths to unstage (index entries set from `target`); then nothing else changes
    /// and `mode` must be `mixed`.
    #[schemars(length(max = 1000))]
    #[serde(default)]
    pub paths: Vec<String>,
    /// Commit to reset to; default `HEAD`.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub target: Option<String>,
    /// `mixed` (default: HEAD and index), `soft` (HEAD only), `keep` (also changed files, refusing
    /// to lose local changes) or `hard` (also the work tree: local changes to tracked files are
    /// lost).
    #[serde(default)]
    pub mode: ResetMode,
}

/// How far a reset reaches.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResetMode {
    /// HEAD only.
    Soft,
    /// HEAD and the index (the default).
    #[default]
    Mixed,
    /// HEAD, the index and the files that differ, refusing to lose local changes.
    Keep,
    /// HEAD, the index and the work tree: local changes to tracked files are lost.
    Hard,
}

impl ResetMode {
    fn flag(self) -> &'static str {
        match self {
            ResetMode::Soft => "--soft",
            ResetMode::Mixed => "--mixed",
            ResetMode::Keep => "--keep",
            ResetMode::Hard => "--hard",
        }
    }
}

impl GitReset {
    /// True when the call only changes the index: paths given, or a mixed reset to HEAD.
    fn only_unstages(&self) -> bool {
        let to_head = self.target.as_deref().is_none_or(|t| t == "HEAD");
        self.mode == ResetMode::Mixed && (!self.paths.is_empty() || to_head)
    }
}

/// Where HEAD is after the reset, and what is still staged.
#[kyro_core::output]
#[derive(Debug)]
pub struct Reset {
    /// HEAD before, when the repository had a commit.
    pub head_before: Option<String>,
    /// HEAD after.
    pub head: Option<String>,
    /// The paths still staged, relative to the repository.
    pub staged: Vec<String>,
}

impl Execute for GitReset {
    type Output = Reset;

    fn text(out: &Reset) -> Option<String> {
        let head = |h: &Option<String>| h.as_deref().map_or("(no commit)", |h| &h[..h.len().min(12)]).to_owned();
        let mut text = if out.head_before == out.head {
            format!("HEAD stays at {}", head(&out.head))
        } else {
            format!("HEAD moved from {} to {}", head(&out.head_before), head(&out.head))
        };
        if out.staged.is_empty() {
            text.push_str("; nothing is staged");
        } else {
            text.push_str(&format!("; still staged: {}", out.staged.join(", ")));
        }
        Some(text)
    }

    async fn run(self, cx: &ToolContext) -> Result<Reset, ToolError> {
        if !self.paths.is_empty() && self.mode != ResetMode::Mixed {
            return Err(Failure::InvalidRequest {
                message: "paths are unstaged with the mixed mode only; drop `mode`, or `paths` to move HEAD".to_owned(),
            }
            .into());
        }
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let head_before = head(&repo, cx);
        let target = match &self.target {
            Some(t) => Some(revision(t)?),
            None => None,
        };
        // Every mode: a soft or mixed reset to such a commit would have the next stash or
        // checkout write it.
        repo.refuse_kyro_from(cx, &[target.unwrap_or("HEAD")])?;
        let mut args = vec!["reset", "--quiet"];
        if self.paths.is_empty() && self.only_unstages() {
            // Every path, as a pathspec: a reset without one would also drop a merge or
            // cherry-pick in progress (MERGE_HEAD and its message), which is not unstaging.
            args.extend(["--", ":/"]);
        } else if self.paths.is_empty() {
            args.push(self.mode.flag());
            args.push("--end-of-options");
            args.extend(target);
        } else {
            args.extend(target.map(|t| ["--end-of-options", t]).into_iter().flatten());
            args.push("--");
            args.extend(self.paths.iter().map(String::as_str));
        }
        repo.run(cx, &args, None)?;
        let staged = repo
            .run(cx, &["diff", "--cached", "--name-only", "-z"], None)
            .unwrap_or_default()
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(Reset {
            head_before,
            head: head(&repo, cx),
            staged,
        })
    }

    /// A reset that only unstages changes the index alone: it follows the policy's write
    /// rule (as `git_add` does) instead of asking.
    fn rule(&self, scope: &Scope) -> Option<MatchedRule> {
        self.only_unstages().then(|| MatchedRule {
            decision: scope.approvals().for_effect(Effect::Write),
            rule: "git_reset that only unstages follows the write rule".to_owned(),
            each_call: false,
        })
    }
}

/// HEAD's commit, or `None` in a repository without one.
fn head(repo: &Repo, cx: &ToolContext) -> Option<String> {
    repo.run(cx, &["rev-parse", "--verify", "--quiet", "HEAD"], None)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}
