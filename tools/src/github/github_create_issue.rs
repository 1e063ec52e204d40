//! `github_create_issue`: open an issue.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::json;

use super::client::GitHub;
use super::github_get_issue::Issue;

/// Open a new issue in a GitHub repository.
#[tool(
    name = "github_create_issue",
    title = "Create GitHub issue",
    category = "github",
    effect = "network"
)]
pub struct GitHubCreateIssue {
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
    /// Title.
    #[schemars(length(min = 1, max = 256))]
    pub title: String,
    /// Body (markdown).
    #[schemars(length(max = 65536))]
    pub body: Option<String>,
    /// Label names.
    #[serde(default)]
    #[schemars(length(max = 20))]
    pub labels: Vec<String>,
}

impl Execute for GitHubCreateIssue {
    type Output = Issue;

    async fn run(self, cx: &ToolContext) -> Result<Issue, ToolError> {
        let path = format!("/repos/{}/{}/issues", self.owner, self.repo);
        let body = json!({"title": self.title, "body": self.body, "labels": self.labels});
        let answer = GitHub::from_env().send(cx, "POST", &path, Some(&body))?;
        Ok(Issue::from_json(&answer.body))
    }
}
