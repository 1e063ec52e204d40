//! `github_list_issues`: one page of a repository's issues.

use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::client::{GitHub, encode};
use super::issue_read::Issue;
use super::wire::{IssueWire, list};

/// List a repository's issues, newest first.
#[tool(
    name = "github_list_issues",
    title = "List GitHub issues",
    category = "github.issues",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_issues"]
)]
pub struct GitHubListIssues {
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
    /// `open` (default), `closed` or `all`.
    #[serde(default)]
    pub state: IssueState,
    /// Only issues with all these labels.
    #[serde(default)]
    #[schemars(length(max = 20), inner(regex(pattern = "^[^,]{1,100}$")))]
    pub labels: Vec<String>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// `open`, `closed` or `all`.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IssueState {
    /// Open ones.
    #[default]
    Open,
    /// Closed ones.
    Closed,
    /// Both.
    All,
}

/// One page of issues.
#[kyro_core::output]
#[derive(Debug)]
pub struct IssuePage {
    /// The issues.
    pub issues: Vec<Issue>,
    /// The next page, when there is one.
    pub next_page: Option<u32>,
}

impl Execute for GitHubListIssues {
    type Output = IssuePage;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<IssuePage, ToolError> {
        let state = match self.state {
            IssueState::Open => "open",
            IssueState::Closed => "closed",
            IssueState::All => "all",
        };
        let mut path = format!(
            "/repos/{}/{}/issues?state={state}&page={}&per_page={}",
            self.owner,
            self.repo,
            self.page.unwrap_or(1),
            self.per_page.unwrap_or(30)
        );
        if !self.labels.is_empty() {
            path.push_str(&format!("&labels={}", encode(&self.labels.join(","))));
        }
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let issues = list::<IssueWire>(&answer)?.into_iter().map(Issue::from).collect();
        Ok(IssuePage {
            issues,
            next_page: answer.next_page,
        })
    }
}
