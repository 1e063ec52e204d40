//! GitHub's searches: issues and pull requests (`search_issues`) and users
//! (`search_users`), in GitHub's query syntax.

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::client::{GitHub, encode, paging};
use super::issue_read::Issue;
use super::wire::{Found, IssueWire};

/// `asc` or `desc`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Smallest, oldest first.
    Asc,
    /// Largest, newest first.
    Desc,
}

fn sorted(path: &mut String, sort: Option<&str>, order: Option<Order>) {
    if let Some(sort) = sort {
        path.push_str(&format!("&sort={sort}"));
    }
    if let Some(order) = order {
        path.push_str(if order == Order::Asc {
            "&order=asc"
        } else {
            "&order=desc"
        });
    }
}

/// Search GitHub issues with GitHub's query syntax (`is:open label:bug author:me`; `is:issue` is
/// added unless `is:pr`); `owner` and `repo` narrow it to one repository.
#[tool(
    name = "github_search_issues",
    title = "Search GitHub issues",
    category = "github.issues",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["search_issues"]
)]
pub struct GitHubSearchIssues {
    /// The query.
    #[schemars(length(min = 1, max = 256))]
    pub query: String,
    /// Only this owner's repositories.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: Option<String>,
    /// Only this repository of `owner`.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: Option<String>,
    /// Default best match.
    pub sort: Option<IssueSort>,
    /// Default `desc`.
    pub order: Option<Order>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 100))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// `comments`, `reactions`, `created` or `updated`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum IssueSort {
    /// Comment count.
    Comments,
    /// Reaction count.
    Reactions,
    /// Creation time.
    Created,
    /// Last update.
    Updated,
}

/// Issues found.
#[kyro_core::output]
#[derive(Debug)]
pub struct FoundIssues {
    /// How many match in all.
    pub total_count: u64,
    /// This page of them.
    pub issues: Vec<Issue>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

impl Execute for GitHubSearchIssues {
    type Output = FoundIssues;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FoundIssues, ToolError> {
        let mut query = self.query.clone();
        let says = |word: &str| query.split_whitespace().any(|w| w == word);
        if !says("is:issue") && !says("is:pr") && !says("type:pr") && !says("type:issue") {
            query.push_str(" is:issue");
        }
        match (&self.owner, &self.repo) {
            (Some(owner), Some(repo)) => query.push_str(&format!(" repo:{owner}/{repo}")),
            (Some(owner), None) => query.push_str(&format!(" user:{owner}")),
            _ => {}
        }
        let mut path = format!(
            "/search/issues?q={}&{}",
            encode(&query),
            paging(self.page, self.per_page)
        );
        let sort = self.sort.map(|s| match s {
            IssueSort::Comments => "comments",
            IssueSort::Reactions => "reactions",
            IssueSort::Created => "created",
            IssueSort::Updated => "updated",
        });
        sorted(&mut path, sort, self.order);
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let found: Found<IssueWire> = answer.parse()?;
        Ok(FoundIssues {
            total_count: found.total_count,
            issues: found.items.into_iter().map(Issue::from).collect(),
            next_page: answer.next_page,
        })
    }
}

/// Search GitHub users with GitHub's query syntax (`location:Lisbon language:rust`; `type:user` is
/// added unless a type is named).
#[tool(
    name = "github_search_users",
    title = "Search GitHub users",
    category = "github.users",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["search_users"]
)]
pub struct GitHubSearchUsers {
    /// The query.
    #[schemars(length(min = 1, max = 256))]
    pub query: String,
    /// Default best match.
    pub sort: Option<UserSort>,
    /// Default `desc`.
    pub order: Option<Order>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 100))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// `followers`, `repositories` or `joined`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UserSort {
    /// Follower count.
    Followers,
    /// Repository count.
    Repositories,
    /// When they joined.
    Joined,
}

/// Users found.
#[kyro_core::output]
#[derive(Debug)]
pub struct FoundUsers {
    /// How many match in all.
    pub total_count: u64,
    /// This page of them.
    pub users: Vec<FoundUser>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// One user.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FoundUser {
    /// The login.
    pub login: String,
    /// `User` or `Organization`.
    pub kind: String,
    /// The profile's address.
    pub html_url: String,
}

/// A user found, as GitHub sends it.
#[derive(Deserialize)]
struct UserWire {
    login: String,
    #[serde(rename = "type")]
    kind: String,
    html_url: String,
}

impl Execute for GitHubSearchUsers {
    type Output = FoundUsers;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FoundUsers, ToolError> {
        // People, as GitHub's server searches them, unless the query names a type.
        let query = match self.query.contains("type:") {
            true => self.query.clone(),
            false => format!("type:user {}", self.query),
        };
        let mut path = format!(
            "/search/users?q={}&{}",
            encode(&query),
            paging(self.page, self.per_page)
        );
        let sort = self.sort.map(|s| match s {
            UserSort::Followers => "followers",
            UserSort::Repositories => "repositories",
            UserSort::Joined => "joined",
        });
        sorted(&mut path, sort, self.order);
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let found: Found<UserWire> = answer.parse()?;
        Ok(FoundUsers {
            total_count: found.total_count,
            users: found
                .items
                .into_iter()
                .map(|u| FoundUser {
                    login: u.login,
                    kind: u.kind,
                    html_url: u.html_url,
                })
                .collect(),
            next_page: answer.next_page,
        })
    }
}

/// A page of search results read as `W`, each made a `T`: how many in all, the next page.
fn found<W: serde::de::DeserializeOwned, T>(
    answer: &super::client::Answer,
    item: impl Fn(W) -> T,
) -> Result<(u64, Vec<T>, Option<u32>), ToolError> {
    let found: Found<W> = answer.parse()?;
    Ok((
        found.total_count,
        found.items.into_iter().map(item).collect(),
        answer.next_page,
    ))
}

/// A repository's name in a search result.
#[derive(Deserialize)]
struct RepositoryName {
    full_name: String,
}

/// Search code across GitHub with GitHub's code-search syntax (`fn main repo:o/r language:rust`):
/// matching files by repository and path.
#[tool(
    name = "github_search_code",
    title = "Search GitHub code",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["search_code"]
)]
pub struct GitHubSearchCode {
    /// The query.
    #[schemars(length(min = 1, max = 256))]
    pub query: String,
    /// Default `desc`.
    pub order: Option<Order>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 100))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// Code found.
#[kyro_core::output]
#[derive(Debug)]
pub struct FoundCode {
    /// How many files match in all.
    pub total_count: u64,
    /// This page of them.
    pub files: Vec<CodeMatch>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A file that matched.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CodeMatch {
    /// `owner/name` of its repository.
    pub repository: String,
    /// Its path.
    pub path: String,
    /// Its blob sha.
    pub sha: String,
}

/// A file found, as GitHub sends it.
#[derive(Deserialize)]
struct CodeWire {
    repository: RepositoryName,
    path: String,
    sha: String,
}

impl Execute for GitHubSearchCode {
    type Output = FoundCode;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FoundCode, ToolError> {
        let mut path = format!(
            "/search/code?q={}&{}",
            encode(&self.query),
            paging(self.page, self.per_page)
        );
        sorted(&mut path, None, self.order);
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let (total_count, files, next_page) = found(&answer, |f: CodeWire| CodeMatch {
            repository: f.repository.full_name,
            path: f.path,
            sha: f.sha,
        })?;
        Ok(FoundCode {
            total_count,
            files,
            next_page,
        })
    }
}

/// Search commits across GitHub with GitHub's query syntax (`fix crash repo:o/r author:me`).
#[tool(
    name = "github_search_commits",
    title = "Search GitHub commits",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["search_commits"]
)]
pub struct GitHubSearchCommits {
    /// The query.
    #[schemars(length(min = 1, max = 256))]
    pub query: String,
    /// Default best match.
    pub sort: Option<CommitSort>,
    /// Default `desc`.
    pub order: Option<Order>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 100))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// `author-date` or `committer-date`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitSort {
    /// When they were authored.
    #[serde(rename = "author-date")]
    AuthorDate,
    /// When they were committed.
    #[serde(rename = "committer-date")]
    CommitterDate,
}

/// Commits found.
#[kyro_core::output]
#[derive(Debug)]
pub struct FoundCommits {
    /// How many match in all.
    pub total_count: u64,
    /// This page of them.
    pub commits: Vec<FoundCommit>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A commit found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FoundCommit {
    /// `owner/name` of its repository.
    pub repository: String,
    /// The commit.
    pub commit: super::repos_read::CommitSummary,
}

/// A commit found: its repository, and the commit as `commit_summary` reads it.
#[derive(Deserialize)]
struct CommitWire {
    repository: RepositoryName,
    #[serde(flatten)]
    rest: Value,
}

impl Execute for GitHubSearchCommits {
    type Output = FoundCommits;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FoundCommits, ToolError> {
        let mut path = format!(
            "/search/commits?q={}&{}",
            encode(&self.query),
            paging(self.page, self.per_page)
        );
        let sort = self.sort.map(|s| match s {
            CommitSort::AuthorDate => "author-date",
            CommitSort::CommitterDate => "committer-date",
        });
        sorted(&mut path, sort, self.order);
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let (total_count, commits, next_page) = found(&answer, |c: CommitWire| FoundCommit {
            repository: c.repository.full_name,
            commit: super::repos_read::commit_summary(&c.rest),
        })?;
        Ok(FoundCommits {
            total_count,
            commits,
            next_page,
        })
    }
}

/// Search GitHub repositories with GitHub's query syntax (`kyro language:rust stars:>10`).
#[tool(
    name = "github_search_repositories",
    title = "Search GitHub repositories",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["search_repositories"]
)]
pub struct GitHubSearchRepositories {
    /// The query.
    #[schemars(length(min = 1, max = 256))]
    pub query: String,
    /// Default best match.
    pub sort: Option<RepositorySort>,
    /// Default `desc`.
    pub order: Option<Order>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 100))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// `stars`, `forks`, `help-wanted-issues` or `updated`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepositorySort {
    /// Stars.
    #[serde(rename = "stars")]
    Stars,
    /// Forks.
    #[serde(rename = "forks")]
    Forks,
    /// Issues labelled help wanted.
    #[serde(rename = "help-wanted-issues")]
    HelpWantedIssues,
    /// Last update.
    #[serde(rename = "updated")]
    Updated,
}

/// Repositories found.
#[kyro_core::output]
#[derive(Debug)]
pub struct FoundRepositories {
    /// How many match in all.
    pub total_count: u64,
    /// This page of them.
    pub repositories: Vec<FoundRepository>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A repository found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FoundRepository {
    /// `owner/name`.
    pub full_name: String,
    /// Its description.
    pub description: String,
    /// Its main language.
    pub language: Option<String>,
    /// Its stars.
    pub stars: u64,
    /// Its web address.
    pub html_url: String,
}

/// A repository found, as GitHub sends it.
#[derive(Deserialize)]
struct RepositoryWire {
    full_name: String,
    description: Option<String>,
    language: Option<String>,
    stargazers_count: u64,
    html_url: String,
}

impl Execute for GitHubSearchRepositories {
    type Output = FoundRepositories;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FoundRepositories, ToolError> {
        let mut path = format!(
            "/search/repositories?q={}&{}",
            encode(&self.query),
            paging(self.page, self.per_page)
        );
        let sort = self.sort.map(|s| match s {
            RepositorySort::Stars => "stars",
            RepositorySort::Forks => "forks",
            RepositorySort::HelpWantedIssues => "help-wanted-issues",
            RepositorySort::Updated => "updated",
        });
        sorted(&mut path, sort, self.order);
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let (total_count, repositories, next_page) = found(&answer, |r: RepositoryWire| FoundRepository {
            full_name: r.full_name,
            description: r.description.unwrap_or_default(),
            language: r.language,
            stars: r.stargazers_count,
            html_url: r.html_url,
        })?;
        Ok(FoundRepositories {
            total_count,
            repositories,
            next_page,
        })
    }
}
