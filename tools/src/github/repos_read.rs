//! GitHub's `repos` toolset, reading: files and folders, branches, commits, tags,
//! releases and collaborators. Each answer is read through the shape GitHub documents
//! (the `Wire` structs): a field it always sends missing, or of another type, is an
//! `unexpected_answer`, never an empty value.

mod commits;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{GitHub, encode, paging};
use crate::Failure;

pub(crate) use commits::commit_summary;
pub use commits::{ChangedFile, CommitDetail, CommitSummary, Commits, Detail, GitHubGetCommit, GitHubListCommits};

/// A repository path, each segment percent-encoded and the slashes kept.
pub(crate) fn encode_path(path: &str) -> String {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// Get a file's content (text, or base64 if not UTF-8) or a folder's entries from a GitHub
/// repository; files over 1 MB via their blob (to about 7 MB). Content not readable whole is an
/// error.
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
    /// Path; default the root (`""` or `/`). No `.` or `..` segment.
    #[schemars(
        length(max = 4096),
        regex(pattern = "^/?(([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+)(/([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+))*/?)?$")
    )]
    pub path: Option<String>,
    /// Branch, tag or commit; default the default branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub r#ref: Option<String>,
    /// Commit sha, instead of `ref`.
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
    /// A UTF-8 file's text; control and invisible characters are shown as pictures or
    /// escapes, and then its exact bytes are in `content_base64` too.
    pub content: Option<String>,
    /// Another file's bytes (or a shown text's exact bytes), base64.
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

/// A folder's entry as GitHub lists it.
#[derive(Deserialize)]
struct WireEntry {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    size: u64,
}

/// A file (or symlink, or submodule) as the contents endpoint sends it: `content` and
/// `encoding` only for a file, `encoding: "none"` and an empty content over 1 MB.
#[derive(Deserialize)]
struct WireFile {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    sha: String,
    size: u64,
    content: Option<String>,
    encoding: Option<String>,
}

/// A blob: its content base64 (or, GitHub allows it, UTF-8 text), up to 100 MB.
#[derive(Deserialize)]
struct WireBlob {
    content: String,
    encoding: String,
    size: Option<u64>,
}

/// An answer that is not what was expected, saying why.
fn unexpected(message: String) -> ToolError {
    Failure::UnexpectedAnswer {
        service: "github".into(),
        status: 200,
        message,
    }
    .into()
}

/// A file's bytes from its content as sent (base64 or text), the whole of `size` of them:
/// a content that does not decode, or decodes to fewer or more bytes, is refused.
fn decoded(path: &str, content: &str, encoding: &str, size: u64) -> Result<Vec<u8>, ToolError> {
    let bytes = match encoding {
        "base64" => {
            let encoded: String = content.split_whitespace().collect();
            BASE64_STANDARD.decode(encoded.as_bytes()).map_err(|e| {
                unexpected(format!(
                    "the content of `{path}` is not valid base64 ({e}); nothing was read from it"
                ))
            })?
        }
        "utf-8" => content.as_bytes().to_vec(),
        other => {
            return Err(unexpected(format!(
                "the content of `{path}` came in an encoding kyro does not read (`{other}`)"
            )));
        }
    };
    if bytes.len() as u64 != size {
        return Err(unexpected(format!(
            "the content of `{path}` is {} bytes where its size is {size}; nothing was read from it",
            bytes.len()
        )));
    }
    Ok(bytes)
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
        let github = GitHub::for_call(cx)?;
        let answer = github.send(cx, "GET", &path, None)?;
        if answer.body.is_array() {
            let entries: Vec<WireEntry> = answer.parse()?;
            return Ok(Contents {
                path: given,
                kind: "dir".into(),
                sha: None,
                size: None,
                content: None,
                content_base64: None,
                entries: Some(
                    entries
                        .into_iter()
                        .map(|e| Entry {
                            name: e.name,
                            kind: e.kind,
                            size: e.size,
                        })
                        .collect(),
                ),
            });
        }
        let file: WireFile = answer.parse()?;
        let mut content = file.content.clone();
        let mut encoding = file.encoding.clone();
        let left_out = encoding.as_deref() == Some("none")
            || (file.size > 0 && content.as_deref().is_none_or(|c| c.trim().is_empty()));
        if file.kind == "file" && left_out {
            // Over 1 MB the contents endpoint leaves the content out; the blob has it
            // (base64, up to 100 MB, of which the client reads 10 MiB of answer).
            let blob = format!("/repos/{}/{}/git/blobs/{}", self.owner, self.repo, encode(&file.sha));
            let blob: WireBlob = github.send(cx, "GET", &blob, None)?.parse()?;
            if blob.size.is_some_and(|size| size != file.size) {
                return Err(unexpected(format!(
                    "the blob of `{}` is not the size its contents answer gave",
                    file.path
                )));
            }
            content = Some(blob.content);
            encoding = Some(blob.encoding);
        }
        let (content, content_base64) = match content {
            // A symlink or a submodule: no content.
            None => (None, None),
            Some(sent) => {
                let bytes = decoded(&file.path, &sent, encoding.as_deref().unwrap_or("base64"), file.size)?;
                match String::from_utf8(bytes) {
                    // Text that would drive a terminal or hide from a reader is shown as
                    // itself, with its exact bytes beside it (unless they hold the token).
                    Ok(text) => match github.tidy_text(&text) {
                        shown if shown == text => (Some(text), None),
                        shown if github.carries_token(&text) => (Some(shown), None),
                        shown => (Some(shown), Some(BASE64_STANDARD.encode(text.as_bytes()))),
                    },
                    Err(e) => (None, Some(BASE64_STANDARD.encode(e.as_bytes()))),
                }
            }
        };
        Ok(Contents {
            path: file.path,
            kind: file.kind,
            sha: Some(file.sha),
            size: Some(file.size),
            content,
            content_base64,
            entries: None,
        })
    }
}

/// List a repository's branches.
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
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
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

/// A branch or tag as GitHub lists it (`protected` for a branch only).
#[derive(Deserialize)]
struct WireNamed {
    name: String,
    commit: WireSha,
    protected: Option<bool>,
}

#[derive(Deserialize)]
struct WireSha {
    sha: String,
}

/// The branches or tags of a list answer: anything but a list of them is refused.
fn named(answer: &super::client::Answer) -> Result<Vec<NamedCommit>, ToolError> {
    answer.items()?;
    let list: Vec<WireNamed> = answer.parse()?;
    Ok(list
        .into_iter()
        .map(|b| NamedCommit {
            name: b.name,
            sha: b.commit.sha,
            protected: b.protected,
        })
        .collect())
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
            refs: named(&answer)?,
            next_page: answer.next_page,
        })
    }
}

/// List a repository's tags.
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
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
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
            refs: named(&answer)?,
            next_page: answer.next_page,
        })
    }
}

/// List a repository's collaborators with their role.
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
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
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

/// A collaborator as GitHub lists one.
#[derive(Deserialize)]
struct WireCollaborator {
    login: String,
    role_name: String,
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
        answer.items()?;
        let people: Vec<WireCollaborator> = answer.parse()?;
        Ok(Collaborators {
            collaborators: people
                .into_iter()
                .map(|c| Collaborator {
                    login: c.login,
                    role: c.role_name,
                })
                .collect(),
            next_page: answer.next_page,
        })
    }
}
