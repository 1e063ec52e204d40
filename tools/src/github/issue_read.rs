//! `github_issue_read`: an issue, its comments, sub-issues or labels (GitHub's
//! `issue_read`, with `github_get_issue` folded in).

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::client::{GitHub, paging};
use super::wire::{IssueCommentWire, IssueWire, LabelWire, author, list as items};

/// Read a GitHub issue (or a pull request as one), or a page of its comments, sub-issues or labels,
/// by `method`.
#[tool(
    name = "github_issue_read",
    title = "Read a GitHub issue",
    category = "github.issues",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["issue_read", "github_get_issue"]
)]
pub struct GitHubIssueRead {
    /// `get` (default: title, state, body, labels), `get_comments`, `get_sub_issues` or
    /// `get_labels`.
    #[serde(default)]
    pub method: IssueReadMethod,
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
    /// Issue number.
    #[tool(alias = "number")]
    #[schemars(range(min = 1))]
    pub issue_number: u64,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// What `github_issue_read` reads.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IssueReadMethod {
    /// The issue.
    #[default]
    Get,
    /// Its comments.
    GetComments,
    /// Its sub-issues.
    GetSubIssues,
    /// Its labels.
    GetLabels,
}

/// What was read: the one field the method names.
#[kyro_core::output]
#[derive(Debug, Default)]
pub struct IssueRead {
    /// The issue (`get`).
    pub issue: Option<Issue>,
    /// Its comments (`get_comments`).
    pub comments: Option<Vec<IssueComment>>,
    /// Its sub-issues (`get_sub_issues`).
    pub sub_issues: Option<Vec<Issue>>,
    /// Its labels (`get_labels`).
    pub labels: Option<Vec<Label>>,
    /// The next page of a list, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A comment on an issue.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IssueComment {
    /// Its id.
    pub id: u64,
    /// Its author's login.
    pub author: String,
    /// Its text (markdown).
    pub body: String,
    /// When it was written (ISO 8601).
    pub created_at: String,
    /// Its web address.
    pub html_url: String,
}

/// A label.
#[kyro_core::output]
#[derive(Debug)]
pub struct Label {
    /// Its name.
    pub name: String,
    /// Its color, hex without `#`.
    pub color: String,
    /// Its description.
    pub description: String,
}

/// An issue.
#[kyro_core::output]
#[derive(Debug)]
pub struct Issue {
    /// Its number.
    pub number: u64,
    /// Its numeric id (what `github_sub_issue_write` takes as `sub_issue_id`).
    pub id: u64,
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

impl Execute for GitHubIssueRead {
    type Output = IssueRead;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<IssueRead, ToolError> {
        let issue = format!("/repos/{}/{}/issues/{}", self.owner, self.repo, self.issue_number);
        let list = |what: &str| format!("{issue}/{what}?{}", paging(self.page, self.per_page));
        let github = GitHub::for_call(cx)?;
        Ok(match self.method {
            IssueReadMethod::Get => IssueRead {
                issue: Some(github.send(cx, "GET", &issue, None)?.parse::<IssueWire>()?.into()),
                ..IssueRead::default()
            },
            IssueReadMethod::GetComments => {
                let answer = github.send(cx, "GET", &list("comments"), None)?;
                let comments = items::<IssueCommentWire>(&answer)?;
                IssueRead {
                    comments: Some(comments.into_iter().map(IssueComment::from).collect()),
                    next_page: answer.next_page,
                    ..IssueRead::default()
                }
            }
            IssueReadMethod::GetSubIssues => {
                let answer = github.send(cx, "GET", &list("sub_issues"), None)?;
                IssueRead {
                    sub_issues: Some(items::<IssueWire>(&answer)?.into_iter().map(Issue::from).collect()),
                    next_page: answer.next_page,
                    ..IssueRead::default()
                }
            }
            IssueReadMethod::GetLabels => {
                let answer = github.send(cx, "GET", &list("labels"), None)?;
                IssueRead {
                    labels: Some(items::<LabelWire>(&answer)?.into_iter().map(Label::from).collect()),
                    next_page: answer.next_page,
                    ..IssueRead::default()
                }
            }
        })
    }
}

impl From<IssueWire> for Issue {
    fn from(v: IssueWire) -> Issue {
        Issue {
            number: v.number,
            id: v.id,
            title: v.title,
            state: v.state,
            body: v.body.unwrap_or_default(),
            author: author(v.user),
            labels: v
                .labels
                .iter()
                .filter_map(|l| l["name"].as_str().map(str::to_owned))
                .collect(),
            comments: v.comments,
            is_pull_request: v.pull_request.is_some(),
            html_url: v.html_url,
        }
    }
}

impl From<LabelWire> for Label {
    fn from(v: LabelWire) -> Label {
        Label {
            name: v.name,
            color: v.color,
            description: v.description.unwrap_or_default(),
        }
    }
}

impl From<IssueCommentWire> for IssueComment {
    fn from(c: IssueCommentWire) -> IssueComment {
        IssueComment {
            id: c.id,
            author: author(c.user),
            body: c.body.unwrap_or_default(),
            created_at: c.created_at,
            html_url: c.html_url,
        }
    }
}
