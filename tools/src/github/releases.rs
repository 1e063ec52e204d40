//! GitHub's `repos` toolset: releases and tags. Each answer is read through the shape
//! GitHub documents (the `Wire` structs): a field it always sends missing, or of another
//! type, is an `unexpected_answer`.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{Answer, GitHub, encode, paging};

/// A release.
#[kyro_core::output]
#[derive(Debug)]
pub struct Release {
    /// Its tag.
    pub tag_name: String,
    /// Its title.
    pub name: String,
    /// Its notes (markdown).
    pub body: String,
    /// A draft, not published.
    pub draft: bool,
    /// Marked a pre-release.
    pub prerelease: bool,
    /// When it was published (ISO 8601).
    pub published_at: Option<String>,
    /// Who made it.
    pub author: String,
    /// Its web address.
    pub html_url: String,
    /// Its files: name, size and download address.
    pub assets: Vec<Asset>,
}

/// A release's file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Asset {
    /// Its name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Where to download it.
    pub url: String,
}

/// A release as GitHub sends it: its name, notes and publication may be null.
#[derive(Deserialize)]
struct WireRelease {
    tag_name: String,
    name: Option<String>,
    body: Option<String>,
    draft: bool,
    prerelease: bool,
    published_at: Option<String>,
    author: WireLogin,
    html_url: String,
    assets: Vec<WireAsset>,
}

#[derive(Deserialize)]
struct WireLogin {
    login: String,
}

#[derive(Deserialize)]
struct WireAsset {
    name: String,
    size: u64,
    browser_download_url: String,
}

/// A reference: the object it names (a commit, or an annotated tag).
#[derive(Deserialize)]
struct WireRef {
    object: WireObject,
}

#[derive(Deserialize)]
struct WireObject {
    #[serde(rename = "type")]
    kind: String,
    sha: String,
}

/// An annotated tag.
#[derive(Deserialize)]
struct WireTag {
    message: String,
    tagger: Option<WireTagger>,
    object: WireObject,
}

#[derive(Deserialize)]
struct WireTagger {
    name: String,
}

impl Release {
    fn from_wire(r: WireRelease) -> Release {
        Release {
            tag_name: r.tag_name,
            name: r.name.unwrap_or_default(),
            body: r.body.unwrap_or_default(),
            draft: r.draft,
            prerelease: r.prerelease,
            published_at: r.published_at,
            author: r.author.login,
            html_url: r.html_url,
            assets: r
                .assets
                .into_iter()
                .map(|a| Asset {
                    name: a.name,
                    size: a.size,
                    url: a.browser_download_url,
                })
                .collect(),
        }
    }

    /// The release an answer names: anything else is an `unexpected_answer`.
    fn from_answer(answer: &Answer) -> Result<Release, ToolError> {
        Ok(Release::from_wire(answer.parse()?))
    }
}

/// List a repository's releases, newest first.
#[tool(
    name = "github_list_releases",
    title = "List GitHub releases",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_releases"]
)]
pub struct GitHubListReleases {
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

/// A page of releases.
#[kyro_core::output]
#[derive(Debug)]
pub struct Releases {
    /// The releases.
    pub releases: Vec<Release>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

impl Execute for GitHubListReleases {
    type Output = Releases;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Releases, ToolError> {
        let path = format!(
            "/repos/{}/{}/releases?{}",
            self.owner,
            self.repo,
            paging(self.page, self.per_page)
        );
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        answer.items()?;
        let releases: Vec<WireRelease> = answer.parse()?;
        Ok(Releases {
            releases: releases.into_iter().map(Release::from_wire).collect(),
            next_page: answer.next_page,
        })
    }
}

/// Get a repository's latest published release (not draft or pre-release).
#[tool(
    name = "github_get_latest_release",
    title = "Get the latest GitHub release",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_latest_release"]
)]
pub struct GitHubGetLatestRelease {
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
}

impl Execute for GitHubGetLatestRelease {
    type Output = Release;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Release, ToolError> {
        let path = format!("/repos/{}/{}/releases/latest", self.owner, self.repo);
        Release::from_answer(&GitHub::for_call(cx)?.send(cx, "GET", &path, None)?)
    }
}

/// Get a repository's release by tag (`v1.0.0`).
#[tool(
    name = "github_get_release_by_tag",
    title = "Get a GitHub release by tag",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_release_by_tag"]
)]
pub struct GitHubGetReleaseByTag {
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
    /// The tag.
    #[schemars(length(min = 1, max = 256))]
    pub tag: String,
}

impl Execute for GitHubGetReleaseByTag {
    type Output = Release;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<Release, ToolError> {
        let path = format!(
            "/repos/{}/{}/releases/tags/{}",
            self.owner,
            self.repo,
            encode(&self.tag)
        );
        Release::from_answer(&GitHub::for_call(cx)?.send(cx, "GET", &path, None)?)
    }
}

/// Get a tag: its commit, and an annotated tag's message and tagger.
#[tool(
    name = "github_get_tag",
    title = "Get a GitHub tag",
    category = "github.repos",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_tag"]
)]
pub struct GitHubGetTag {
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
    /// The tag.
    #[schemars(length(min = 1, max = 256))]
    pub tag: String,
}

/// A tag.
#[kyro_core::output]
#[derive(Debug)]
pub struct TagInfo {
    /// Its name.
    pub tag: String,
    /// The commit it names.
    pub sha: String,
    /// True for an annotated tag.
    pub annotated: bool,
    /// An annotated tag's message.
    pub message: Option<String>,
    /// An annotated tag's tagger.
    pub tagger: Option<String>,
}

impl Execute for GitHubGetTag {
    type Output = TagInfo;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<TagInfo, ToolError> {
        let github = GitHub::for_call(cx)?;
        let reference = format!("/repos/{}/{}/git/ref/tags/{}", self.owner, self.repo, encode(&self.tag));
        let object = github.send(cx, "GET", &reference, None)?.parse::<WireRef>()?.object;
        if object.kind == "commit" {
            return Ok(TagInfo {
                tag: self.tag,
                sha: object.sha,
                annotated: false,
                message: None,
                tagger: None,
            });
        }
        let path = format!("/repos/{}/{}/git/tags/{}", self.owner, self.repo, encode(&object.sha));
        let tag: WireTag = github.send(cx, "GET", &path, None)?.parse()?;
        Ok(TagInfo {
            tag: self.tag,
            sha: tag.object.sha,
            annotated: true,
            message: Some(tag.message),
            tagger: tag.tagger.map(|t| t.name),
        })
    }
}
