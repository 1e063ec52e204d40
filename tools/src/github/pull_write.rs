//! GitHub's `pull_requests` toolset, writing: open, update, bring up to date, merge
//! (reviews are in `reviews.rs`).

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::{GitHub, invalid};
use super::issue_write::IssueStateChange;
use super::pull_read::PullRequest;
use super::wire::PullWire;

/// Asks for reviews: logins, and teams as `org/team-slug`.
fn request_reviewers(github: &GitHub, cx: &ToolContext, pull: &str, reviewers: &[String]) -> Result<(), ToolError> {
    if reviewers.is_empty() {
        return Ok(());
    }
    let (teams, people): (Vec<&String>, Vec<&String>) = reviewers.iter().partition(|r| r.contains('/'));
    let teams: Vec<&str> = teams
        .iter()
        .filter_map(|t| t.split_once('/').map(|(_, slug)| slug))
        .collect();
    let body = json!({"reviewers": people, "team_reviewers": teams});
    github
        .send(cx, "POST", &format!("{pull}/requested_reviewers"), Some(&body))
        .map(drop)
}

/// Open a GitHub pull request from `head` into `base`, optionally as a draft and asking for
/// reviews.
#[tool(
    name = "github_create_pull_request",
    title = "Create a GitHub pull request",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["create_pull_request"]
)]
pub struct GitHubCreatePullRequest {
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
    /// Title.
    #[schemars(length(min = 1, max = 256))]
    pub title: String,
    /// Branch with the changes (`user:branch` from a fork).
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub head: String,
    /// Branch to merge into.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub base: String,
    /// Description (markdown).
    #[schemars(length(max = 65536))]
    pub body: Option<String>,
    /// Open as a draft.
    #[serde(default)]
    pub draft: bool,
    /// Let maintainers push to the head branch.
    #[serde(default)]
    pub maintainer_can_modify: bool,
    /// Logins or `org/team-slug`s.
    #[serde(default)]
    #[schemars(length(max = 20))]
    pub reviewers: Vec<String>,
}

impl Execute for GitHubCreatePullRequest {
    type Output = PullRequest;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<PullRequest, ToolError> {
        let github = GitHub::for_call(cx)?;
        let pulls = format!("/repos/{}/{}/pulls", self.owner, self.repo);
        let mut body = json!({
            "title": self.title, "head": self.head, "base": self.base,
            "draft": self.draft, "maintainer_can_modify": self.maintainer_can_modify,
        });
        if let Some(text) = &self.body {
            body["body"] = json!(text);
        }
        let made: PullRequest = github
            .send(cx, "POST", &pulls, Some(&body))?
            .parse::<PullWire>()?
            .into();
        request_reviewers(&github, cx, &format!("{pulls}/{}", made.number), &self.reviewers)?;
        Ok(made)
    }
}

/// Update a GitHub pull request's title, description, state (`closed` closes it unmerged), base,
/// maintainer pushes or reviewers. Draft status is not offered.
#[tool(
    name = "github_update_pull_request",
    title = "Update a GitHub pull request",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["update_pull_request"]
)]
pub struct GitHubUpdatePullRequest {
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
    /// New title.
    #[schemars(length(min = 1, max = 256))]
    pub title: Option<String>,
    /// New description.
    #[schemars(length(max = 65536))]
    pub body: Option<String>,
    /// New state.
    pub state: Option<IssueStateChange>,
    /// New base branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub base: Option<String>,
    /// Let maintainers push to the head branch.
    pub maintainer_can_modify: Option<bool>,
    /// Reviewers to ask: logins or `org/team-slug`s.
    #[serde(default)]
    #[schemars(length(max = 20))]
    pub reviewers: Vec<String>,
}

impl Execute for GitHubUpdatePullRequest {
    type Output = PullRequest;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<PullRequest, ToolError> {
        let mut body = Map::new();
        let state = self
            .state
            .map(|s| if s == IssueStateChange::Open { "open" } else { "closed" });
        for (key, value) in [
            ("title", json!(self.title)),
            ("body", json!(self.body)),
            ("state", json!(state)),
            ("base", json!(self.base)),
            ("maintainer_can_modify", json!(self.maintainer_can_modify)),
        ] {
            if !value.is_null() {
                body.insert(key.to_owned(), value);
            }
        }
        if body.is_empty() && self.reviewers.is_empty() {
            return Err(invalid(
                "give something to change: a title, body, state, base, maintainer_can_modify or reviewers",
            ));
        }
        let github = GitHub::for_call(cx)?;
        let pull = format!("/repos/{}/{}/pulls/{}", self.owner, self.repo, self.pull_number);
        if !body.is_empty() {
            github.send(cx, "PATCH", &pull, Some(&Value::Object(body)))?;
        }
        request_reviewers(&github, cx, &pull, &self.reviewers)?;
        Ok(github.send(cx, "GET", &pull, None)?.parse::<PullWire>()?.into())
    }
}

/// Merge a GitHub pull request's base into its branch (in the background), only if its head is
/// still `expected_head_sha` when given.
#[tool(
    name = "github_update_pull_request_branch",
    title = "Update a GitHub pull request's branch",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["update_pull_request_branch"]
)]
pub struct GitHubUpdatePullRequestBranch {
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
    /// Head commit it must still have.
    #[tool(alias = "expectedHeadSha")]
    #[schemars(regex(pattern = "^[0-9a-f]{40,64}$"))]
    pub expected_head_sha: Option<String>,
}

/// What GitHub said.
#[kyro_core::output]
#[derive(Debug)]
pub struct Accepted {
    /// Its message.
    pub message: String,
}

/// GitHub's word on a branch update (accepted, done in the background).
#[derive(Deserialize)]
struct MessageWire {
    message: String,
}

impl Execute for GitHubUpdatePullRequestBranch {
    type Output = Accepted;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Accepted, ToolError> {
        let path = format!(
            "/repos/{}/{}/pulls/{}/update-branch",
            self.owner, self.repo, self.pull_number
        );
        let body = match &self.expected_head_sha {
            Some(sha) => json!({"expected_head_sha": sha}),
            None => json!({}),
        };
        let answer = GitHub::for_call(cx)?.send(cx, "PUT", &path, Some(&body))?;
        Ok(Accepted {
            message: answer.parse::<MessageWire>()?.message,
        })
    }
}

/// `merge`, `squash` or `rebase`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    /// A merge commit.
    Merge,
    /// One squashed commit.
    Squash,
    /// Each commit rebased onto the base.
    Rebase,
}

/// Merge a GitHub pull request; with `sha`, only if its head is still that commit (what was
/// reviewed is what is merged).
#[tool(
    name = "github_merge_pull_request",
    title = "Merge a GitHub pull request",
    category = "github.pull_requests",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["merge_pull_request"]
)]
pub struct GitHubMergePullRequest {
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
    /// Default the repository's.
    pub merge_method: Option<MergeMethod>,
    /// Merge commit title.
    #[schemars(length(min = 1, max = 256))]
    pub commit_title: Option<String>,
    /// Merge commit message.
    #[schemars(length(max = 65536))]
    pub commit_message: Option<String>,
    /// Head commit it must still have.
    #[schemars(regex(pattern = "^[0-9a-f]{40,64}$"))]
    pub sha: Option<String>,
}

/// A merge.
#[kyro_core::output]
#[derive(Debug)]
pub struct Merged {
    /// Whether it merged.
    pub merged: bool,
    /// The merge commit.
    pub sha: String,
    /// GitHub's message.
    pub message: String,
}

/// A merge's result, as GitHub sends it: all three always.
#[derive(Deserialize)]
struct MergeWire {
    merged: bool,
    sha: String,
    message: String,
}

impl Execute for GitHubMergePullRequest {
    type Output = Merged;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Merged, ToolError> {
        let mut body = Map::new();
        let method = self.merge_method.map(|m| match m {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        });
        for (key, value) in [
            ("merge_method", json!(method)),
            ("commit_title", json!(self.commit_title)),
            ("commit_message", json!(self.commit_message)),
            ("sha", json!(self.sha)),
        ] {
            if !value.is_null() {
                body.insert(key.to_owned(), value);
            }
        }
        let path = format!("/repos/{}/{}/pulls/{}/merge", self.owner, self.repo, self.pull_number);
        let v: MergeWire = GitHub::for_call(cx)?
            .send(cx, "PUT", &path, Some(&Value::Object(body)))?
            .parse()?;
        Ok(Merged {
            merged: v.merged,
            sha: v.sha,
            message: v.message,
        })
    }
}
