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
    /// The target exists and the call did not allow replacing it.
    #[error("`{path}` already exists")]
    AlreadyExists {
        /// The workspace path as given.
        path: String,
    },
    /// The path leaves the workspace (absolute, `..` or a symlink pointing out).
    #[error("`{path}` is outside the workspace")]
    OutsideWorkspace {
        /// The workspace path as given.
        path: String,
    },
    /// Authorization refused something the tool found only while running (a path inside
    /// a patch, a sub-agent's scope): the call's outcome is `denied`, with this reason.
    #[error("{reason}")]
    Denied {
        /// Why.
        reason: crate::denial::Denial,
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
    /// A tool read a `[tools.*]` policy table it did not declare, and the table does not
    /// fit its type (declared tables are checked when the policy loads).
    #[error("the policy's [tools.{table}] table cannot be read: {message}")]
    Settings {
        /// The table's name.
        table: String,
        /// serde's message.
        message: String,
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
    /// The call's caller gave up (time limit, cancellation) and the tool stopped its work
    /// (`StopSignal::check`). Never a call's outcome: that is already `timed_out` or
    /// `cancelled`.
    #[error("the call was stopped: its caller gave up")]
    Stopped {},
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

    /// A tool family's own typed failure in the open form: `error`'s serialized `kind`
    /// tag becomes the kind, its `Display` the message, and its other fields the data.
    /// Built-in families keep a typed enum (`#[serde(tag = "kind")]`) and convert at their
    /// edge with this, so kyro-core names no tool's failures.
    ///
    /// ```
    /// # use kyro_core::ToolError;
    /// #[derive(serde::Serialize, thiserror::Error, Debug)]
    /// #[serde(tag = "kind", rename_all = "snake_case")]
    /// enum Weather {
    ///     #[error("no station named `{station}`")]
    ///     NoStation { station: String },
    /// }
    /// let error = ToolError::typed(&Weather::NoStation { station: "XYZ".into() });
    /// assert_eq!(error.kind(), "no_station");
    /// assert_eq!(error.to_json()["data"]["station"], "XYZ");
    /// assert_eq!(error.to_string(), "no_station: no station named `XYZ`");
    /// ```
    pub fn typed<E: Serialize + std::fmt::Display>(error: &E) -> ToolError {
        let mut fields = match serde_json::to_value(error) {
            Ok(Value::Object(fields)) => fields,
            _ => Default::default(),
        };
        let kind = match fields.remove("kind") {
            Some(Value::String(kind)) => kind,
            _ => "failed".to_owned(),
        };
        ToolError::Custom {
            kind,
            message: error.to_string(),
            data: (!fields.is_empty()).then_some(Value::Object(fields)),
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

    /// The structured part of the error, for its receipt: an author's data, or a built-in
    /// kind's fields; `None` when it has none.
    pub fn data(&self) -> Option<Value> {
        match self {
            ToolError::Custom { data, .. } => data.clone(),
            _ => {
                let mut fields = match self.to_json() {
                    Value::Object(map) => map,
                    _ => return None,
                };
                fields.remove("kind");
                fields.remove("message");
                (!fields.is_empty()).then_some(Value::Object(fields))
            }
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
