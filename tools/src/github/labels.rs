//! A repository's label (`get_label`) and an organization's issue types
//! (`list_issue_types`).

use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{GitHub, encode};
use super::issue_read::Label;
use super::wire::{LabelWire, list};

/// Get a repository label: its color and description.
#[tool(
    name = "github_get_label",
    title = "Get a GitHub label",
    category = "github.issues",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_label"]
)]
pub struct GitHubGetLabel {
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
    /// Label name.
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
}

impl Execute for GitHubGetLabel {
    type Output = Label;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Label, ToolError> {
        let path = format!("/repos/{}/{}/labels/{}", self.owner, self.repo, encode(&self.name));
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        Ok(answer.parse::<LabelWire>()?.into())
    }
}

/// List an organization's issue types (for `github_issue_write`'s `type`).
#[tool(
    name = "github_list_issue_types",
    title = "List GitHub issue types",
    category = "github.issues",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_issue_types"]
)]
pub struct GitHubListIssueTypes {
    /// Organization login.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9][A-Za-z0-9-]*$"))]
    pub owner: String,
}

/// Issue types.
#[kyro_core::output]
#[derive(Debug)]
pub struct IssueTypes {
    /// The types.
    pub types: Vec<IssueType>,
}

/// One issue type.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IssueType {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// An issue type, as GitHub sends it.
#[derive(Deserialize)]
struct IssueTypeWire {
    id: u64,
    name: String,
    description: Option<String>,
}

impl Execute for GitHubListIssueTypes {
    type Output = IssueTypes;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<IssueTypes, ToolError> {
        let path = format!("/orgs/{}/issue-types", encode(&self.owner));
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let types = list::<IssueTypeWire>(&answer)?
            .into_iter()
            .map(|t| IssueType {
                id: t.id,
                name: t.name,
                description: t.description.unwrap_or_default(),
            })
            .collect();
        Ok(IssueTypes { types })
    }
}
