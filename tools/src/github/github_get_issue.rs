//! `github_get_issue`: one issue.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::Value;

use super::client::{GitHub, login, text};

/// Get one GitHub issue (or pull request seen as an issue): title, state, body, labels.
#[tool(
    name = "github_get_issue",
    title = "Get GitHub issue",
    category = "github",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct GitHubGetIssue {
    /// Repository owner (user or organization).
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
    /// Issue number.
    #[schemars(range(min = 1))]
    pub number: u64,
}

/// An issue.
#[kyro_core::output]
#[derive(Debug)]
pub struct Issue {
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
    /// Label names.
    pub labels: Vec<String>,
    /// Number of comments.
    pub comments: u64,
    /// True when it is a pull request.
    pub is_pull_request: bool,
    /// Web address.
    pub html_url: String,
}

impl Issue {
    pub(crate) fn from_json(v: &Value) -> Issue {
        Issue {
            number: v["number"].as_u64().unwrap_or(0),
            title: text(&v["title"]),
            state: text(&v["state"]),
            body: text(&v["body"]),
            author: login(&v["user"]),
            labels: v["labels"]
                .as_array()
                .map(|ls| {
                    ls.iter()
                        .filter_map(|l| l["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            comments: v["comments"].as_u64().unwrap_or(0),
            is_pull_request: v.get("pull_request").is_some_and(|p| !p.is_null()),
            html_url: text(&v["html_url"]),
        }
    }
}

impl Execute for GitHubGetIssue {
    type Output = Issue;

    async fn run(self, cx: &ToolContext) -> Result<Issue, ToolError> {
        let path = format!("/repos/{}/{}/issues/{}", self.owner, self.repo, self.number);
        let answer = GitHub::from_env().send(cx, "GET", &path, None)?;
        Ok(Issue::from_json(&answer.body))
    }
}
