//! GitHub's `repos` toolset, writing: files (one, or many in one commit), branches,
//! repositories and forks. A file's path has no `.`, `..` or empty segment (the schema
//! refuses them); each answer is read through the shape GitHub documents (the `Wire`
//! structs), and what one answer names goes into the next request's path encoded.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::{GitHub, encode};
use super::repos_read::encode_path;
use crate::Failure;

#[derive(Deserialize)]
struct WireSha {
    sha: String,
}

/// A reference: what it points to.
#[derive(Deserialize)]
struct WireRef {
    object: WireSha,
}

/// A file in the repository, as the contents endpoint sends it.
#[derive(Deserialize)]
struct WireFile {
    #[serde(rename = "type")]
    kind: String,
    sha: String,
}

/// The commit a write made.
#[derive(Deserialize)]
struct WireCommitMade {
    sha: String,
    html_url: String,
}

/// A file written: the file and the commit.
#[derive(Deserialize)]
struct WireWritten {
    content: WireWrittenFile,
    commit: WireCommitMade,
}

#[derive(Deserialize)]
struct WireWrittenFile {
    path: String,
    sha: String,
}

/// A file deleted: the commit (`content` is null).
#[derive(Deserialize)]
struct WireDeleted {
    commit: WireCommitMade,
}

/// A git commit object: its tree.
#[derive(Deserialize)]
struct WireGitCommit {
    tree: WireSha,
}

/// A reference made.
#[derive(Deserialize)]
struct WireRefMade {
    #[serde(rename = "ref")]
    _name: String,
}

/// A repository.
#[derive(Deserialize)]
struct WireRepository {
    full_name: String,
    html_url: String,
    private: bool,
    default_branch: String,
}

/// A file written or deleted, and the commit that did it.
#[kyro_core::output]
#[derive(Debug)]
pub struct FileCommit {
    /// The file's path.
    pub path: String,
    /// Its new blob sha; absent after a deletion.
    pub sha: Option<String>,
    /// The commit.
    pub commit_sha: String,
    /// The commit's web address.
    pub commit_url: String,
}

/// Create or replace a file in a GitHub repository as one commit on `branch`.
/// Replacing needs `sha` (the blob sha from `github_get_file_contents`): a file changed since is
/// not overwritten.
#[tool(
    name = "github_create_or_update_file",
    title = "Create or update a GitHub file",
    category = "github.repos",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["create_or_update_file"]
)]
pub struct GitHubCreateOrUpdateFile {
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
    /// File path (no `.`, `..` or empty segment, no leading `/`).
    #[schemars(
        length(min = 1, max = 4096),
        regex(pattern = "^([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+)(/([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+))*$")
    )]
    pub path: String,
    /// Whole new content (text).
    #[schemars(length(max = 10485760))]
    pub content: String,
    /// Commit message.
    #[schemars(length(min = 1, max = 10000))]
    pub message: String,
    /// Branch to commit to.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub branch: String,
    /// Blob sha of the file it replaces.
    #[schemars(regex(pattern = "^[0-9a-f]{40,64}$"))]
    pub sha: Option<String>,
}

impl Execute for GitHubCreateOrUpdateFile {
    type Output = FileCommit;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FileCommit, ToolError> {
        let github = GitHub::for_call(cx)?;
        let path = format!(
            "/repos/{}/{}/contents/{}",
            self.owner,
            self.repo,
            encode_path(&self.path)
        );
        if self.sha.is_none() {
            // A new file: refused if one is there, rather than failing without saying why.
            match github.send(cx, "GET", &format!("{path}?ref={}", encode(&self.branch)), None) {
                Ok(answer) if answer.body.is_array() => {
                    return Err(Failure::InvalidRequest {
                        message: format!("`{}` is a folder on `{}`", self.path, self.branch),
                    }
                    .into());
                }
                Ok(answer) => {
                    let there: WireFile = answer.parse()?;
                    return Err(Failure::InvalidRequest {
                        message: format!(
                            "`{}` exists on `{}` (blob sha {}); pass `sha` to replace it",
                            self.path, self.branch, there.sha
                        ),
                    }
                    .into());
                }
                // Not there: made below.
                Err(e) if matches!(Failure::of(&e), Some(Failure::Remote { status: 404, .. })) => {}
                Err(e) => return Err(e),
            }
        }
        let mut body = json!({
            "message": self.message,
            "content": BASE64_STANDARD.encode(self.content.as_bytes()),
            "branch": self.branch,
        });
        if let Some(sha) = &self.sha {
            body["sha"] = json!(sha);
        }
        let v: WireWritten = github.send(cx, "PUT", &path, Some(&body))?.parse()?;
        Ok(FileCommit {
            path: v.content.path,
            sha: Some(v.content.sha),
            commit_sha: v.commit.sha,
            commit_url: v.commit.html_url,
        })
    }
}

/// Delete a file from a GitHub repository as one commit on `branch`.
#[tool(
    name = "github_delete_file",
    title = "Delete a GitHub file",
    category = "github.repos",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["delete_file"]
)]
pub struct GitHubDeleteFile {
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
    /// File path (no `.`, `..` or empty segment, no leading `/`).
    #[schemars(
        length(min = 1, max = 4096),
        regex(pattern = "^([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+)(/([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+))*$")
    )]
    pub path: String,
    /// Commit message.
    #[schemars(length(min = 1, max = 10000))]
    pub message: String,
    /// Branch to commit to.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub branch: String,
}

impl Execute for GitHubDeleteFile {
    type Output = FileCommit;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FileCommit, ToolError> {
        let github = GitHub::for_call(cx)?;
        let path = format!(
            "/repos/{}/{}/contents/{}",
            self.owner,
            self.repo,
            encode_path(&self.path)
        );
        let current = github.send(cx, "GET", &format!("{path}?ref={}", encode(&self.branch)), None)?;
        let not_a_file = || -> ToolError {
            Failure::InvalidRequest {
                message: format!("`{}` is not a file on `{}`", self.path, self.branch),
            }
            .into()
        };
        if current.body.is_array() {
            return Err(not_a_file());
        }
        let current: WireFile = current.parse()?;
        if current.kind != "file" {
            return Err(not_a_file());
        }
        let body = json!({"message": self.message, "sha": current.sha, "branch": self.branch});
        let v: WireDeleted = github.send(cx, "DELETE", &path, Some(&body))?.parse()?;
        Ok(FileCommit {
            path: self.path,
            sha: None,
            commit_sha: v.commit.sha,
            commit_url: v.commit.html_url,
        })
    }
}

/// A file.
#[kyro_core::input]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct PushedFile {
    /// Path (no `.`, `..` or empty segment, no leading `/`).
    #[schemars(
        length(min = 1, max = 4096),
        regex(pattern = "^([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+)(/([^/.][^/]*|\\.[^/.][^/]*|\\.\\.[^/]+))*$")
    )]
    pub path: String,
    /// Whole content (text).
    #[schemars(length(max = 10485760))]
    pub content: String,
}

/// Write several files to a GitHub repository as one commit on an existing `branch`.
#[tool(
    name = "github_push_files",
    title = "Push files to GitHub",
    category = "github.repos",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = true,
    aliases = ["push_files"]
)]
pub struct GitHubPushFiles {
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
    /// Branch to commit to.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub branch: String,
    /// The files.
    #[schemars(length(min = 1, max = 100))]
    pub files: Vec<PushedFile>,
    /// Commit message.
    #[schemars(length(min = 1, max = 10000))]
    pub message: String,
}

/// A commit pushed.
#[kyro_core::output]
#[derive(Debug)]
pub struct Pushed {
    /// The branch.
    pub branch: String,
    /// The new commit.
    pub commit_sha: String,
    /// The paths written.
    pub paths: Vec<String>,
}

impl Execute for GitHubPushFiles {
    type Output = Pushed;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Pushed, ToolError> {
        let github = GitHub::for_call(cx)?;
        let git = format!("/repos/{}/{}/git", self.owner, self.repo);
        let head_ref = format!("{git}/ref/heads/{}", encode_path(&self.branch));
        let head: WireRef = github.send(cx, "GET", &head_ref, None)?.parse()?;
        let head = head.object.sha;
        // The sha is the answer's: encoded, it names one commit and nothing else.
        let base: WireGitCommit = github
            .send(cx, "GET", &format!("{git}/commits/{}", encode(&head)), None)?
            .parse()?;
        let base_tree = base.tree.sha;
        let entries: Vec<Value> = self
            .files
            .iter()
            .map(|f| json!({"path": f.path, "mode": "100644", "type": "blob", "content": f.content}))
            .collect();
        let tree_body = json!({"base_tree": base_tree, "tree": entries});
        let tree: WireSha = github
            .send(cx, "POST", &format!("{git}/trees"), Some(&tree_body))?
            .parse()?;
        let commit_body = json!({"message": self.message, "tree": tree.sha, "parents": [head]});
        let commit: WireSha = github
            .send(cx, "POST", &format!("{git}/commits"), Some(&commit_body))?
            .parse()?;
        let commit = commit.sha;
        let update = json!({"sha": commit, "force": false});
        let _: WireRef = github
            .send(
                cx,
                "PATCH",
                &format!("{git}/refs/heads/{}", encode_path(&self.branch)),
                Some(&update),
            )?
            .parse()?;
        Ok(Pushed {
            branch: self.branch,
            commit_sha: commit,
            paths: self.files.into_iter().map(|f| f.path).collect(),
        })
    }
}

/// Create a branch in a GitHub repository.
#[tool(
    name = "github_create_branch",
    title = "Create a GitHub branch",
    category = "github.repos",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["create_branch"]
)]
pub struct GitHubCreateBranch {
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
    /// New branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&~^:]+$"))]
    pub branch: String,
    /// Start branch; default the default branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub from_branch: Option<String>,
}

/// A branch made.
#[kyro_core::output]
#[derive(Debug)]
pub struct BranchMade {
    /// The branch.
    pub branch: String,
    /// The commit it points to.
    pub sha: String,
}

impl Execute for GitHubCreateBranch {
    type Output = BranchMade;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<BranchMade, ToolError> {
        let github = GitHub::for_call(cx)?;
        let repo = format!("/repos/{}/{}", self.owner, self.repo);
        let from = match self.from_branch {
            Some(from) => from,
            None => {
                let repository: WireRepository = github.send(cx, "GET", &repo, None)?.parse()?;
                repository.default_branch
            }
        };
        let head: WireRef = github
            .send(cx, "GET", &format!("{repo}/git/ref/heads/{}", encode_path(&from)), None)?
            .parse()?;
        let sha = head.object.sha;
        let body = json!({"ref": format!("refs/heads/{}", self.branch), "sha": sha});
        let _: WireRefMade = github
            .send(cx, "POST", &format!("{repo}/git/refs"), Some(&body))?
            .parse()?;
        Ok(BranchMade {
            branch: self.branch,
            sha,
        })
    }
}

/// A repository.
#[kyro_core::output]
#[derive(Debug)]
pub struct Repository {
    /// `owner/name`.
    pub full_name: String,
    /// Its web address.
    pub html_url: String,
    /// Private or public.
    pub private: bool,
    /// Its default branch.
    pub default_branch: String,
}

impl Repository {
    /// The repository an answer names: anything else is an `unexpected_answer`.
    fn from_answer(answer: &super::client::Answer) -> Result<Repository, ToolError> {
        let v: WireRepository = answer.parse()?;
        Ok(Repository {
            full_name: v.full_name,
            html_url: v.html_url,
            private: v.private,
            default_branch: v.default_branch,
        })
    }
}

/// Create a GitHub repository for the token's user or an organization.
#[tool(
    name = "github_create_repository",
    title = "Create a GitHub repository",
    category = "github.repos",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["create_repository"]
)]
pub struct GitHubCreateRepository {
    /// Name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub name: String,
    /// Description.
    #[schemars(length(max = 350))]
    pub description: Option<String>,
    /// Organization; default the token's user.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9][A-Za-z0-9-]*$"))]
    pub organization: Option<String>,
    /// Private.
    #[serde(default = "crate::files::yes")]
    pub private: bool,
    /// Start with a README commit.
    #[tool(alias = "autoInit")]
    #[serde(default)]
    pub auto_init: bool,
}

impl Execute for GitHubCreateRepository {
    type Output = Repository;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Repository, ToolError> {
        let path = match &self.organization {
            Some(org) => format!("/orgs/{org}/repos"),
            None => "/user/repos".to_owned(),
        };
        let body = json!({
            "name": self.name,
            "description": self.description.unwrap_or_default(),
            "private": self.private,
            "auto_init": self.auto_init,
        });
        Repository::from_answer(&GitHub::for_call(cx)?.send(cx, "POST", &path, Some(&body))?)
    }
}

/// Fork a GitHub repository to the token's user or an organization; the fork's content can take a
/// moment to appear.
#[tool(
    name = "github_fork_repository",
    title = "Fork a GitHub repository",
    category = "github.repos",
    effect = "network",
    capabilities = ["network", "github.write"],
    approval = "required",
    destructive = false,
    aliases = ["fork_repository"]
)]
pub struct GitHubForkRepository {
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
    /// Organization; default the token's user.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9][A-Za-z0-9-]*$"))]
    pub organization: Option<String>,
}

impl Execute for GitHubForkRepository {
    type Output = Repository;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Repository, ToolError> {
        let path = format!("/repos/{}/{}/forks", self.owner, self.repo);
        let body = match &self.organization {
            Some(org) => json!({"organization": org}),
            None => json!({}),
        };
        Repository::from_answer(&GitHub::for_call(cx)?.send(cx, "POST", &path, Some(&body))?)
    }
}
