//! The built-in kyro tools, one folder per category and one file per tool.
//!
//! Every tool is an argument struct carrying `#[tool]` with its `Execute` impl beside it.
//! [`BUILTINS`] is the catalog every surface serves; it is not for transports or policy,
//! which live in `kyro` and `kyro-core`.
#![deny(missing_docs)]

#[cfg(feature = "browser")]
pub mod browser;
pub mod calculation;
pub mod discovery;
mod failure;
pub mod files;
pub mod git;
#[cfg(feature = "web")]
pub mod github;
#[cfg(feature = "state")]
pub mod graph;
pub mod integration;
#[cfg(feature = "state")]
pub mod memory;
pub mod orchestration;
pub mod settings;
pub mod shell;
#[cfg(feature = "state")]
pub mod state;

pub use failure::{Failure, RemoteReason};

#[cfg(test)]
mod testing;

kyro_core::catalog! {
    /// Every built-in tool compiled in (the cargo features `web`, `browser` and `state`
    /// add their families). Duplicate names or aliases fail the build; a `#[tool]` struct
    /// missing here fails the `catalog_lists_every_tool` test.
    pub const BUILTINS = [
        files::ReadFile,
        files::ReadManyFiles,
        files::ReadMediaFile,
        files::WriteFile,
        files::EditFile,
        files::MultiEdit,
        files::ApplyPatch,
        files::ListDirectory,
        files::ListAllowedDirectories,
        files::DirectoryTree,
        files::Glob,
        files::Grep,
        files::FileInfo,
        files::MovePath,
        files::CopyPath,
        files::DeletePath,
        files::MakeDirectory,
        git::GitStatus,
        git::GitDiff,
        git::GitLog,
        git::GitShow,
        git::GitAdd,
        git::GitCommit,
        git::GitBranch,
        git::GitCreateBranch,
        git::GitDeleteBranch,
        git::GitCheckout,
        git::GitBlame,
        git::GitStash,
        git::GitReset,
        git::GitTag,
        #[cfg(feature = "web")] github::GitHubGetMe,
        #[cfg(feature = "web")] github::GitHubGetTeams,
        #[cfg(feature = "web")] github::GitHubGetTeamMembers,
        #[cfg(feature = "web")] github::GitHubIssueRead,
        #[cfg(feature = "web")] github::GitHubIssueWrite,
        #[cfg(feature = "web")] github::GitHubAddIssueComment,
        #[cfg(feature = "web")] github::GitHubListIssues,
        #[cfg(feature = "web")] github::GitHubSearchIssues,
        #[cfg(feature = "web")] github::GitHubGetLabel,
        #[cfg(feature = "web")] github::GitHubSubIssueWrite,
        #[cfg(feature = "web")] github::GitHubListIssueTypes,
        #[cfg(feature = "web")] github::GitHubPullRequestRead,
        #[cfg(feature = "web")] github::GitHubCreatePullRequest,
        #[cfg(feature = "web")] github::GitHubUpdatePullRequest,
        #[cfg(feature = "web")] github::GitHubUpdatePullRequestBranch,
        #[cfg(feature = "web")] github::GitHubMergePullRequest,
        #[cfg(feature = "web")] github::GitHubListPullRequests,
        #[cfg(feature = "web")] github::GitHubSearchPullRequests,
        #[cfg(feature = "web")] github::GitHubPullRequestReviewWrite,
        #[cfg(feature = "web")] github::GitHubAddCommentToPendingReview,
        #[cfg(feature = "web")] github::GitHubAddReplyToPullRequestComment,
        #[cfg(feature = "web")] github::GitHubActionsList,
        #[cfg(feature = "web")] github::GitHubActionsGet,
        #[cfg(feature = "web")] github::GitHubGetJobLogs,
        #[cfg(feature = "web")] github::GitHubSearchUsers,
        #[cfg(feature = "web")] github::GitHubGetFileContents,
        #[cfg(feature = "web")] github::GitHubCreateOrUpdateFile,
        #[cfg(feature = "web")] github::GitHubDeleteFile,
        #[cfg(feature = "web")] github::GitHubPushFiles,
        #[cfg(feature = "web")] github::GitHubCreateBranch,
        #[cfg(feature = "web")] github::GitHubListBranches,
        #[cfg(feature = "web")] github::GitHubListCommits,
        #[cfg(feature = "web")] github::GitHubGetCommit,
        #[cfg(feature = "web")] github::GitHubSearchCode,
        #[cfg(feature = "web")] github::GitHubSearchCommits,
        #[cfg(feature = "web")] github::GitHubSearchRepositories,
        #[cfg(feature = "web")] github::GitHubCreateRepository,
        #[cfg(feature = "web")] github::GitHubForkRepository,
        #[cfg(feature = "web")] github::GitHubListTags,
        #[cfg(feature = "web")] github::GitHubGetTag,
        #[cfg(feature = "web")] github::GitHubListReleases,
        #[cfg(feature = "web")] github::GitHubGetLatestRelease,
        #[cfg(feature = "web")] github::GitHubGetReleaseByTag,
        #[cfg(feature = "web")] github::GitHubListRepositoryCollaborators,
        #[cfg(feature = "web")] integration::WebFetch,
        #[cfg(feature = "browser")] browser::BrowserNavigate,
        #[cfg(feature = "browser")] browser::BrowserSnapshot,
        #[cfg(feature = "browser")] browser::BrowserClick,
        #[cfg(feature = "browser")] browser::BrowserType,
        #[cfg(feature = "browser")] browser::BrowserScreenshot,
        #[cfg(feature = "browser")] browser::BrowserSelectOption,
        #[cfg(feature = "browser")] browser::BrowserPressKey,
        #[cfg(feature = "browser")] browser::BrowserHover,
        #[cfg(feature = "browser")] browser::BrowserNavigateBack,
        #[cfg(feature = "browser")] browser::BrowserWaitFor,
        #[cfg(feature = "browser")] browser::BrowserHandleDialog,
        #[cfg(feature = "browser")] browser::BrowserEvaluate,
        #[cfg(feature = "browser")] browser::BrowserResize,
        #[cfg(feature = "browser")] browser::BrowserClose,
        #[cfg(feature = "browser")] browser::BrowserFillForm,
        #[cfg(feature = "browser")] browser::BrowserConsoleMessages,
        #[cfg(feature = "browser")] browser::BrowserNetworkRequests,
        #[cfg(feature = "browser")] browser::BrowserNetworkRequest,
        #[cfg(feature = "browser")] browser::BrowserFileUpload,
        #[cfg(feature = "browser")] browser::BrowserPdfSave,
        #[cfg(feature = "browser")] browser::BrowserDrag,
        #[cfg(feature = "browser")] browser::BrowserTabs,
        #[cfg(feature = "browser")] browser::BrowserMouseClickXy,
        #[cfg(feature = "browser")] browser::BrowserMouseMoveXy,
        #[cfg(feature = "browser")] browser::BrowserMouseDragXy,
        #[cfg(feature = "browser")] browser::BrowserMouseWheel,
        #[cfg(feature = "browser")] browser::BrowserCookieList,
        #[cfg(feature = "browser")] browser::BrowserCookieSet,
        #[cfg(feature = "browser")] browser::BrowserCookieClear,
        #[cfg(feature = "browser")] browser::BrowserLocalstorageGet,
        #[cfg(feature = "browser")] browser::BrowserLocalstorageSet,
        #[cfg(feature = "browser")] browser::BrowserCookieGet,
        #[cfg(feature = "browser")] browser::BrowserCookieDelete,
        #[cfg(feature = "browser")] browser::BrowserLocalstorageList,
        #[cfg(feature = "browser")] browser::BrowserLocalstorageDelete,
        #[cfg(feature = "browser")] browser::BrowserLocalstorageClear,
        #[cfg(feature = "browser")] browser::BrowserSessionstorageList,
        #[cfg(feature = "browser")] browser::BrowserSessionstorageGet,
        #[cfg(feature = "browser")] browser::BrowserSessionstorageSet,
        #[cfg(feature = "browser")] browser::BrowserSessionstorageDelete,
        #[cfg(feature = "browser")] browser::BrowserSessionstorageClear,
        #[cfg(feature = "browser")] browser::BrowserStorageState,
        #[cfg(feature = "browser")] browser::BrowserSetStorageState,
        #[cfg(feature = "browser")] browser::BrowserFind,
        #[cfg(feature = "browser")] browser::BrowserVerifyTextVisible,
        #[cfg(feature = "browser")] browser::BrowserVerifyElementVisible,
        #[cfg(feature = "browser")] browser::BrowserRoute,
        #[cfg(feature = "browser")] browser::BrowserUnroute,
        #[cfg(feature = "browser")] browser::BrowserDrop,
        #[cfg(feature = "browser")] browser::BrowserEmulateMedia,
        #[cfg(feature = "browser")] browser::BrowserMouseDown,
        #[cfg(feature = "browser")] browser::BrowserMouseUp,
        #[cfg(feature = "browser")] browser::BrowserRouteList,
        #[cfg(feature = "browser")] browser::BrowserNetworkStateSet,
        #[cfg(feature = "browser")] browser::BrowserVerifyValue,
        #[cfg(feature = "browser")] browser::BrowserVerifyListVisible,
        #[cfg(feature = "browser")] browser::BrowserGenerateLocator,
        #[cfg(feature = "browser")] browser::BrowserGetConfig,
        #[cfg(feature = "browser")] browser::BrowserRunCodeUnsafe,
        #[cfg(feature = "browser")] browser::BrowserHighlight,
        #[cfg(feature = "browser")] browser::BrowserHideHighlight,
        #[cfg(feature = "browser")] browser::BrowserStartTracing,
        #[cfg(feature = "browser")] browser::BrowserStopTracing,
        #[cfg(feature = "browser")] browser::BrowserStartVideo,
        #[cfg(feature = "browser")] browser::BrowserStopVideo,
        #[cfg(feature = "browser")] browser::BrowserVideoChapter,
        #[cfg(feature = "browser")] browser::BrowserVideoShowActions,
        #[cfg(feature = "browser")] browser::BrowserVideoHideActions,
        #[cfg(feature = "web")] integration::HttpRequest,
        integration::McpCall,
        shell::RunCommand,
        shell::StartProcess,
        shell::ReadProcessOutput,
        shell::StopProcess,
        shell::WriteProcessInput,
        calculation::Calculate,
        #[cfg(feature = "state")] memory::MemoryStore,
        #[cfg(feature = "state")] memory::MemorySearch,
        #[cfg(feature = "state")] memory::MemoryGet,
        #[cfg(feature = "state")] memory::MemoryForget,
        #[cfg(feature = "state")] graph::GraphAddEntities,
        #[cfg(feature = "state")] graph::GraphAddRelations,
        #[cfg(feature = "state")] graph::GraphAddObservations,
        #[cfg(feature = "state")] graph::GraphSearch,
        #[cfg(feature = "state")] graph::GraphOpen,
        #[cfg(feature = "state")] graph::GraphDelete,
        #[cfg(feature = "state")] orchestration::TaskCreate,
        #[cfg(feature = "state")] orchestration::TaskUpdate,
        #[cfg(feature = "state")] orchestration::TaskList,
        orchestration::RunBatch,
        orchestration::SpawnSubagent,
        discovery::ToolSearch,
        discovery::ToolDescribe,
    ];
}

/// The built-in families as catalogs of their own, for a server to add next to its tools
/// (`kyro::Server::new(TOOLS).catalog(kyro_tools::catalogs::FILES)`).
pub mod catalogs {
    use super::*;

    kyro_core::catalog! {
        /// Files in the workspace: read, write, edit, patch, list, search, move, delete.
        pub const FILES = [
            files::ReadFile, files::ReadManyFiles, files::ReadMediaFile, files::WriteFile, files::EditFile, files::MultiEdit,
            files::ApplyPatch, files::ListDirectory, files::DirectoryTree, files::Glob, files::Grep,
            files::FileInfo, files::MovePath, files::CopyPath, files::DeletePath, files::MakeDirectory,
            files::ListAllowedDirectories,
        ];
    }
    kyro_core::catalog! {
        /// Programs: run to completion, or in the background, each in a PID namespace.
        pub const SHELL = [shell::RunCommand, shell::StartProcess, shell::ReadProcessOutput, shell::StopProcess, shell::WriteProcessInput];
    }
    kyro_core::catalog! {
        /// Git by argv, the repository's own programs neutralized.
        pub const GIT = [
            git::GitStatus, git::GitDiff, git::GitLog, git::GitShow, git::GitAdd, git::GitCommit,
            git::GitBranch, git::GitCreateBranch, git::GitDeleteBranch, git::GitCheckout, git::GitBlame,
            git::GitStash, git::GitReset, git::GitTag,
        ];
    }
    kyro_core::catalog! {
        /// Arithmetic, and finding tools in the served catalog.
        pub const UTILITIES = [calculation::Calculate, discovery::ToolSearch, discovery::ToolDescribe];
    }
    kyro_core::catalog! {
        /// Batches and sub-agents through the same boundary, under narrower scopes.
        pub const ORCHESTRATION = [orchestration::RunBatch, orchestration::SpawnSubagent];
    }
    #[cfg(feature = "web")]
    kyro_core::catalog! {
        /// HTTP out under the network policy.
        pub const WEB = [integration::WebFetch, integration::HttpRequest];
    }
    #[cfg(feature = "web")]
    kyro_core::catalog! {
        /// The GitHub REST API, as GitHub's MCP server's tools and toolsets.
        pub const GITHUB = [
            github::GitHubGetMe, github::GitHubGetTeams, github::GitHubGetTeamMembers, github::GitHubIssueRead,
            github::GitHubIssueWrite, github::GitHubAddIssueComment, github::GitHubListIssues,
            github::GitHubSearchIssues, github::GitHubGetLabel, github::GitHubSubIssueWrite,
            github::GitHubListIssueTypes, github::GitHubSearchUsers,
            github::GitHubPullRequestRead,
            github::GitHubCreatePullRequest,
            github::GitHubUpdatePullRequest,
            github::GitHubUpdatePullRequestBranch,
            github::GitHubMergePullRequest,
            github::GitHubListPullRequests,
            github::GitHubSearchPullRequests,
            github::GitHubPullRequestReviewWrite,
            github::GitHubAddCommentToPendingReview,
            github::GitHubAddReplyToPullRequestComment,
            github::GitHubActionsList, github::GitHubActionsGet, github::GitHubGetJobLogs,
            github::GitHubGetFileContents,
            github::GitHubCreateOrUpdateFile,
            github::GitHubDeleteFile,
            github::GitHubPushFiles,
            github::GitHubCreateBranch,
            github::GitHubListBranches,
            github::GitHubListCommits,
            github::GitHubGetCommit,
            github::GitHubSearchCode,
            github::GitHubSearchCommits,
            github::GitHubSearchRepositories,
            github::GitHubCreateRepository,
            github::GitHubForkRepository,
            github::GitHubListTags,
            github::GitHubGetTag,
            github::GitHubListReleases,
            github::GitHubGetLatestRelease,
            github::GitHubGetReleaseByTag,
            github::GitHubListRepositoryCollaborators,
        ];
    }
    #[cfg(feature = "browser")]
    kyro_core::catalog! {
        /// A headless Chromium, every request through the policy-checked proxy.
        pub const BROWSER = [
            browser::BrowserNavigate, browser::BrowserSnapshot, browser::BrowserClick, browser::BrowserType,
            browser::BrowserScreenshot, browser::BrowserSelectOption, browser::BrowserPressKey,
            browser::BrowserHover, browser::BrowserNavigateBack, browser::BrowserWaitFor,
            browser::BrowserHandleDialog, browser::BrowserEvaluate, browser::BrowserResize, browser::BrowserClose,
            browser::BrowserFillForm, browser::BrowserConsoleMessages, browser::BrowserNetworkRequests,
            browser::BrowserNetworkRequest,
            browser::BrowserFileUpload, browser::BrowserPdfSave, browser::BrowserDrag, browser::BrowserTabs,
            browser::BrowserMouseClickXy, browser::BrowserMouseMoveXy, browser::BrowserMouseDragXy,
            browser::BrowserMouseWheel, browser::BrowserCookieList, browser::BrowserCookieSet,
            browser::BrowserCookieClear, browser::BrowserLocalstorageGet, browser::BrowserLocalstorageSet,
            browser::BrowserCookieGet, browser::BrowserCookieDelete, browser::BrowserLocalstorageList,
            browser::BrowserLocalstorageDelete, browser::BrowserLocalstorageClear, browser::BrowserSessionstorageList,
            browser::BrowserSessionstorageGet, browser::BrowserSessionstorageSet, browser::BrowserSessionstorageDelete,
            browser::BrowserSessionstorageClear, browser::BrowserStorageState, browser::BrowserSetStorageState,
            browser::BrowserFind, browser::BrowserVerifyTextVisible, browser::BrowserVerifyElementVisible,
            browser::BrowserRoute, browser::BrowserUnroute,
            browser::BrowserDrop, browser::BrowserEmulateMedia, browser::BrowserMouseDown, browser::BrowserMouseUp,
            browser::BrowserRouteList, browser::BrowserNetworkStateSet, browser::BrowserVerifyValue,
            browser::BrowserVerifyListVisible, browser::BrowserGenerateLocator, browser::BrowserGetConfig,
            browser::BrowserRunCodeUnsafe, browser::BrowserHighlight, browser::BrowserHideHighlight,
            browser::BrowserStartTracing, browser::BrowserStopTracing,
            browser::BrowserStartVideo, browser::BrowserStopVideo, browser::BrowserVideoChapter,
            browser::BrowserVideoShowActions, browser::BrowserVideoHideActions,
        ];
    }
    #[cfg(feature = "state")]
    kyro_core::catalog! {
        /// Memory, knowledge graph and tasks in `.kyro/state.db` (SQLite).
        pub const STATE = [
            memory::MemoryStore, memory::MemorySearch, memory::MemoryGet, memory::MemoryForget,
            graph::GraphAddEntities, graph::GraphAddRelations, graph::GraphAddObservations, graph::GraphSearch,
            graph::GraphOpen, graph::GraphDelete, orchestration::TaskCreate, orchestration::TaskUpdate,
            orchestration::TaskList,
        ];
    }
}

/// A built-in tool that cannot work on this machine, and why; it is not registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// The tool's name.
    pub tool: &'static str,
    /// Why it cannot work here.
    pub reason: String,
}

/// The built-ins that can work on this machine, and those left out with the reason:
/// the browser tools need Chromium ([`browser::unavailable`]); `mcp_call` needs at least
/// one upstream server.
pub fn available(upstreams: bool) -> (Vec<kyro_core::ToolEntry>, Vec<Unavailable>) {
    #[cfg(feature = "browser")]
    let browser = browser::unavailable();
    #[cfg(not(feature = "browser"))]
    let browser: Option<String> = None;
    let mut usable = Vec::with_capacity(BUILTINS.len());
    let mut left_out = Vec::new();
    for entry in BUILTINS {
        let reason = match (&browser, entry.spec.category, entry.spec.name) {
            (Some(reason), category, _) if category == "browser" || category.starts_with("browser.") => {
                Some(reason.clone())
            }
            (_, _, "mcp_call") if !upstreams => {
                Some("no upstream MCP server is configured; start kyro with --upstream NAME='CMD ARGS'".to_owned())
            }
            _ => None,
        };
        match reason {
            Some(reason) => left_out.push(Unavailable {
                tool: entry.spec.name,
                reason,
            }),
            None => usable.push(*entry),
        }
    }
    (usable, left_out)
}
