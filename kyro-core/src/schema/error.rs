//! Why a schema is refused, and the JSON pointer escaping both halves use.

/// Why a schema cannot be canonical.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The root is not `type: "object"`.
    #[error("the {role} schema must have `type: \"object\"` at its root")]
    NotAnObject {
        /// `input` or `output`.
        role: &'static str,
    },
    /// A keyword outside [`VOCABULARY`](super::VOCABULARY).
    #[error("keyword `{keyword}` at `{pointer}` is outside the canonical vocabulary")]
    UnsupportedKeyword {
        /// JSON pointer into the schema.
        pointer: String,
        /// The keyword.
        keyword: String,
    },
    /// A `$ref` left after inlining, which means a recursive type.
    #[error("`$ref` at `{pointer}`: recursive or referenced types cannot be inlined; use a non-recursive type")]
    Reference {
        /// JSON pointer into the schema.
        pointer: String,
    },
    /// A `$schema` other than draft 2020-12.
    #[error("`$schema` is `{found}`; only draft 2020-12 is accepted")]
    Dialect {
        /// The declared meta-schema.
        found: String,
    },
    /// An `anyOf` that is not "a type or null" (an untagged enum).
    #[error("`anyOf` at `{pointer}` is not `[T, null]`; untagged enums are ambiguous, use an internally tagged enum")]
    Untagged {
        /// JSON pointer into the schema.
        pointer: String,
    },
    /// A `format` the validator does not enforce.
    #[error("format `{format}` at `{pointer}` is not one of the enforced string formats")]
    Format {
        /// JSON pointer into the schema.
        pointer: String,
        /// The format.
        format: String,
    },
    /// An input property without a description.
    #[error("property at `{pointer}` has no description")]
    MissingDescription {
        /// JSON pointer into the schema.
        pointer: String,
    },
    /// A `default` that its own subschema rejects.
    #[error("the default at `{pointer}` does not satisfy its own schema")]
    InvalidDefault {
        /// JSON pointer into the schema.
        pointer: String,
    },
    /// The schema is malformed (the validator would not compile it).
    #[error("the schema is not valid JSON Schema 2020-12: {message}")]
    Malformed {
        /// The validator's message.
        message: String,
    },
}

/// Escapes a key for a JSON pointer (RFC 6901).
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
