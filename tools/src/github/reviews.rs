//! GitHub's `pull_requests` toolset, reviewing: write a review, comment in a pending one,
//! reply to a comment on a line.

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::{GitHub, invalid};
use super::issue_write::Comment;
use super::pull_read::Review;
use super::wire::{CommentWire, ReviewWire, User, graphql, list};

/// What to do with a review.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReviewMethod {
    /// Start one: pending without `event`, submitted with it.
    Create,
    /// Submit your pending one with `event`.
    SubmitPending,
    /// Delete your pending one.
    DeletePending,
}

/// `APPROVE`, `REQUEST_CHANGES` or `COMMENT`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewEvent {
    /// Approve.
    #[serde(rename = "APPROVE")]
    Approve,
    /// Ask for changes.
    #[serde(rename = "REQUEST_CHANGES")]
    RequestChanges,
    /// Comment only.
    #[serde(rename = "COMMENT")]
    Comment,
}

impl ReviewEvent {
    fn name(self) -> &'static str {
        match self {
            ReviewEvent::Approve => "APPROVE",
            ReviewEvent::RequestChanges => "REQUEST_CHANGES",
            ReviewEvent::Comment => "COMMENT",
        }
    }
}

/// Review a GitHub pull request: create, submit or delete your pending review.
#[tool(
    name = "github_pull_request_review_write",
    title = "Review a GitHub pull request",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["pull_request_review_write"]
)]
pub struct GitHubPullRequestReviewWrite {
    /// `create` (pending without `event`, for `github_add_comment_to_pending_review`; submitted
    /// with it), `submit_pending` (with `event`) or `delete_pending`.
    pub method: ReviewMethod,
    /// Repo owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repo name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// PR number.
    #[tool(alias = "pullNumber")]
    #[schemars(range(min = 1))]
    pub pull_number: u64,
    /// Review text.
    #[schemars(length(max = 65536))]
    pub body: Option<String>,
    /// The verdict.
    pub event: Option<ReviewEvent>,
    /// Commit reviewed; default the head.
    #[tool(alias = "commitID")]
    #[schemars(regex(pattern = "^[0-9a-f]{40,64}$"))]
    pub commit_id: Option<String>,
}

/// The caller's pending review of `pull`, by id.
fn pending_review(github: &GitHub, cx: &ToolContext, pull: &str) -> Result<u64, ToolError> {
    let me = github.send(cx, "GET", "/user", None)?.parse::<User>()?.login;
    let reviews = github.send(cx, "GET", &format!("{pull}/reviews?per_page=100"), None)?;
    list::<ReviewWire>(&reviews)?
        .into_iter()
        .find(|r| r.state == "PENDING" && r.user.as_ref().is_some_and(|u| u.login == me))
        .map(|r| r.id)
        .ok_or_else(|| {
            invalid(format!(
                "{me} has no pending review here; start one with `method: create` and no `event`"
            ))
        })
}

impl Execute for GitHubPullRequestReviewWrite {
    type Output = Review;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Review, ToolError> {
        let github = GitHub::for_call(cx)?;
        let pull = format!("/repos/{}/{}/pulls/{}", self.owner, self.repo, self.pull_number);
        let review = match self.method {
            ReviewMethod::Create => {
                let mut body = Map::new();
                if let Some(event) = self.event {
                    body.insert("event".into(), json!(event.name()));
                }
                for (key, value) in [("body", &self.body), ("commit_id", &self.commit_id)] {
                    if let Some(value) = value {
                        body.insert(key.into(), json!(value));
                    }
                }
                github.send(cx, "POST", &format!("{pull}/reviews"), Some(&Value::Object(body)))?
            }
            ReviewMethod::SubmitPending => {
                let Some(event) = self.event else {
                    return Err(invalid(
                        "submit_pending needs an `event`: APPROVE, REQUEST_CHANGES or COMMENT",
                    ));
                };
                let id = pending_review(&github, cx, &pull)?;
                let mut body = json!({"event": event.name()});
                if let Some(text) = &self.body {
                    body["body"] = json!(text);
                }
                github.send(cx, "POST", &format!("{pull}/reviews/{id}/events"), Some(&body))?
            }
            ReviewMethod::DeletePending => {
                let id = pending_review(&github, cx, &pull)?;
                github.send(cx, "DELETE", &format!("{pull}/reviews/{id}"), None)?
            }
        };
        Ok(review.parse::<ReviewWire>()?.into())
    }
}

/// `LEFT` (old file) or `RIGHT` (new file).
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The old file (a removed line).
    #[serde(rename = "LEFT")]
    Left,
    /// The new file (an added or unchanged line).
    #[serde(rename = "RIGHT")]
    Right,
}

/// What a review comment is on.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectType {
    /// The whole file.
    #[serde(rename = "FILE")]
    File,
    /// A line, or lines from `start_line` to `line`.
    #[serde(rename = "LINE")]
    Line,
}

/// Add a file or line comment to your pending review of a GitHub pull request (see
/// `github_pull_request_review_write`); published on submit.
#[tool(
    name = "github_add_comment_to_pending_review",
    title = "Comment in a pending GitHub review",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["add_comment_to_pending_review"]
)]
pub struct GitHubAddCommentToPendingReview {
    /// Repo owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repo name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// PR number.
    #[tool(alias = "pullNumber")]
    #[schemars(range(min = 1))]
    pub pull_number: u64,
    /// File path.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// The comment.
    #[schemars(length(min = 1, max = 65536))]
    pub body: String,
    /// `FILE` or `LINE` (a line, or `start_line` to `line`).
    #[tool(alias = "subjectType")]
    pub subject_type: SubjectType,
    /// The (last) line.
    #[schemars(range(min = 1))]
    pub line: Option<u64>,
    /// Default `RIGHT`.
    pub side: Option<Side>,
    /// First line of a range.
    #[tool(alias = "startLine")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// First line's side.
    #[tool(alias = "startSide")]
    pub start_side: Option<Side>,
}

/// The review thread made.
#[kyro_core::output]
#[derive(Debug)]
pub struct ThreadAdded {
    /// The thread's node id.
    pub thread_id: String,
}

const PENDING_REVIEWS: &str = "query($owner: String!, $repo: String!, $number: Int!) { viewer { login } \
repository(owner: $owner, name: $repo) { pullRequest(number: $number) { \
reviews(first: 100, states: PENDING) { nodes { id author { login } } } } } }";

const ADD_THREAD: &str = "mutation($input: AddPullRequestReviewThreadInput!) { \
addPullRequestReviewThread(input: $input) { thread { id } } }";

/// `PENDING_REVIEWS`' data.
#[derive(Deserialize)]
struct PendingReviews {
    viewer: User,
    repository: PendingRepository,
}

#[derive(Deserialize)]
struct PendingRepository {
    #[serde(rename = "pullRequest")]
    pull_request: PendingPull,
}

#[derive(Deserialize)]
struct PendingPull {
    reviews: PendingNodes,
}

#[derive(Deserialize)]
struct PendingNodes {
    nodes: Vec<PendingReview>,
}

#[derive(Deserialize)]
struct PendingReview {
    id: String,
    /// Null for a deleted account.
    author: Option<User>,
}

/// `ADD_THREAD`'s data: the thread, null when GitHub made none.
#[derive(Deserialize)]
struct ThreadMade {
    #[serde(rename = "addPullRequestReviewThread")]
    add_pull_request_review_thread: ThreadPayload,
}

#[derive(Deserialize)]
struct ThreadPayload {
    thread: Option<ThreadId>,
}

#[derive(Deserialize)]
struct ThreadId {
    id: String,
}

impl Execute for GitHubAddCommentToPendingReview {
    type Output = ThreadAdded;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<ThreadAdded, ToolError> {
        if self.subject_type == SubjectType::Line && self.line.is_none() {
            return Err(invalid("a LINE comment needs its `line`"));
        }
        let github = GitHub::for_call(cx)?;
        let found = github.graphql(
            cx,
            PENDING_REVIEWS,
            json!({"owner": self.owner, "repo": self.repo, "number": self.pull_number}),
        )?;
        let found: PendingReviews = graphql(&found)?;
        let me = found.viewer.login;
        let review = found
            .repository
            .pull_request
            .reviews
            .nodes
            .into_iter()
            .find(|r| r.author.as_ref().is_some_and(|a| a.login == me))
            .map(|r| r.id)
            .ok_or_else(|| {
                invalid(format!(
                    "{me} has no pending review here; start one with github_pull_request_review_write"
                ))
            })?;
        let side = |s: Option<Side>| s.map(|s| if s == Side::Left { "LEFT" } else { "RIGHT" });
        let mut input = json!({
            "pullRequestReviewId": review,
            "path": self.path,
            "body": self.body,
            "subjectType": if self.subject_type == SubjectType::File { "FILE" } else { "LINE" },
        });
        for (key, value) in [
            ("line", json!(self.line)),
            ("side", json!(side(self.side))),
            ("startLine", json!(self.start_line)),
            ("startSide", json!(side(self.start_side))),
        ] {
            if !value.is_null() {
                input[key] = value;
            }
        }
        let added: ThreadMade = graphql(&github.graphql(cx, ADD_THREAD, json!({"input": input}))?)?;
        match added.add_pull_request_review_thread.thread {
            Some(thread) if !thread.id.is_empty() => Ok(ThreadAdded { thread_id: thread.id }),
            _ => Err(invalid(
                "GitHub made no thread: check that the path and line are in the pull request's diff",
            )),
        }
    }
}

/// Reply to a comment on a line of a GitHub pull request.
#[tool(
    name = "github_add_reply_to_pull_request_comment",
    title = "Reply to a GitHub review comment",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["add_reply_to_pull_request_comment"]
)]
pub struct GitHubAddReplyToPullRequestComment {
    /// Repo owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repo name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// PR number.
    #[tool(alias = "pullNumber")]
    #[schemars(range(min = 1))]
    pub pull_number: u64,
    /// Comment id (from `get_review_comments`).
    #[tool(alias = "commentId")]
    #[schemars(range(min = 1))]
    pub comment_id: u64,
    /// The reply.
    #[schemars(length(min = 1, max = 65536))]
    pub body: String,
}

impl Execute for GitHubAddReplyToPullRequestComment {
    type Output = Comment;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Comment, ToolError> {
        let path = format!(
            "/repos/{}/{}/pulls/{}/comments/{}/replies",
            self.owner, self.repo, self.pull_number, self.comment_id
        );
        let answer = GitHub::for_call(cx)?.send(cx, "POST", &path, Some(&json!({"body": self.body})))?;
        Ok(answer.parse::<CommentWire>()?.into())
    }
}
