//! Git: the real `git` binary run by argv, hardened (no hooks, no fsmonitor, no global or
//! system config, no pager, no prompts), with every revision checked and `--end-of-options`
//! before it and `--` before paths. The repository must lie inside the workspace.

mod diff_parse;
mod git_add;
mod git_blame;
mod git_branch;
mod git_checkout;
mod git_commit;
mod git_create_branch;
mod git_delete_branch;
mod git_diff;
mod git_log;
mod git_reset;
mod git_show;
mod git_stash;
mod git_status;
mod git_tag;
mod runner;

pub(crate) use runner::{FIXED, neutral_value};

pub use diff_parse::{FileDiff, Hunk};
pub use git_add::{GitAdd, Staged};
pub use git_blame::{BlameLine, Blamed, GitBlame};
pub use git_branch::{Branch, Branches, GitBranch};
pub use git_checkout::{CheckedOut, GitCheckout};
pub use git_commit::{Committed, GitCommit};
pub use git_create_branch::GitCreateBranch;
pub use git_delete_branch::GitDeleteBranch;
pub use git_diff::{Diff, GitDiff};
pub use git_log::{Commit, GitLog, History};
pub use git_reset::{GitReset, Reset, ResetMode};
pub use git_show::{GitShow, Shown};
pub use git_stash::{GitStash, Stash, StashAction, Stashes};
pub use git_status::{GitStatus, Status, StatusEntry};
pub use git_tag::{GitTag, Tag, TagAction, Tags};
