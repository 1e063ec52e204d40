//! `github_get_pull_request`: one pull request.

use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::client::{GitHub, login, text};

/// Get one GitHub pull request: title, state, branches, author, whether merged or draft.
#[tool(
    name = "github_get_pull_request",
    title = "Get GitHub pull request",
    category = "github.pull_requests",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct GitHubGetPullRequest {
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// Pull request number.
    #[schemars(range(min = 1))]
    pub number: u64,
}

/// A pull request.
#[kyro_core::output]
#[derive(Debug)]
pub struct PullRequest {
    /// Its number.
    pub number: u64,
    /// Title.
    pub title: String,
    /// `open` or `closed`.
    pub state: String,
    /// Body (markdown), empty when none.
    pub body: String,
    /// Author's login.
    pub author: String,
    /// The branch with the changes.
    pub head: String,
    /// The branch they go into.
    pub base: String,
    /// Whether it was merged.
    pub merged: bool,
    /// Whether it is a draft.
    pub draft: bool,
    /// Web address.
    pub html_url: String,
}

impl Execute for GitHubGetPullRequest {
    type Output = PullRequest;

    async fn run(self, cx: &ToolContext) -> Result<PullRequest, ToolError> {
        let path = format!("/repos/{}/{}/pulls/{}", self.owner, self.repo, self.number);
        let v = GitHub::from_env().send(cx, "GET", &path, None)?.body;
        Ok(PullRequest {
            number: v["number"].as_u64().unwrap_or(0),
            title: text(&v["title"]),
            state: text(&v["state"]),
            body: text(&v["body"]),
            author: login(&v["user"]),
            head: text(&v["head"]["ref"]),
            base: text(&v["base"]["ref"]),
            merged: v["merged"].as_bool().unwrap_or(false),
            draft: v["draft"].as_bool().unwrap_or(false),
            html_url: text(&v["html_url"]),
        })
    }
}
