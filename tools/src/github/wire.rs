//! The shapes of GitHub's answers that the issue, pull request, review, search and context
//! tools read, shared among them. An answer is parsed into its shape or is an
//! `unexpected_answer` failure naming what came back: what GitHub documents as always sent
//! (ids, numbers, titles, states, logins, addresses) is required; what it may leave out or
//! send as null (bodies, descriptions, names) is optional.

use kyro_core::ToolError;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::client::Answer;
use super::issue_read::{Issue, IssueComment, Label};
use super::issue_write::Comment;
use super::pull_read::{PullRequest, Review};
use crate::Failure;

/// The items of a list answer, each as `T`: anything but an array, or an item of another
/// shape, is an `unexpected_answer`.
pub(crate) fn list<T: DeserializeOwned>(answer: &Answer) -> Result<Vec<T>, ToolError> {
    answer.items()?;
    answer.parse()
}

/// A GraphQL answer's `data` as `T` (GraphQL's own errors are already refused): `data`
/// absent or of another shape is an `unexpected_answer`.
pub(crate) fn graphql<T: DeserializeOwned>(data: &Value) -> Result<T, ToolError> {
    T::deserialize(data).map_err(|e| {
        let sent = data.to_string();
        let sample = match sent.char_indices().nth(200) {
            None => sent.clone(),
            Some((end, _)) => format!("{}… ({} more bytes)", &sent[..end], sent.len() - end),
        };
        Failure::UnexpectedAnswer {
            service: "github".into(),
            status: 200,
            message: format!("{e}; its GraphQL data was {sample}"),
        }
        .into()
    })
}

/// A page of search results: both fields always.
#[derive(Deserialize)]
pub(crate) struct Found<T> {
    pub total_count: u64,
    pub items: Vec<T>,
}

/// A user, as GitHub names one in an answer.
#[derive(Deserialize)]
pub(crate) struct User {
    pub login: String,
}

/// The login of a user GitHub may send as null (a deleted account), empty then.
pub(crate) fn author(user: Option<User>) -> String {
    user.map(|u| u.login).unwrap_or_default()
}

/// An issue (or a pull request seen as one, in issue lists and searches).
#[derive(Deserialize)]
pub(crate) struct IssueWire {
    number: u64,
    id: u64,
    title: String,
    state: String,
    body: Option<String>,
    user: Option<User>,
    /// Label objects, or (GitHub allows it) bare names, which are not shown.
    #[serde(default)]
    labels: Vec<Value>,
    #[serde(default)]
    comments: u64,
    pull_request: Option<Value>,
    html_url: String,
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

/// A label.
#[derive(Deserialize)]
pub(crate) struct LabelWire {
    name: String,
    color: String,
    description: Option<String>,
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

/// A comment on an issue's (or pull request's) conversation.
#[derive(Deserialize)]
pub(crate) struct IssueCommentWire {
    id: u64,
    user: Option<User>,
    body: Option<String>,
    created_at: String,
    html_url: String,
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

/// A comment made: its id and address.
#[derive(Deserialize)]
pub(crate) struct CommentWire {
    id: u64,
    html_url: String,
}

impl From<CommentWire> for Comment {
    fn from(c: CommentWire) -> Comment {
        Comment {
            id: c.id,
            html_url: c.html_url,
        }
    }
}

/// A pull request: in full (`get`, `create`), or as a list gives it, without `merged`
/// and `mergeable_state`.
#[derive(Deserialize)]
pub(crate) struct PullWire {
    number: u64,
    title: String,
    state: String,
    body: Option<String>,
    user: Option<User>,
    head: HeadWire,
    base: BaseWire,
    merged: Option<bool>,
    draft: Option<bool>,
    mergeable_state: Option<String>,
    html_url: String,
}

/// A pull request's head: its branch and commit.
#[derive(Deserialize)]
pub(crate) struct HeadWire {
    #[serde(rename = "ref")]
    branch: String,
    pub sha: String,
}

#[derive(Deserialize)]
struct BaseWire {
    #[serde(rename = "ref")]
    branch: String,
}

impl From<PullWire> for PullRequest {
    fn from(v: PullWire) -> PullRequest {
        PullRequest {
            number: v.number,
            title: v.title,
            state: v.state,
            body: v.body.unwrap_or_default(),
            author: author(v.user),
            head: v.head.branch,
            head_sha: v.head.sha,
            base: v.base.branch,
            merged: v.merged.unwrap_or(false),
            draft: v.draft.unwrap_or(false),
            mergeable_state: v.mergeable_state,
            html_url: v.html_url,
        }
    }
}

/// A review of a pull request.
#[derive(Deserialize)]
pub(crate) struct ReviewWire {
    pub id: u64,
    pub user: Option<User>,
    pub state: String,
    body: Option<String>,
    submitted_at: Option<String>,
}

impl From<ReviewWire> for Review {
    fn from(r: ReviewWire) -> Review {
        Review {
            id: r.id,
            author: author(r.user),
            state: r.state,
            body: r.body.unwrap_or_default(),
            submitted_at: r.submitted_at,
        }
    }
}
