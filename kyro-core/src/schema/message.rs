//! What a refused argument is told: words a model can act on, in the schema's own
//! vocabulary and in the types the listing shows. A wrong choice names the choices, an
//! unknown field the closest real one, a type error the listed type (never a `null` the
//! listing hides), a missing field its name, a bound the bound.
//!
//! Each kind of refusal is one function, so that every checker (the interpreter of
//! schemas that arrive at run time, and the checks generated for native tools) says the
//! same thing. [`of_error`] reads a `jsonschema` error into them.

use serde_json::Value;

/// The most of a value a message quotes (a long string is cut, with `…`).
const QUOTED: usize = 60;

/// `value` as JSON, cut to 60 characters (`QUOTED`).
pub fn quote(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(QUOTED) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// A JSON value's kind as a listing names it, with its article.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A schema type name with its article.
fn article(name: &str) -> String {
    match name {
        "integer" | "array" | "object" => format!("an {name}"),
        "null" => "null".to_owned(),
        other => format!("a {other}"),
    }
}

/// `value` is not of the `listed` types (a schema's `type`: a name or a list). `null` is
/// named only when it is the only type: an optional field's `null` is not shown in the
/// listing, and leaving the field out is the way to say nothing.
pub fn wrong_type(value: &Value, listed: &Value) -> String {
    let names: Vec<&str> = match listed {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let shown: Vec<&str> = match names.iter().filter(|n| **n != "null").copied().collect::<Vec<_>>() {
        rest if rest.is_empty() => names,
        rest => rest,
    };
    let expected = shown.iter().map(|n| article(n)).collect::<Vec<_>>().join(" or ");
    format!("expected {expected}, got {} {}", kind_of(value), quote(value))
}

/// An object holds a field its schema does not: the closest real field, or the fields.
pub fn unknown_field(field: &str, known: &[&str]) -> String {
    match crate::closest::suggest(field, known.iter().copied()).first() {
        Some(closest) => format!("unknown field `{field}`; did you mean `{closest}`?"),
        None if known.is_empty() => format!("unknown field `{field}`; this object takes no fields"),
        None => format!(
            "unknown field `{field}`; the fields are {}",
            known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A required field is missing.
pub fn missing_field(field: &str) -> String {
    format!("missing the required field `{field}`")
}

/// `value` is not one of `choices`.
pub fn not_a_choice(value: &Value, choices: &[&Value]) -> String {
    format!(
        "{} is not one of the choices: {}",
        quote(value),
        choices.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ")
    )
}

/// A number past a bound: `bound` names it (`the minimum`, `the exclusive maximum`).
pub fn out_of_range(value: &Value, bound: &str, limit: &Value) -> String {
    let side = if bound.contains("minimum") { "below" } else { "above" };
    format!("{} is {side} {bound} {limit}", quote(value))
}

/// A string, array or object whose size is past a bound (`unit`: characters, items or
/// fields; `least`: the bound is a minimum).
pub fn wrong_size(size: usize, unit: &str, least: bool, limit: u64) -> String {
    let bound = if least { "at least" } else { "at most" };
    format!("holds {size} {unit}; it takes {bound} {limit}")
}

/// A string that does not match its pattern.
pub fn no_match(value: &Value, pattern: &str) -> String {
    format!("{} does not match the pattern `{pattern}`", quote(value))
}

/// A string that is not of its format.
pub fn wrong_format(value: &Value, format: &str) -> String {
    format!("{} is not a valid {format}", quote(value))
}

/// A value that must be exactly `expected`.
pub fn not_the_constant(value: &Value, expected: &Value) -> String {
    format!("{} must be {}", quote(value), quote(expected))
}

/// The size of `value` in `unit`s: characters of a string, items of an array, fields of
/// an object.
#[cfg(feature = "interpreter")]
fn size(value: &Value) -> usize {
    match value {
        Value::String(s) => s.chars().count(),
        Value::Array(items) => items.len(),
        Value::Object(fields) => fields.len(),
        _ => 0,
    }
}

/// The choices a `oneOf`/`anyOf` offers when every branch is a `const` or an `enum` (an
/// `#[input]` enum of documented choices).
#[cfg(feature = "interpreter")]
fn choices(branches: &Value) -> Option<Vec<&Value>> {
    let mut found = Vec::new();
    for branch in branches.as_array()? {
        match (branch.get("const"), branch.get("enum").and_then(Value::as_array)) {
            (Some(one), _) => found.push(one),
            (None, Some(many)) => found.extend(many),
            (None, None) => return None,
        }
    }
    Some(found)
}

/// The message for `error`, a violation of `schema` (the root the error's schema path
/// points into), in the words above; jsonschema's own where none applies.
#[cfg(feature = "interpreter")]
pub fn of_error(error: &jsonschema::ValidationError<'_>, schema: &Value) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let instance = error.instance();
    let keyword_path = error.schema_path().to_string();
    let at = |suffix: &str| -> Option<&Value> {
        let parent = keyword_path.strip_suffix(suffix)?;
        schema.pointer(parent)
    };
    match error.kind() {
        Kind::Type { .. } => match schema.pointer(&keyword_path) {
            Some(listed) => wrong_type(instance, listed),
            None => error.to_string(),
        },
        Kind::AdditionalProperties { unexpected } | Kind::UnevaluatedProperties { unexpected } => {
            let known: Vec<&str> = at("/additionalProperties")
                .or_else(|| at("/unevaluatedProperties"))
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            unexpected
                .iter()
                .map(|field| unknown_field(field, &known))
                .collect::<Vec<_>>()
                .join("; ")
        }
        Kind::Required { property } => missing_field(property.as_str().unwrap_or_default()),
        Kind::Enum { options } => match options.as_array() {
            Some(options) => not_a_choice(instance, &options.iter().collect::<Vec<_>>()),
            None => error.to_string(),
        },
        Kind::OneOfNotValid { .. } | Kind::AnyOf { .. } => match schema.pointer(&keyword_path).and_then(choices) {
            Some(choices) => not_a_choice(instance, &choices),
            None => error.to_string(),
        },
        Kind::Constant { expected_value } => not_the_constant(instance, expected_value),
        Kind::Minimum { limit } => out_of_range(instance, "the minimum", limit),
        Kind::Maximum { limit } => out_of_range(instance, "the maximum", limit),
        Kind::ExclusiveMinimum { limit } => out_of_range(instance, "the exclusive minimum", limit),
        Kind::ExclusiveMaximum { limit } => out_of_range(instance, "the exclusive maximum", limit),
        Kind::MinLength { limit } => wrong_size(size(instance), "characters", true, *limit),
        Kind::MaxLength { limit } => wrong_size(size(instance), "characters", false, *limit),
        Kind::MinItems { limit } => wrong_size(size(instance), "items", true, *limit),
        Kind::MaxItems { limit } => wrong_size(size(instance), "items", false, *limit),
        Kind::MinProperties { limit } => wrong_size(size(instance), "fields", true, *limit),
        Kind::MaxProperties { limit } => wrong_size(size(instance), "fields", false, *limit),
        Kind::Pattern { pattern } => no_match(instance, pattern),
        Kind::Format { format } => wrong_format(instance, format),
        _ => error.to_string(),
    }
}

#[cfg(test)]
#[cfg(feature = "interpreter")]
mod tests {

    use serde_json::{Value, json};

    use crate::schema::CompiledSchema;

    fn schema() -> CompiledSchema {
        CompiledSchema::compile(&json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "minLength": 2, "maxLength": 10, "pattern": "^[a-z]+$"},
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
                "action": {"oneOf": [
                    {"const": "push", "description": "Set the changes aside."},
                    {"const": "pop", "description": "Bring them back."}
                ]},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "when": {"type": "string", "format": "date"}
            }
        }))
        .unwrap()
    }

    /// The one message for `arguments` (with a valid `path` unless they give one).
    fn said(arguments: Value) -> (String, String) {
        let mut arguments = arguments;
        if arguments.get("path").is_none() {
            arguments["path"] = json!("ok");
        }
        let violations = schema().violations(&arguments);
        assert_eq!(violations.len(), 1, "{violations:?}");
        (violations[0].pointer.clone(), violations[0].message.clone())
    }

    #[test]
    fn a_wrong_choice_names_the_choices() {
        let (at, message) = said(json!({"action": "bogus"}));
        assert_eq!(at, "/action");
        assert_eq!(message, r#""bogus" is not one of the choices: "push", "pop""#);
        let (_, message) = said(json!({"mode": "quick"}));
        assert_eq!(message, r#""quick" is not one of the choices: "fast", "slow""#);
    }

    #[test]
    fn an_unknown_field_names_the_closest_real_one_or_the_fields() {
        let (at, message) = said(json!({"limt": 3}));
        assert_eq!(at, "");
        assert_eq!(message, "unknown field `limt`; did you mean `limit`?");
        let (_, message) = said(json!({"zzzzzz": 3}));
        assert!(
            message.starts_with("unknown field `zzzzzz`; the fields are ") && message.contains("`path`"),
            "{message}"
        );
    }

    #[test]
    fn a_type_error_speaks_the_listed_type_without_a_hidden_null() {
        let (at, message) = said(json!({"limit": "x"}));
        assert_eq!(at, "/limit");
        assert_eq!(message, r#"expected an integer, got a string "x""#);
        let (_, message) = said(json!({"path": 7}));
        assert_eq!(message, "expected a string, got an integer 7");
    }

    #[test]
    fn a_missing_field_is_named() {
        let violations = schema().violations(&json!({}));
        assert_eq!(violations[0].message, "missing the required field `path`");
    }

    #[test]
    fn a_bound_names_the_bound() {
        assert_eq!(said(json!({"limit": 0})).1, "0 is below the minimum 1");
        assert_eq!(said(json!({"limit": 101})).1, "101 is above the maximum 100");
        assert_eq!(said(json!({"path": "a"})).1, "holds 1 characters; it takes at least 2");
        assert_eq!(
            said(json!({"path": "abcdefghijk"})).1,
            "holds 11 characters; it takes at most 10"
        );
        assert_eq!(
            said(json!({"tags": ["a", "b", "c"]})).1,
            "holds 3 items; it takes at most 2"
        );
        assert_eq!(
            said(json!({"path": "A1"})).1,
            r#""A1" does not match the pattern `^[a-z]+$`"#
        );
        assert_eq!(said(json!({"when": "soon"})).1, r#""soon" is not a valid date"#);
    }

    #[test]
    fn a_long_value_is_quoted_cut() {
        let long = "x".repeat(500);
        let (_, message) = said(json!({ "mode": long }));
        assert!(message.len() < 200 && message.contains('…'), "{message}");
    }
}
