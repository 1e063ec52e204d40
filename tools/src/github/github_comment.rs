//! `github_comment`: comment on an issue or pull request.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::json;

use super::client::{GitHub, text};

/// Add a comment to a GitHub issue or pull request.
#[tool(
    name = "github_comment",
    title = "Comment on GitHub",
    category = "github",
    effect = "network"
)]
pub struct GitHubComment {
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
    /// Issue or pull request number.
    #[schemars(range(min = 1))]
    pub number: u64,
    /// The comment (markdown).
    #[schemars(length(min = 1, max = 65536))]
    pub body: String,
}

/// The new comment.
#[kyro_core::output]
#[derive(Debug)]
pub struct Comment {
    /// Its id.
    pub id: u64,
    /// Web address.
    pub html_url: String,
}

impl Execute for GitHubComment {
    type Output = Comment;

    async fn run(self, cx: &ToolContext) -> Result<Comment, ToolError> {
        let path = format!("/repos/{}/{}/issues/{}/comments", self.owner, self.repo, self.number);
        let v = GitHub::from_env()
            .send(cx, "POST", &path, Some(&json!({"body": self.body})))?
            .body;
        Ok(Comment {
            id: v["id"].as_u64().unwrap_or(0),
            html_url: text(&v["html_url"]),
        })
    }
}
