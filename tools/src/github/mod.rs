//! GitHub: issues and pull requests over the REST API, at a configurable base URL
//! (`KYRO_GITHUB_API_URL`, default `https://api.github.com`) with a token from the
//! environment (`GITHUB_TOKEN` or `GH_TOKEN`).

mod client;
mod github_comment;
mod github_create_issue;
mod github_get_issue;
mod github_get_pull_request;
mod github_list_issues;

pub use github_comment::{Comment, GitHubComment};
pub use github_create_issue::GitHubCreateIssue;
pub use github_get_issue::{GitHubGetIssue, Issue};
pub use github_get_pull_request::{GitHubGetPullRequest, PullRequest};
pub use github_list_issues::{GitHubListIssues, IssuePage, IssueState};
