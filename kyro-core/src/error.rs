//! The typed failures an executor reports.

use serde::Serialize;
use serde_json::Value;

/// Why a tool could not do its job. Each variant names what was being done and on what.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolError {
    /// The path does not exist.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The workspace path as given.
        path: String,
    },
    /// A file was expected.
    #[error("`{path}` is not a regular file")]
    NotAFile {
        /// The workspace path as given.
        path: String,
    },
    /// A directory was expected.
    #[error("`{path}` is not a directory")]
    NotADirectory {
        /// The workspace path as given.
        path: String,
    },
    /// The file is not UTF-8 text.
    #[error("`{path}` is a binary or non-UTF-8 file; only UTF-8 text can be read")]
    BinaryFile {
        /// The workspace path as given.
        path: String,
    },
    /// The target exists and the call did not allow replacing it.
    #[error("`{path}` already exists")]
    AlreadyExists {
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
    /// The path leaves the workspace (absolute, `..` or a symlink pointing out).
    #[error("`{path}` is outside the workspace")]
    OutsideWorkspace {
        /// The workspace path as given.
        path: String,
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
    /// Authorization refused something the tool found only while running (a path inside
    /// a patch, a sub-agent's scope): the call's outcome is `denied`, with this reason.
    #[error("{reason}")]
    Denied {
        /// Why.
        reason: crate::receipt::Denial,
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
    /// A remote service's rate limit is exhausted.
    #[error("{service} rate limit exhausted; it resets at {reset_at} (Unix seconds)")]
    RateLimited {
        /// The service.
        service: String,
        /// When the limit resets, Unix seconds (0 when unknown).
        reset_at: u64,
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
    /// An upstream MCP server failed, or its tool reported an error.
    #[error("upstream MCP server `{server}`: {message}")]
    Upstream {
        /// The upstream's configured name.
        server: String,
        /// What went wrong, or the upstream tool's own error text.
        message: String,
    },
    /// An operating-system error.
    #[error("{operation} `{path}` failed: {message}")]
    Io {
        /// What was being done (read, write, list...).
        operation: String,
        /// The workspace path as given.
        path: String,
        /// The system's message.
        message: String,
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
    /// A tool named in the arguments is not in the catalog.
    #[error("no tool is named `{name}`")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The serialized result is larger than the runtime's limit.
    #[error("the result is {bytes} bytes, over the {limit}-byte limit; ask for less (a smaller limit or window)")]
    OutputTooLarge {
        /// Size of the serialized result.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The validated arguments did not deserialize: the schema and serde disagree (a bug).
    #[error("arguments passed validation but did not deserialize: {message}")]
    ArgumentsDisagree {
        /// serde's message.
        message: String,
    },
    /// The result could not be serialized or broke its output schema (a bug in the tool).
    #[error("the tool produced an invalid result: {message}")]
    Output {
        /// What was wrong.
        message: String,
    },
    /// The tool's input or output schema did not compile into a validator (a bug in the
    /// tool; catalog schemas are compiled by the build script, so only custom catalogs).
    #[error("the tool's schema does not compile: {message}")]
    Schema {
        /// The compiler's message.
        message: String,
    },
    /// A failure the tool's author defined: a kind of their own (`quota_exceeded`), a
    /// message, and optional structured data. Serialized as `{"kind": <their kind>,
    /// "message", "data"}`; made with [`ToolError::custom`].
    #[error("{kind}: {message}")]
    #[serde(untagged)]
    Custom {
        /// The author's kind, snake_case.
        kind: String,
        /// What went wrong, for the model and the person reading.
        message: String,
        /// Anything structured the caller can act on.
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
}

impl From<crate::schema::SchemaError> for ToolError {
    /// A tool's schema that does not compile into a validator.
    fn from(error: crate::schema::SchemaError) -> ToolError {
        ToolError::Schema {
            message: error.to_string(),
        }
    }
}

impl ToolError {
    /// A failure of the author's own kind: it reaches MCP as `isError` with the kind in the
    /// text, the CLI and the outcome JSON as `{"kind": kind, "message": ...}`, and the
    /// receipt records the kind.
    ///
    /// ```
    /// # use kyro_core::ToolError;
    /// let error = ToolError::custom("quota_exceeded", "the daily quota of 100 calls is spent")
    ///     .with_data(serde_json::json!({"resets_at": 1700000000}));
    /// assert_eq!(error.kind(), "quota_exceeded");
    /// assert_eq!(error.to_json()["data"]["resets_at"], 1700000000);
    /// ```
    pub fn custom(kind: impl Into<String>, message: impl Into<String>) -> ToolError {
        ToolError::Custom {
            kind: kind.into(),
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured data to a [`ToolError::custom`] error (other errors are
    /// returned unchanged).
    pub fn with_data(self, value: Value) -> ToolError {
        match self {
            ToolError::Custom { kind, message, .. } => ToolError::Custom {
                kind,
                message,
                data: Some(value),
            },
            other => other,
        }
    }

    /// The error's kind, as its JSON form names it (`not_found`, or an author's own).
    pub fn kind(&self) -> String {
        match self {
            ToolError::Custom { kind, .. } => kind.clone(),
            other => serde_json::to_value(other)
                .ok()
                .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default(),
        }
    }

    /// An I/O failure, with the operation and path for context.
    pub fn io(operation: &str, path: &str, err: &std::io::Error) -> ToolError {
        ToolError::Io {
            operation: operation.to_owned(),
            path: path.to_owned(),
            message: err.to_string(),
        }
    }

    /// The JSON form: `{"kind": ..., "message": ..., <fields>}`.
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Default::default()));
        if let Value::Object(map) = &mut value
            && !matches!(self, ToolError::Custom { .. })
        {
            map.insert("message".into(), Value::String(self.to_string()));
        }
        value
    }
}

fn edit_suffix(edit: Option<u64>) -> String {
    edit.map(|i| format!(" (edit {i})")).unwrap_or_default()
}

/// What a refusing HTTP status means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
