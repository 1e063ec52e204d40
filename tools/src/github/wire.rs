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
    pub(crate) number: u64,
    pub(crate) id: u64,
    pub(crate) title: String,
    pub(crate) state: String,
    pub(crate) body: Option<String>,
    pub(crate) user: Option<User>,
    /// Label objects, or (GitHub allows it) bare names, which are not shown.
    #[serde(default)]
    pub(crate) labels: Vec<Value>,
    #[serde(default)]
    pub(crate) comments: u64,
    pub(crate) pull_request: Option<Value>,
    pub(crate) html_url: String,
}

/// A label.
#[derive(Deserialize)]
pub(crate) struct LabelWire {
    pub(crate) name: String,
    pub(crate) color: String,
    pub(crate) description: Option<String>,
}

/// A comment on an issue's (or pull request's) conversation.
#[derive(Deserialize)]
pub(crate) struct IssueCommentWire {
    pub(crate) id: u64,
    pub(crate) user: Option<User>,
    pub(crate) body: Option<String>,
    pub(crate) created_at: String,
    pub(crate) html_url: String,
}

/// A comment made: its id and address.
#[derive(Deserialize)]
pub(crate) struct CommentWire {
    pub(crate) id: u64,
    pub(crate) html_url: String,
}

/// A pull request: in full (`get`, `create`), or as a list gives it, without `merged`
/// and `mergeable_state`.
#[derive(Deserialize)]
pub(crate) struct PullWire {
    pub(crate) number: u64,
    pub(crate) title: String,
    pub(crate) state: String,
    pub(crate) body: Option<String>,
    pub(crate) user: Option<User>,
    pub(crate) head: HeadWire,
    pub(crate) base: BaseWire,
    pub(crate) merged: Option<bool>,
    pub(crate) draft: Option<bool>,
    pub(crate) mergeable_state: Option<String>,
    pub(crate) html_url: String,
}

/// A pull request's head: its branch and commit.
#[derive(Deserialize)]
pub(crate) struct HeadWire {
    #[serde(rename = "ref")]
    pub(crate) branch: String,
    pub sha: String,
}

#[derive(Deserialize)]
pub(crate) struct BaseWire {
    #[serde(rename = "ref")]
    pub(crate) branch: String,
}

/// A review of a pull request.
#[derive(Deserialize)]
pub(crate) struct ReviewWire {
    pub id: u64,
    pub user: Option<User>,
    pub state: String,
    pub(crate) body: Option<String>,
    pub(crate) submitted_at: Option<String>,
}
