//! GitHub's `repos` toolset, reading commits: a page of them, or one with its changes.
//! Each answer is read through the shape GitHub documents (see the `Wire` structs): a
//! field it always sends missing, or of another type, is an `unexpected_answer`.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::github::client::{GitHub, encode, paging, text};

/// List a repository's commits, newest first, optionally by author, path or time.
#[tool(
    name = "github_list_commits",
    title = "List GitHub commits",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_commits"]
)]
pub struct GitHubListCommits {
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
    /// Start: branch, tag or commit; default the default branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub sha: Option<String>,
    /// Only by this login or email.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub author: Option<String>,
    /// Only touching this path (no `.` or `..` segment).
    #[schemars(
        length(min = 1, max = 4096),
        regex(pattern = "^/?(([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+)(/([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+))*/?)?$")
    )]
    pub path: Option<String>,
    /// Only after this time (ISO 8601: `2026-01-31` or `2026-01-31T12:00:00Z`).
    #[schemars(regex(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]{8}Z)?$"))]
    pub since: Option<String>,
    /// Only before this time (ISO 8601).
    #[schemars(regex(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]{8}Z)?$"))]
    pub until: Option<String>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// A page of commits.
#[kyro_core::output]
#[derive(Debug)]
pub struct Commits {
    /// The commits.
    pub commits: Vec<CommitSummary>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// One commit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CommitSummary {
    /// Its sha.
    pub sha: String,
    /// Its message's first line.
    pub subject: String,
    /// Its author's name.
    pub author: String,
    /// Its author's login, when GitHub knows it.
    pub login: Option<String>,
    /// When it was authored (ISO 8601).
    pub date: String,
}

/// A commit as GitHub lists it: its sha and message always; its git author may be null,
/// and its GitHub author is null when the email matches no account.
#[derive(Deserialize)]
struct WireCommit {
    sha: String,
    commit: WireCommitBody,
    author: Option<WireLogin>,
}

#[derive(Deserialize)]
struct WireCommitBody {
    message: String,
    author: Option<WireGitUser>,
}

#[derive(Deserialize)]
struct WireGitUser {
    name: Option<String>,
    date: Option<String>,
}

#[derive(Deserialize)]
struct WireLogin {
    login: String,
}

/// One commit with its changes: `stats` and `files` are left out of some answers.
#[derive(Deserialize)]
struct WireCommitDetail {
    #[serde(flatten)]
    commit: WireCommit,
    stats: Option<WireStats>,
    #[serde(default)]
    files: Vec<WireChangedFile>,
}

#[derive(Deserialize)]
struct WireStats {
    additions: u64,
    deletions: u64,
}

#[derive(Deserialize)]
struct WireChangedFile {
    filename: String,
    status: String,
    additions: u64,
    deletions: u64,
    patch: Option<String>,
}

impl WireCommit {
    fn summary(self) -> CommitSummary {
        let author = self.commit.author.unwrap_or(WireGitUser { name: None, date: None });
        CommitSummary {
            sha: self.sha,
            subject: self.commit.message.lines().next().unwrap_or_default().to_owned(),
            author: author.name.unwrap_or_default(),
            login: self.author.map(|a| a.login),
            date: author.date.unwrap_or_default(),
        }
    }
}

/// A commit of an answer other tools read as JSON (a pull request's commits, a search's).
pub(crate) fn commit_summary(c: &Value) -> CommitSummary {
    CommitSummary {
        sha: text(&c["sha"]),
        subject: text(&c["commit"]["message"])
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        author: text(&c["commit"]["author"]["name"]),
        login: c["author"]["login"].as_str().map(str::to_owned),
        date: text(&c["commit"]["author"]["date"]),
    }
}

impl Execute for GitHubListCommits {
    type Output = Commits;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = crate::github::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        crate::github::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Commits, ToolError> {
        let mut path = format!(
            "/repos/{}/{}/commits?{}",
            self.owner,
            self.repo,
            paging(self.page, self.per_page)
        );
        if let Some(sha) = &self.sha {
            path.push_str(&format!("&sha={}", encode(sha)));
        }
        for (key, value) in [
            ("author", &self.author),
            ("path", &self.path),
            ("since", &self.since),
            ("until", &self.until),
        ] {
            if let Some(value) = value {
                path.push_str(&format!("&{key}={}", encode(value)));
            }
        }
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        answer.items()?;
        let commits: Vec<WireCommit> = answer.parse()?;
        Ok(Commits {
            commits: commits.into_iter().map(WireCommit::summary).collect(),
            next_page: answer.next_page,
        })
    }
}

/// Get a commit: message, author and, by `detail`, its changed files.
#[tool(
    name = "github_get_commit",
    title = "Get a GitHub commit",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_commit"]
)]
pub struct GitHubGetCommit {
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
    /// Sha, branch or tag.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub sha: String,
    /// `stats` (default: files with line counts), `full_patch` (with patches) or `none`.
    #[serde(default)]
    pub detail: Detail,
}

/// How much of a commit's change.
#[kyro_core::input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// The message alone.
    None,
    /// The files changed and their line counts.
    #[default]
    Stats,
    /// The files with their patches.
    FullPatch,
}

/// A commit with its changes.
#[kyro_core::output]
#[derive(Debug)]
pub struct CommitDetail {
    /// The commit.
    pub commit: CommitSummary,
    /// Its whole message.
    pub message: String,
    /// Lines added and removed in all.
    pub additions: u64,
    /// Lines removed in all.
    pub deletions: u64,
    /// The files it changed.
    pub files: Vec<ChangedFile>,
}

/// A file a commit changed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChangedFile {
    /// Its path.
    pub path: String,
    /// `added`, `modified`, `removed`, `renamed`, ...
    pub status: String,
    /// Lines added.
    pub additions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// Its unified diff, when asked for and GitHub has it.
    pub patch: Option<String>,
}

impl Execute for GitHubGetCommit {
    type Output = CommitDetail;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = crate::github::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        crate::github::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<CommitDetail, ToolError> {
        let path = format!("/repos/{}/{}/commits/{}", self.owner, self.repo, encode(&self.sha));
        let c: WireCommitDetail = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?.parse()?;
        let files = c
            .files
            .into_iter()
            .filter(|_| self.detail != Detail::None)
            .map(|f| ChangedFile {
                path: f.filename,
                status: f.status,
                additions: f.additions,
                deletions: f.deletions,
                patch: f.patch.filter(|_| self.detail == Detail::FullPatch),
            })
            .collect();
        let message = c.commit.commit.message.clone();
        let (additions, deletions) = c.stats.map_or((0, 0), |s| (s.additions, s.deletions));
        Ok(CommitDetail {
            commit: c.commit.summary(),
            message,
            additions,
            deletions,
            files,
        })
    }
}
