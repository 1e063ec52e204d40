//! What the dialects share: an exported definition, the constraints moved into
//! descriptions, why a dialect cannot express a tool, and the helpers that decide it.

use serde::Serialize;
use serde_json::{Map, Value};

/// A constraint a dialect could not state as a keyword, moved into the description.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relaxed {
    /// JSON pointer of the subschema in the canonical input schema.
    pub pointer: String,
    /// The keyword.
    pub keyword: String,
    /// Its value.
    pub value: Value,
}

/// A tool definition in a dialect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exported {
    /// What the provider receives.
    pub definition: Value,
    /// Constraints moved into descriptions; the runtime still enforces them.
    pub relaxed: Vec<Relaxed>,
}

/// Why a dialect cannot express a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    /// A construct the dialect has no way to state.
    #[error("{dialect} cannot express `{tool}`: {what} at `{pointer}`")]
    Unsupported {
        /// The dialect.
        dialect: &'static str,
        /// The tool.
        tool: String,
        /// JSON pointer into the input schema.
        pointer: String,
        /// What is not expressible.
        what: String,
    },
    /// A tool name the dialect does not accept.
    #[error("{dialect} does not accept the tool name `{tool}`")]
    Name {
        /// The dialect.
        dialect: &'static str,
        /// The tool.
        tool: String,
    },
}

/// A construct `dialect` cannot state, at `pointer` in `tool`'s input schema.
pub(crate) fn unsupported(dialect: &'static str, tool: &str, pointer: &str, what: &str) -> ExportError {
    ExportError::Unsupported {
        dialect,
        tool: tool.to_owned(),
        pointer: pointer.to_owned(),
        what: what.to_owned(),
    }
}

/// Whether a provider accepts a tool name: 1 to 64 of `[A-Za-z0-9_-]`, plus `extra`.
pub(crate) fn name_fits(name: &str, extra: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || extra.contains(&b))
}

/// Appends the relaxed constraints of one subschema to its description.
pub(crate) fn describe_relaxed(node: &mut Map<String, Value>, moved: &[(String, Value)]) {
    if moved.is_empty() {
        return;
    }
    let notes: Vec<String> = moved.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let text = format!("(constraints: {})", notes.join(", "));
    let description = match node.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} {text}"),
        _ => text,
    };
    node.insert("description".into(), Value::String(description));
}

/// Whether a subschema admits `null`.
pub(crate) fn admits_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    }
}

/// Escapes a key for a JSON pointer.
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
