//! GitHub's `repos` toolset, reading: files and folders, branches, commits, tags,
//! releases and collaborators.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::client::{GitHub, encode, items, login, paging, text};

/// A repository path, each segment percent-encoded and the slashes kept.
pub(crate) fn encode_path(path: &str) -> String {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// Get a file's content (as text, or base64 when it is not UTF-8) or a folder's entries
/// from a GitHub repository, at a branch, tag or commit (`ref`; default the default
/// branch).
#[tool(
    name = "github_get_file_contents",
    title = "Get GitHub file contents",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_file_contents"]
)]
pub struct GitHubGetFileContents {
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// The path in the repository; default the root folder.
    #[schemars(length(max = 4096))]
    pub path: Option<String>,
    /// A branch, tag or commit; default the default branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub r#ref: Option<String>,
    /// A commit sha, in place of `ref`.
    #[schemars(regex(pattern = "^[0-9a-fA-F]{7,64}$"))]
    pub sha: Option<String>,
}

/// A file or a folder.
#[kyro_core::output]
#[derive(Debug)]
pub struct Contents {
    /// The path.
    pub path: String,
    /// `file`, `dir`, `symlink` or `submodule`.
    pub kind: String,
    /// A file's blob sha (what `github_create_or_update_file` takes to replace it).
    pub sha: Option<String>,
    /// A file's size in bytes.
    pub size: Option<u64>,
    /// A UTF-8 file's text.
    pub content: Option<String>,
    /// Another file's bytes, base64.
    pub content_base64: Option<String>,
    /// A folder's entries.
    pub entries: Option<Vec<Entry>>,
}

/// A folder's entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// `file`, `dir`, `symlink` or `submodule`.
    pub kind: String,
    /// Its size in bytes (0 for a folder).
    pub size: u64,
}

impl Execute for GitHubGetFileContents {
    type Output = Contents;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Contents, ToolError> {
        let given = self.path.clone().unwrap_or_default();
        let mut path = format!("/repos/{}/{}/contents/{}", self.owner, self.repo, encode_path(&given));
        if let Some(r) = self.sha.as_ref().or(self.r#ref.as_ref()) {
            path.push_str(&format!("?ref={}", encode(r)));
        }
        let body = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?.body;
        if let Some(entries) = body.as_array() {
            return Ok(Contents {
                path: given,
                kind: "dir".into(),
                sha: None,
                size: None,
                content: None,
                content_base64: None,
                entries: Some(
                    entries
                        .iter()
                        .map(|e| Entry {
                            name: text(&e["name"]),
                            kind: text(&e["type"]),
                            size: e["size"].as_u64().unwrap_or(0),
                        })
                        .collect(),
                ),
            });
        }
        let encoded: String = text(&body["content"]).split_whitespace().collect();
        let bytes = BASE64_STANDARD.decode(encoded.as_bytes()).unwrap_or_default();
        let (content, content_base64) = match String::from_utf8(bytes) {
            Ok(text) => (Some(text), None),
            Err(_) => (None, Some(encoded)),
        };
        Ok(Contents {
            path: text(&body["path"]),
            kind: text(&body["type"]),
            sha: Some(text(&body["sha"])),
            size: body["size"].as_u64(),
            content,
            content_base64,
            entries: None,
        })
    }
}

/// List a GitHub repository's branches, a page at a time.
#[tool(
    name = "github_list_branches",
    title = "List GitHub branches",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_branches"]
)]
pub struct GitHubListBranches {
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// Page, 1-based; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30, at most 100.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// Named commits (branches or tags), a page of them.
#[kyro_core::output]
#[derive(Debug)]
pub struct Refs {
    /// The names and the commits they point to.
    pub refs: Vec<NamedCommit>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A name and its commit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NamedCommit {
    /// The branch's or tag's name.
    pub name: String,
    /// The commit.
    pub sha: String,
    /// For a branch: whether it is protected.
    pub protected: Option<bool>,
}

fn named(list: &Value) -> Vec<NamedCommit> {
    items(list)
        .iter()
        .map(|b| NamedCommit {
            name: text(&b["name"]),
            sha: text(&b["commit"]["sha"]),
            protected: b["protected"].as_bool(),
        })
        .collect()
}

impl Execute for GitHubListBranches {
    type Output = Refs;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Refs, ToolError> {
        let path = format!(
            "/repos/{}/{}/branches?{}",
            self.owner,
            self.repo,
            paging(self.page, self.per_page)
        );
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        Ok(Refs {
            refs: named(&answer.body),
            next_page: answer.next_page,
        })
    }
}

/// List a GitHub repository's tags, a page at a time.
#[tool(
    name = "github_list_tags",
    title = "List GitHub tags",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_tags"]
)]
pub struct GitHubListTags {
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// Page, 1-based; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30, at most 100.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

impl Execute for GitHubListTags {
    type Output = Refs;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Refs, ToolError> {
        let path = format!(
            "/repos/{}/{}/tags?{}",
            self.owner,
            self.repo,
            paging(self.page, self.per_page)
        );
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        Ok(Refs {
            refs: named(&answer.body),
            next_page: answer.next_page,
        })
    }
}

/// List a GitHub repository's commits, newest first, from a branch, tag or commit (`sha`;
/// default the default branch), optionally by one author.
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
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// Where to start: a branch, tag or commit.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub sha: Option<String>,
    /// Only commits by this login or email.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub author: Option<String>,
    /// Only commits touching this path.
    #[schemars(length(min = 1, max = 4096))]
    pub path: Option<String>,
    /// Only commits after this time (ISO 8601, `2026-01-31` or `2026-01-31T12:00:00Z`).
    #[schemars(regex(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]{8}Z)?$"))]
    pub since: Option<String>,
    /// Only commits before this time (ISO 8601).
    #[schemars(regex(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]{8}Z)?$"))]
    pub until: Option<String>,
    /// Page, 1-based; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30, at most 100.
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
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
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
        Ok(Commits {
            commits: items(&answer.body).iter().map(commit_summary).collect(),
            next_page: answer.next_page,
        })
    }
}

/// Get one commit of a GitHub repository: its message, author, and (`detail`) the files
/// it changed with their line counts (`stats`, the default), with their patches too
/// (`full_patch`), or neither (`none`).
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
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// The commit: a sha, branch or tag.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub sha: String,
    /// How much of the change; default `stats`.
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
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<CommitDetail, ToolError> {
        let path = format!("/repos/{}/{}/commits/{}", self.owner, self.repo, encode(&self.sha));
        let c = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?.body;
        let files = items(&c["files"])
            .iter()
            .filter(|_| self.detail != Detail::None)
            .map(|f| ChangedFile {
                path: text(&f["filename"]),
                status: text(&f["status"]),
                additions: f["additions"].as_u64().unwrap_or(0),
                deletions: f["deletions"].as_u64().unwrap_or(0),
                patch: (self.detail == Detail::FullPatch)
                    .then(|| f["patch"].as_str().map(str::to_owned))
                    .flatten(),
            })
            .collect();
        Ok(CommitDetail {
            commit: commit_summary(&c),
            message: text(&c["commit"]["message"]),
            additions: c["stats"]["additions"].as_u64().unwrap_or(0),
            deletions: c["stats"]["deletions"].as_u64().unwrap_or(0),
            files,
        })
    }
}

/// List the collaborators of a GitHub repository with their role, a page at a time.
#[tool(
    name = "github_list_repository_collaborators",
    title = "List GitHub collaborators",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_repository_collaborators"]
)]
pub struct GitHubListRepositoryCollaborators {
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// Page, 1-based; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30, at most 100.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// Collaborators.
#[kyro_core::output]
#[derive(Debug)]
pub struct Collaborators {
    /// Each collaborator.
    pub collaborators: Vec<Collaborator>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// One collaborator.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Collaborator {
    /// The login.
    pub login: String,
    /// `admin`, `maintain`, `write`, `triage` or `read`.
    pub role: String,
}

impl Execute for GitHubListRepositoryCollaborators {
    type Output = Collaborators;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Collaborators, ToolError> {
        let path = format!(
            "/repos/{}/{}/collaborators?{}",
            self.owner,
            self.repo,
            paging(self.page, self.per_page)
        );
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        Ok(Collaborators {
            collaborators: items(&answer.body)
                .iter()
                .map(|c| Collaborator {
                    login: login(c),
                    role: text(&c["role_name"]),
                })
                .collect(),
            next_page: answer.next_page,
        })
    }
}
