//! GitHub's `pull_requests` toolset, reading: `pull_request_read` (with kyro's
//! `github_get_pull_request` folded in), `list_pull_requests`, `search_pull_requests`.

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{GitHub, encode, paging};
use super::issue_read::IssueComment;
use super::repos_read::{ChangedFile, CommitSummary, commit_summary};
use super::search::{FoundIssues, IssueSort, Order};
use super::wire::{HeadWire, IssueCommentWire, PullWire, ReviewWire, User, author, list};

/// A pull request.
#[kyro_core::output]
#[derive(Debug)]
pub struct PullRequest {
    /// Its number.
    pub number: u64,
    /// Title.
    pub title: String,
    /// `open` or `closed`.
    pub state: String,
    /// Body (markdown), empty when none.
    pub body: String,
    /// Author's login.
    pub author: String,
    /// The branch with the changes.
    pub head: String,
    /// The commit at its head (what `github_merge_pull_request` takes as `sha`).
    pub head_sha: String,
    /// The branch they go into.
    pub base: String,
    /// Whether it was merged.
    pub merged: bool,
    /// Whether it is a draft.
    pub draft: bool,
    /// `clean`, `dirty` (conflicts), `blocked`, `behind`, `unstable` or `unknown`, when known.
    pub mergeable_state: Option<String>,
    /// Web address.
    pub html_url: String,
}

/// Read a GitHub pull request, or a page of one of its lists, by `method`.
#[tool(
    name = "github_pull_request_read",
    title = "Read a GitHub pull request",
    category = "github.pull_requests",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["pull_request_read", "github_get_pull_request"]
)]
pub struct GitHubPullRequestRead {
    /// `get` (default), `get_diff`, `get_status` (head's combined status), `get_files`,
    /// `get_commits`, `get_review_comments` (on lines), `get_reviews`, `get_comments`
    /// (conversation) or `get_check_runs`.
    #[serde(default)]
    pub method: PullReadMethod,
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
    #[tool(alias = "pullNumber", alias = "number")]
    #[schemars(range(min = 1))]
    pub pull_number: u64,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// What `github_pull_request_read` reads.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PullReadMethod {
    /// The pull request.
    #[default]
    Get,
    /// Its unified diff.
    GetDiff,
    /// Its head commit's combined status.
    GetStatus,
    /// The files it changes.
    GetFiles,
    /// Its commits.
    GetCommits,
    /// Comments on its lines.
    GetReviewComments,
    /// Its reviews.
    GetReviews,
    /// Its conversation.
    GetComments,
    /// Its head commit's check runs.
    GetCheckRuns,
}

/// What was read: the one field the method names.
#[kyro_core::output]
#[derive(Debug, Default)]
pub struct PullRequestRead {
    /// The pull request (`get`).
    pub pull_request: Option<PullRequest>,
    /// Its unified diff (`get_diff`).
    pub diff: Option<String>,
    /// The combined status: `success`, `failure`, `pending` or `error`, and each (`get_status`).
    pub status: Option<CombinedStatus>,
    /// The files (`get_files`).
    pub files: Option<Vec<ChangedFile>>,
    /// The commits (`get_commits`).
    pub commits: Option<Vec<CommitSummary>>,
    /// Comments on lines (`get_review_comments`).
    pub review_comments: Option<Vec<ReviewComment>>,
    /// Reviews (`get_reviews`).
    pub reviews: Option<Vec<Review>>,
    /// The conversation (`get_comments`).
    pub comments: Option<Vec<IssueComment>>,
    /// Check runs (`get_check_runs`).
    pub check_runs: Option<Vec<CheckRun>>,
    /// The next page of a list, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A commit's combined status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CombinedStatus {
    /// The overall state.
    pub state: String,
    /// Each context's state.
    pub statuses: Vec<StatusCheck>,
}

/// One status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusCheck {
    /// Its context (`ci/build`).
    pub context: String,
    /// Its state.
    pub state: String,
    /// Its description.
    pub description: String,
}

/// A comment on a line of a pull request.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReviewComment {
    /// Its id (what `github_add_reply_to_pull_request_comment` takes).
    pub id: u64,
    /// Its author.
    pub author: String,
    /// The file.
    pub path: String,
    /// The line, when on one.
    pub line: Option<u64>,
    /// The text.
    pub body: String,
    /// The comment it replies to.
    pub in_reply_to: Option<u64>,
}

/// A review.
#[kyro_core::output]
#[derive(Debug)]
pub struct Review {
    /// Its id.
    pub id: u64,
    /// Its author.
    pub author: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    pub state: String,
    /// Its text.
    pub body: String,
    /// When it was submitted.
    pub submitted_at: Option<String>,
}

/// A check run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckRun {
    /// Its name.
    pub name: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    /// `success`, `failure`, ... once completed.
    pub conclusion: Option<String>,
    /// Its web address.
    pub html_url: String,
}

/// A commit's combined status, as GitHub sends it.
#[derive(Deserialize)]
struct StatusWire {
    state: String,
    statuses: Vec<StatusCheckWire>,
}

#[derive(Deserialize)]
struct StatusCheckWire {
    context: String,
    state: String,
    description: Option<String>,
}

/// A file a pull request changes.
#[derive(Deserialize)]
struct FileWire {
    filename: String,
    status: String,
    additions: u64,
    deletions: u64,
    patch: Option<String>,
}

/// A comment on a line.
#[derive(Deserialize)]
struct ReviewCommentWire {
    id: u64,
    user: Option<User>,
    path: String,
    line: Option<u64>,
    body: String,
    in_reply_to_id: Option<u64>,
}

/// A commit's check runs.
#[derive(Deserialize)]
struct CheckRunsWire {
    check_runs: Vec<CheckRunWire>,
}

#[derive(Deserialize)]
struct CheckRunWire {
    name: String,
    status: String,
    conclusion: Option<String>,
    html_url: Option<String>,
}

/// A pull request, for its head alone.
#[derive(Deserialize)]
struct HeadOnly {
    head: HeadWire,
}

impl Execute for GitHubPullRequestRead {
    type Output = PullRequestRead;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<PullRequestRead, ToolError> {
        let github = GitHub::for_call(cx)?;
        let repo = format!("/repos/{}/{}", self.owner, self.repo);
        let pull = format!("{repo}/pulls/{}", self.pull_number);
        let page = paging(self.page, self.per_page);
        let get = |path: String| github.send(cx, "GET", &format!("{path}?{page}"), None);
        let head_sha =
            || -> Result<String, ToolError> { Ok(github.send(cx, "GET", &pull, None)?.parse::<HeadOnly>()?.head.sha) };
        let mut read = PullRequestRead::default();
        match self.method {
            PullReadMethod::Get => {
                read.pull_request = Some(github.send(cx, "GET", &pull, None)?.parse::<PullWire>()?.into())
            }
            PullReadMethod::GetDiff => {
                read.diff = Some(
                    github
                        .send_accepting(cx, "GET", &pull, None, "application/vnd.github.diff")?
                        .raw,
                );
            }
            PullReadMethod::GetStatus => {
                let v: StatusWire = github
                    .send(cx, "GET", &format!("{repo}/commits/{}/status", head_sha()?), None)?
                    .parse()?;
                let statuses = v
                    .statuses
                    .into_iter()
                    .map(|s| StatusCheck {
                        context: s.context,
                        state: s.state,
                        description: s.description.unwrap_or_default(),
                    })
                    .collect();
                read.status = Some(CombinedStatus {
                    state: v.state,
                    statuses,
                });
            }
            PullReadMethod::GetFiles => {
                let answer = get(format!("{pull}/files"))?;
                read.files = Some(
                    list::<FileWire>(&answer)?
                        .into_iter()
                        .map(|f| ChangedFile {
                            path: f.filename,
                            status: f.status,
                            additions: f.additions,
                            deletions: f.deletions,
                            patch: f.patch,
                        })
                        .collect(),
                );
                read.next_page = answer.next_page;
            }
            PullReadMethod::GetCommits => {
                let answer = get(format!("{pull}/commits"))?;
                read.commits = Some(answer.items()?.iter().map(commit_summary).collect());
                read.next_page = answer.next_page;
            }
            PullReadMethod::GetReviewComments => {
                let answer = get(format!("{pull}/comments"))?;
                read.review_comments = Some(
                    list::<ReviewCommentWire>(&answer)?
                        .into_iter()
                        .map(|c| ReviewComment {
                            id: c.id,
                            author: author(c.user),
                            path: c.path,
                            line: c.line,
                            body: c.body,
                            in_reply_to: c.in_reply_to_id,
                        })
                        .collect(),
                );
                read.next_page = answer.next_page;
            }
            PullReadMethod::GetReviews => {
                let answer = get(format!("{pull}/reviews"))?;
                read.reviews = Some(list::<ReviewWire>(&answer)?.into_iter().map(Review::from).collect());
                read.next_page = answer.next_page;
            }
            PullReadMethod::GetComments => {
                let answer = get(format!("{repo}/issues/{}/comments", self.pull_number))?;
                read.comments = Some(
                    list::<IssueCommentWire>(&answer)?
                        .into_iter()
                        .map(IssueComment::from)
                        .collect(),
                );
                read.next_page = answer.next_page;
            }
            PullReadMethod::GetCheckRuns => {
                let answer = get(format!("{repo}/commits/{}/check-runs", head_sha()?))?;
                read.check_runs = Some(
                    answer
                        .parse::<CheckRunsWire>()?
                        .check_runs
                        .into_iter()
                        .map(|r| CheckRun {
                            name: r.name,
                            status: r.status,
                            conclusion: r.conclusion,
                            html_url: r.html_url.unwrap_or_default(),
                        })
                        .collect(),
                );
                read.next_page = answer.next_page;
            }
        }
        Ok(read)
    }
}

/// List a repository's pull requests.
#[tool(
    name = "github_list_pull_requests",
    title = "List GitHub pull requests",
    category = "github.pull_requests",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["list_pull_requests"]
)]
pub struct GitHubListPullRequests {
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
    /// Default `open`.
    pub state: Option<super::github_list_issues::IssueState>,
    /// Only from this branch (`user:branch`).
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub head: Option<String>,
    /// Only into this branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub base: Option<String>,
    /// Default `created`.
    pub sort: Option<PullSort>,
    /// Order.
    pub direction: Option<Order>,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// `created`, `updated`, `popularity` (comments) or `long-running` (open longest).
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullSort {
    /// Creation.
    #[serde(rename = "created")]
    Created,
    /// Last update.
    #[serde(rename = "updated")]
    Updated,
    /// Comment count.
    #[serde(rename = "popularity")]
    Popularity,
    /// Age, open the longest.
    #[serde(rename = "long-running")]
    LongRunning,
}

/// A page of pull requests.
#[kyro_core::output]
#[derive(Debug)]
pub struct PullRequests {
    /// The pull requests.
    pub pull_requests: Vec<PullRequest>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

impl Execute for GitHubListPullRequests {
    type Output = PullRequests;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<PullRequests, ToolError> {
        use super::github_list_issues::IssueState;
        let state = match self.state.unwrap_or_default() {
            IssueState::Open => "open",
            IssueState::Closed => "closed",
            IssueState::All => "all",
        };
        let mut path = format!(
            "/repos/{}/{}/pulls?state={state}&{}",
            self.owner,
            self.repo,
            paging(self.page, self.per_page)
        );
        for (key, value) in [("head", &self.head), ("base", &self.base)] {
            if let Some(value) = value {
                path.push_str(&format!("&{key}={}", encode(value)));
            }
        }
        if let Some(sort) = self.sort {
            let sort = match sort {
                PullSort::Created => "created",
                PullSort::Updated => "updated",
                PullSort::Popularity => "popularity",
                PullSort::LongRunning => "long-running",
            };
            path.push_str(&format!("&sort={sort}"));
        }
        if let Some(direction) = self.direction {
            path.push_str(if direction == Order::Asc {
                "&direction=asc"
            } else {
                "&direction=desc"
            });
        }
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        Ok(PullRequests {
            pull_requests: list::<PullWire>(&answer)?.into_iter().map(PullRequest::from).collect(),
            next_page: answer.next_page,
        })
    }
}

/// Search GitHub pull requests with GitHub's query syntax (`is:open review:required`; `is:pr` is
/// added); `owner` and `repo` narrow it to one repository.
#[tool(
    name = "github_search_pull_requests",
    title = "Search GitHub pull requests",
    category = "github.pull_requests",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["search_pull_requests"]
)]
pub struct GitHubSearchPullRequests {
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

impl Execute for GitHubSearchPullRequests {
    type Output = FoundIssues;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<FoundIssues, ToolError> {
        let search = super::search::GitHubSearchIssues {
            query: format!("is:pr {}", self.query),
            owner: self.owner,
            repo: self.repo,
            sort: self.sort,
            order: self.order,
            page: self.page,
            per_page: self.per_page,
        };
        search.run(cx).await
    }
}

impl From<PullWire> for PullRequest {
    fn from(v: PullWire) -> PullRequest {
        PullRequest {
            number: v.number,
            title: v.title,
            state: v.state,
            body: v.body.unwrap_or_default(),
            author: author(v.user),
            head: v.head.branch,
            head_sha: v.head.sha,
            base: v.base.branch,
            merged: v.merged.unwrap_or(false),
            draft: v.draft.unwrap_or(false),
            mergeable_state: v.mergeable_state,
            html_url: v.html_url,
        }
    }
}

impl From<ReviewWire> for Review {
    fn from(r: ReviewWire) -> Review {
        Review {
            id: r.id,
            author: author(r.user),
            state: r.state,
            body: r.body.unwrap_or_default(),
            submitted_at: r.submitted_at,
        }
    }
}
