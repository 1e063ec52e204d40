//! The built-in kyro tools, one folder per category and one file per tool.
//!
//! Every tool is an argument struct carrying `#[tool]` with its `Execute` impl beside it.
//! [`BUILTINS`] is the catalog every surface serves; it is not for transports or policy,
//! which live in `kyro` and `kyro-core`.
#![deny(missing_docs)]

pub mod browser;
pub mod calculation;
pub mod discovery;
pub mod files;
pub mod git;
pub mod github;
pub mod graph;
pub mod integration;
pub mod memory;
pub mod orchestration;
pub mod shell;
mod state;

#[cfg(test)]
mod testing;

kyro_core::catalog! {
    /// Every built-in tool. Duplicate names or aliases fail the build; a `#[tool]` struct
    /// missing here fails the `catalog_lists_every_tool` test.
    pub const BUILTINS = [
        files::ReadFile,
        files::ReadManyFiles,
        files::WriteFile,
        files::EditFile,
        files::MultiEdit,
        files::ApplyPatch,
        files::ListDirectory,
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
        git::GitCheckout,
        git::GitBlame,
        github::GitHubGetIssue,
        github::GitHubListIssues,
        github::GitHubCreateIssue,
        github::GitHubGetPullRequest,
        github::GitHubComment,
        integration::WebFetch,
        browser::BrowserNavigate,
        browser::BrowserSnapshot,
        browser::BrowserClick,
        browser::BrowserType,
        browser::BrowserScreenshot,
        integration::HttpRequest,
        integration::McpCall,
        shell::RunCommand,
        shell::StartProcess,
        shell::ReadProcessOutput,
        shell::StopProcess,
        calculation::Calculate,
        memory::MemoryStore,
        memory::MemorySearch,
        memory::MemoryGet,
        memory::MemoryForget,
        graph::GraphAddEntities,
        graph::GraphAddRelations,
        graph::GraphAddObservations,
        graph::GraphSearch,
        graph::GraphOpen,
        graph::GraphDelete,
        orchestration::TaskCreate,
        orchestration::TaskUpdate,
        orchestration::TaskList,
        orchestration::RunBatch,
        orchestration::SpawnSubagent,
        discovery::ToolSearch,
        discovery::ToolDescribe,
    ];
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
    let browser = browser::unavailable();
    let mut usable = Vec::with_capacity(BUILTINS.len());
    let mut left_out = Vec::new();
    for entry in BUILTINS {
        let reason = match (&browser, entry.spec.category, entry.spec.name) {
            (Some(reason), "browser", _) => Some(reason.clone()),
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
