//! The built-in tools' own failures. kyro-core names no tool's failures: each family
//! reports a [`Failure`], converted at its edge into kyro's open error form
//! ([`ToolError::typed`]): the variant's snake_case name is the kind, its message the
//! text, its fields the structured data.

use kyro_core::ToolError;
use serde::{Deserialize, Serialize};

/// Why a built-in tool could not do its job.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Failure {
    /// The file is not UTF-8 text.
    #[error("`{path}` is a binary or non-UTF-8 file; only UTF-8 text can be read")]
    BinaryFile {
        /// The workspace path as given.
        path: String,
    },
    /// The file changed since the caller read it.
    #[error("`{path}` changed since it was read: expected sha256 {expected}, found {actual}")]
    StaleFile {
        /// The workspace path as given.
        path: String,
        /// The hash the caller expected.
        expected: String,
        /// The hash of the file now (empty when it no longer exists).
        actual: String,
    },
    /// A tool named in the arguments is not in the catalog.
    #[error("no tool is named `{name}`")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// A line window that starts past the end of the file.
    #[error("offset {offset} is past the end of `{path}`, which has {total_lines} lines")]
    OffsetOutOfRange {
        /// The workspace path as given.
        path: String,
        /// The 1-based line asked for.
        offset: u64,
        /// Lines in the file.
        total_lines: u64,
    },
    /// The text to replace does not occur in the file.
    #[error("the text to replace was not found in `{path}`{}", edit_suffix(*edit))]
    NoMatch {
        /// The workspace path as given.
        path: String,
        /// Which edit of a multi-edit, 0-based.
        edit: Option<u64>,
    },
    /// The text to replace occurs more than once and `replace_all` was not set.
    #[error("the text to replace occurs {count} times in `{path}`{}; add context to make it unique or set replace_all", edit_suffix(*edit))]
    AmbiguousMatch {
        /// The workspace path as given.
        path: String,
        /// Which edit of a multi-edit, 0-based.
        edit: Option<u64>,
        /// How many times it occurs.
        count: u64,
    },
    /// A patch that does not apply; nothing was changed.
    #[error("the patch does not apply to `{path}`: {message}; no file was changed")]
    PatchFailed {
        /// The file the failing part targets.
        path: String,
        /// Why.
        message: String,
    },
    /// A directory that is not empty, deleted without `recursive`.
    #[error("`{path}` is a directory that is not empty; set recursive to delete it and its contents")]
    DirectoryNotEmpty {
        /// The workspace path as given.
        path: String,
    },
    /// A search pattern that does not compile.
    #[error("`{pattern}` is not a valid pattern: {message}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// The compiler's message.
        message: String,
    },
    /// What a testing tool looked for is not visible on the page.
    #[error("not visible on the page: {what}")]
    NotVisible {
        /// What was looked for.
        what: String,
    },
    /// What a testing tool checked has another value than the one expected.
    #[error("`{element}` has the value {actual}, not the {expected} expected")]
    ValueMismatch {
        /// The ref or selector as given.
        element: String,
        /// The value expected, quoted.
        expected: String,
        /// The value found, quoted (a password's is not shown).
        actual: String,
    },
    /// No record with that key.
    #[error("no {record} named `{key}`")]
    NoSuchRecord {
        /// What was looked up (memory, entity, task).
        record: String,
        /// Its key.
        key: String,
    },
    /// The state database failed.
    #[error("the state database failed: {message}")]
    State {
        /// SQLite's message.
        message: String,
    },
    /// `git` refused the command.
    #[error("git {command} failed: {message}")]
    Git {
        /// The git subcommand.
        command: String,
        /// What git printed on stderr.
        message: String,
    },
    /// A remote service refused the request.
    #[error("{service} answered {status} ({reason}): {message}")]
    Remote {
        /// The service (github, ...).
        service: String,
        /// The HTTP status.
        status: u16,
        /// What the status means.
        reason: RemoteReason,
        /// The service's message.
        message: String,
    },
    /// A remote service's rate limit is exhausted (its primary limit, or a secondary limit
    /// that asks the client to wait).
    #[error(
        "{service}'s rate limit is exhausted ({message}); call again in {retry_after_s} s (at {reset_at}, Unix seconds)"
    )]
    RateLimited {
        /// The service.
        service: String,
        /// The service's message.
        message: String,
        /// When the limit resets, Unix seconds (0 when unknown).
        reset_at: u64,
        /// How long to wait, seconds (`retry-after`, or until `reset_at`; 60 when the
        /// service said neither, as GitHub advises for its secondary limits).
        retry_after_s: u64,
    },
    /// A remote service answered success with a body that is not the answer the tool
    /// expected (an HTML page from a proxy, a cut or empty body, another shape): nothing
    /// is made up from it.
    #[error("{service} answered {status} with something other than the answer expected: {message}")]
    UnexpectedAnswer {
        /// The service.
        service: String,
        /// The HTTP status.
        status: u16,
        /// What was expected and what came back.
        message: String,
    },
    /// A URL the network policy refuses (scheme, host, or a non-public address).
    #[error("`{url}` is refused: {reason}")]
    UrlRefused {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A remote service could not be reached.
    #[error("cannot reach {service}: {message}")]
    Unreachable {
        /// The service.
        service: String,
        /// Why.
        message: String,
    },
    /// The browser could not do what was asked (start, navigate, evaluate, capture).
    #[error("the browser could not {operation}: {message}")]
    Browser {
        /// What was being done.
        operation: String,
        /// Chromium's or the driver's message.
        message: String,
    },
    /// No element answers to the ref or selector on the current page.
    #[error("no element `{element}` on the page; refs come from the latest browser_snapshot of this page")]
    NoSuchElement {
        /// The ref or selector as given.
        element: String,
    },
    /// The element exists but cannot take the action (hidden, covered, not editable).
    #[error("element `{element}` cannot be used: {reason}")]
    NotActionable {
        /// The ref or selector as given.
        element: String,
        /// Why.
        reason: String,
    },
    /// The arguments are well-formed but cannot be acted on (a shell script with more than
    /// one argv entry, a branch action without its name, a revision that reads as an option).
    #[error("{message}")]
    InvalidRequest {
        /// What is wrong and what to send instead.
        message: String,
    },
    /// The repository's own configuration would make kyro read or run something outside
    /// it (an `include.path`); nothing was run.
    #[error("{message}")]
    UnsafeRepository {
        /// What was found.
        message: String,
    },
    /// A command rule would widen the sandbox of a program while the tree holds config
    /// that program reads and that can name other programs it runs (a `.cargo/config.toml`
    /// for a `cargo` rule with `network = true`); nothing was run.
    #[error("{message}")]
    TreeConfig {
        /// The config file found.
        path: String,
        /// What was refused and what to do instead.
        message: String,
    },
    /// A fetched document could not be converted (HTML to Markdown).
    #[error("cannot convert the document: {message}")]
    Conversion {
        /// The converter's message.
        message: String,
    },
    /// An upstream MCP server failed, or its tool reported an error.
    #[error("upstream MCP server `{server}`: {message}")]
    Upstream {
        /// The upstream's configured name.
        server: String,
        /// What went wrong, or the upstream tool's own error text.
        message: String,
    },
    /// A call `mcp_call` forwarded needs a person's approval of its own, which this call
    /// could not carry: what let it through (a grant or a session's approval of
    /// `mcp_call`) is not an approval of these arguments.
    #[error(
        "`{tool}` needs a person's approval of exactly this call (fingerprint {fingerprint}); what \
         let this `mcp_call` through (a grant or a session's approval of `mcp_call`) does not \
         approve the tools it reaches: call `{tool}` itself to be asked"
    )]
    ForwardNeedsApproval {
        /// The forwarded tool (`server.tool`).
        tool: String,
        /// The forwarded call's fingerprint.
        fingerprint: String,
    },
    /// What `browser_wait_for` waited for did not happen in time.
    #[error("waited {waited_ms} ms for {what}; the page shows: {shown}")]
    NotSeen {
        /// What was awaited (`"Saved" to appear`).
        what: String,
        /// How long, in milliseconds.
        waited_ms: u64,
        /// The start of the page's visible text at the end.
        shown: String,
    },
    /// An expression could not be evaluated.
    #[error("cannot evaluate the expression: {message}")]
    Evaluation {
        /// The evaluator's message.
        message: String,
    },
    /// A computation produced NaN or an infinity.
    #[error("the result is not a finite number ({value})")]
    NonFinite {
        /// `NaN`, `inf` or `-inf`.
        value: String,
    },
}

impl From<Failure> for ToolError {
    fn from(failure: Failure) -> ToolError {
        ToolError::typed(&failure)
    }
}

impl Failure {
    /// The built-in failure a [`ToolError`] carries, if it is one (for tests and for code
    /// that acts on a failed call's kind).
    pub fn of(error: &ToolError) -> Option<Failure> {
        let ToolError::Custom { kind, data, .. } = error else {
            return None;
        };
        let mut fields = match data {
            Some(serde_json::Value::Object(fields)) => fields.clone(),
            None => Default::default(),
            Some(_) => return None,
        };
        fields.insert("kind".into(), serde_json::Value::String(kind.clone()));
        serde_json::from_value(serde_json::Value::Object(fields)).ok()
    }
}

fn edit_suffix(edit: Option<u64>) -> String {
    edit.map(|i| format!(" (edit {i})")).unwrap_or_default()
}

/// What a refusing HTTP status means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteReason {
    /// 401: missing or bad credentials.
    Unauthorized,
    /// 403: not allowed.
    Forbidden,
    /// 404: no such resource (or not visible with these credentials).
    NotFound,
    /// 422: the request was understood and refused (validation).
    Unprocessable,
    /// Any other failure status.
    Other,
}

impl RemoteReason {
    /// The reason of an HTTP status.
    pub fn of(status: u16) -> RemoteReason {
        match status {
            401 => RemoteReason::Unauthorized,
            403 => RemoteReason::Forbidden,
            404 => RemoteReason::NotFound,
            422 => RemoteReason::Unprocessable,
            _ => RemoteReason::Other,
        }
    }
}

impl std::fmt::Display for RemoteReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RemoteReason::Unauthorized => "unauthorized",
            RemoteReason::Forbidden => "forbidden",
            RemoteReason::NotFound => "not found",
            RemoteReason::Unprocessable => "unprocessable",
            RemoteReason::Other => "failed",
        })
    }
}
