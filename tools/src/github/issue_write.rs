//! GitHub's issue writes: `issue_write` (create, update), `add_issue_comment` and
//! `sub_issue_write`, with kyro's `github_create_issue` and `github_comment` folded in.

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use serde_json::{Map, Value, json};

use super::client::{GitHub, invalid};
use super::issue_read::Issue;
use super::wire::{CommentWire, IssueWire};

/// Create a GitHub issue (`method: create`, with `title`) or update one (`update`, with
/// `issue_number` and the fields to change).
#[tool(
    name = "github_issue_write",
    title = "Create or update a GitHub issue",
    category = "github.issues",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["issue_write", "github_create_issue"]
)]
pub struct GitHubIssueWrite {
    /// `create` (the default) or `update`.
    #[serde(default)]
    pub method: IssueWriteMethod,
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
    /// Issue to update.
    #[tool(alias = "number")]
    #[schemars(range(min = 1))]
    pub issue_number: Option<u64>,
    /// Title (needed to create).
    #[schemars(length(min = 1, max = 256))]
    pub title: Option<String>,
    /// Body (markdown).
    #[schemars(length(max = 65536))]
    pub body: Option<String>,
    /// Logins to assign (replacing, on update).
    #[schemars(length(max = 10))]
    pub assignees: Option<Vec<String>>,
    /// Label names (replacing, on update).
    #[schemars(length(max = 20))]
    pub labels: Option<Vec<String>>,
    /// Milestone number.
    #[schemars(range(min = 1))]
    pub milestone: Option<u64>,
    /// Issue type name (see `github_list_issue_types`).
    #[schemars(length(min = 1, max = 100))]
    pub r#type: Option<String>,
    /// New state (update).
    pub state: Option<IssueStateChange>,
    /// Why it is closed (update).
    pub state_reason: Option<StateReason>,
}

/// Create or update.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IssueWriteMethod {
    /// A new issue.
    #[default]
    Create,
    /// An existing one.
    Update,
}

/// `open` or `closed`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IssueStateChange {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

/// `completed`, `not_planned` or `duplicate`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StateReason {
    /// Done.
    Completed,
    /// Will not be done.
    NotPlanned,
    /// A duplicate.
    Duplicate,
}

impl Execute for GitHubIssueWrite {
    type Output = Issue;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Issue, ToolError> {
        let mut body = Map::new();
        let mut put = |key: &str, value: Value| {
            if !value.is_null() {
                body.insert(key.to_owned(), value);
            }
        };
        put("title", json!(self.title));
        put("body", json!(self.body));
        put("assignees", json!(self.assignees));
        put("labels", json!(self.labels));
        put("milestone", json!(self.milestone));
        put("type", json!(self.r#type));
        let (method, path) = match self.method {
            IssueWriteMethod::Create => {
                if self.title.is_none() {
                    return Err(invalid("create needs a `title`"));
                }
                if self.issue_number.is_some() || self.state.is_some() || self.state_reason.is_some() {
                    return Err(invalid(
                        "create takes no `issue_number`, `state` or `state_reason`; use `method: update`",
                    ));
                }
                ("POST", format!("/repos/{}/{}/issues", self.owner, self.repo))
            }
            IssueWriteMethod::Update => {
                let Some(number) = self.issue_number else {
                    return Err(invalid("update needs the `issue_number`"));
                };
                put(
                    "state",
                    json!(self.state.map(|s| match s {
                        IssueStateChange::Open => "open",
                        IssueStateChange::Closed => "closed",
                    })),
                );
                put(
                    "state_reason",
                    json!(self.state_reason.map(|r| match r {
                        StateReason::Completed => "completed",
                        StateReason::NotPlanned => "not_planned",
                        StateReason::Duplicate => "duplicate",
                    })),
                );
                if body.is_empty() {
                    return Err(invalid("update needs a field to change"));
                }
                ("PATCH", format!("/repos/{}/{}/issues/{number}", self.owner, self.repo))
            }
        };
        let answer = GitHub::for_call(cx)?.send(cx, method, &path, Some(&Value::Object(body)))?;
        Ok(answer.parse::<IssueWire>()?.into())
    }
}

/// Comment on a GitHub issue or pull request.
#[tool(
    name = "github_add_issue_comment",
    title = "Comment on a GitHub issue",
    category = "github.issues",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["add_issue_comment", "github_comment"]
)]
pub struct GitHubAddIssueComment {
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
    /// Issue or PR number.
    #[tool(alias = "number")]
    #[schemars(range(min = 1))]
    pub issue_number: u64,
    /// Markdown.
    #[schemars(length(min = 1, max = 65536))]
    pub body: String,
}

/// A comment made.
#[kyro_core::output]
#[derive(Debug)]
pub struct Comment {
    /// Its id.
    pub id: u64,
    /// Its web address.
    pub html_url: String,
}

impl Execute for GitHubAddIssueComment {
    type Output = Comment;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Comment, ToolError> {
        let path = format!(
            "/repos/{}/{}/issues/{}/comments",
            self.owner, self.repo, self.issue_number
        );
        let answer = GitHub::for_call(cx)?.send(cx, "POST", &path, Some(&json!({"body": self.body})))?;
        Ok(answer.parse::<CommentWire>()?.into())
    }
}

/// Add a sub-issue to a GitHub issue, remove one, or reorder one (`reprioritize` with `after_id` or `before_id`).
/// Sub-issues are named by numeric `id` (from `github_issue_read`), not number.
#[tool(
    name = "github_sub_issue_write",
    title = "Change a GitHub issue's sub-issues",
    category = "github.issues",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["sub_issue_write"]
)]
pub struct GitHubSubIssueWrite {
    /// `add`, `remove` or `reprioritize`.
    pub method: SubIssueMethod,
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
    /// Parent issue number.
    #[schemars(range(min = 1))]
    pub issue_number: u64,
    /// Sub-issue id.
    #[schemars(range(min = 1))]
    pub sub_issue_id: u64,
    /// With `add`: move it from its current parent.
    #[serde(default)]
    pub replace_parent: bool,
    /// With `reprioritize`: after this sub-issue id.
    #[schemars(range(min = 1))]
    pub after_id: Option<u64>,
    /// With `reprioritize`: before this sub-issue id.
    #[schemars(range(min = 1))]
    pub before_id: Option<u64>,
}

/// A change to sub-issues.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SubIssueMethod {
    /// Add it.
    Add,
    /// Remove it.
    Remove,
    /// Move it among its siblings.
    Reprioritize,
}

impl Execute for GitHubSubIssueWrite {
    type Output = Issue;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Issue, ToolError> {
        let issue = format!("/repos/{}/{}/issues/{}", self.owner, self.repo, self.issue_number);
        let id = self.sub_issue_id;
        let (method, path, body) = match self.method {
            SubIssueMethod::Add => (
                "POST",
                format!("{issue}/sub_issues"),
                json!({"sub_issue_id": id, "replace_parent": self.replace_parent}),
            ),
            SubIssueMethod::Remove => ("DELETE", format!("{issue}/sub_issue"), json!({"sub_issue_id": id})),
            SubIssueMethod::Reprioritize => {
                let place = match (self.after_id, self.before_id) {
                    (Some(after), None) => json!({"sub_issue_id": id, "after_id": after}),
                    (None, Some(before)) => json!({"sub_issue_id": id, "before_id": before}),
                    _ => return Err(invalid("reprioritize needs one of `after_id` or `before_id`")),
                };
                ("PATCH", format!("{issue}/sub_issues/priority"), place)
            }
        };
        let answer = GitHub::for_call(cx)?.send(cx, method, &path, Some(&body))?;
        Ok(answer.parse::<IssueWire>()?.into())
    }
}

impl From<CommentWire> for Comment {
    fn from(c: CommentWire) -> Comment {
        Comment {
            id: c.id,
            html_url: c.html_url,
        }
    }
}
