//! GitHub over the REST API, at a configurable base URL (`KYRO_GITHUB_API_URL`, default
//! `https://api.github.com`) with a token from the environment (`GITHUB_TOKEN` or
//! `GH_TOKEN`). The tools follow GitHub's MCP server's names (`github_<name>`, the bare
//! name an alias) and toolsets (`github.context`, `github.issues`, ...).

mod actions;
mod client;
mod context;
mod github_list_issues;
mod issue_read;
mod issue_write;
mod labels;
mod pull_read;
mod pull_write;
mod releases;
mod repos_read;
mod repos_write;
mod reviews;
mod search;
mod wire;

pub use actions::{
    ActionsGot, ActionsListed, Artifact, GetMethod, GitHubActionsGet, GitHubActionsList, GitHubGetJobLogs, Job, JobLog,
    JobLogs, ListMethod, Run, RunsFilter, Workflow,
};
pub use context::{GitHubGetMe, GitHubGetTeamMembers, GitHubGetTeams, Me, Members, Team, Teams};
pub use github_list_issues::{GitHubListIssues, IssuePage, IssueState};
pub use issue_read::{GitHubIssueRead, Issue, IssueComment, IssueRead, IssueReadMethod, Label};
pub use issue_write::{
    Comment, GitHubAddIssueComment, GitHubIssueWrite, GitHubSubIssueWrite, IssueStateChange, IssueWriteMethod,
    StateReason, SubIssueMethod,
};
pub use labels::{GitHubGetLabel, GitHubListIssueTypes, IssueType, IssueTypes};
pub use pull_read::{
    CheckRun, CombinedStatus, GitHubListPullRequests, GitHubPullRequestRead, GitHubSearchPullRequests, PullReadMethod,
    PullRequest, PullRequestRead, PullRequests, PullSort, Review, ReviewComment, StatusCheck,
};
pub use pull_write::{
    Accepted, GitHubCreatePullRequest, GitHubMergePullRequest, GitHubUpdatePullRequest, GitHubUpdatePullRequestBranch,
    MergeMethod, Merged,
};
pub use releases::{
    Asset, GitHubGetLatestRelease, GitHubGetReleaseByTag, GitHubGetTag, GitHubListReleases, Release, Releases, TagInfo,
};
pub use repos_read::{
    ChangedFile, Collaborator, Collaborators, CommitDetail, CommitSummary, Commits, Contents, Detail, Entry,
    GitHubGetCommit, GitHubGetFileContents, GitHubListBranches, GitHubListCommits, GitHubListRepositoryCollaborators,
    GitHubListTags, NamedCommit, Refs,
};
pub use repos_write::{
    BranchMade, FileCommit, GitHubCreateBranch, GitHubCreateOrUpdateFile, GitHubCreateRepository, GitHubDeleteFile,
    GitHubForkRepository, GitHubPushFiles, Pushed, PushedFile, Repository,
};
pub use reviews::{
    GitHubAddCommentToPendingReview, GitHubAddReplyToPullRequestComment, GitHubPullRequestReviewWrite, ReviewEvent,
    ReviewMethod, Side, SubjectType, ThreadAdded,
};
pub use search::{
    CodeMatch, CommitSort, FoundCode, FoundCommit, FoundCommits, FoundIssues, FoundRepositories, FoundRepository,
    FoundUser, FoundUsers, GitHubSearchCode, GitHubSearchCommits, GitHubSearchIssues, GitHubSearchRepositories,
    GitHubSearchUsers, IssueSort, Order, RepositorySort, UserSort,
};
