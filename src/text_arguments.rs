//! The CLI's text compatibility edge: `key=value` words become one JSON object, once, and
//! the call then takes the native path.
//!
//! A value is kept as a string where the tool's schema says the argument is a string, and
//! read as JSON otherwise (`limit=5`, `create_dirs=true`, `names=["a","b"]`).

use kyro_core::ArgumentAlias;
use serde_json::{Map, Value};

/// Why `key=value` words could not become an arguments object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TextArgumentsError {
    /// A word without `=`.
    NotKeyValue(String),
    /// The same key twice.
    DuplicateKey(String),
    /// A non-string value that is not JSON.
    NotJson {
        /// The key.
        key: String,
        /// The JSON parser's message.
        message: String,
    },
}

impl std::fmt::Display for TextArgumentsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TextArgumentsError::NotKeyValue(word) => {
                write!(f, "`{word}` is not key=value; pass a JSON object or key=value words")
            }
            TextArgumentsError::DuplicateKey(key) => write!(f, "`{key}` is given twice"),
            TextArgumentsError::NotJson { key, message } => {
                write!(
                    f,
                    "the value of `{key}` is not a JSON value ({message}); quote strings as JSON"
                )
            }
        }
    }
}

/// Builds the arguments object from `key=value` words, typed by `input_schema` (an
/// argument alias is typed as the field it stands for).
pub(crate) fn from_words(
    words: &[String],
    input_schema: &Value,
    aliases: &[ArgumentAlias],
) -> Result<Map<String, Value>, TextArgumentsError> {
    let properties = input_schema.get("properties").and_then(Value::as_object);
    let mut arguments = Map::new();
    for word in words {
        let (key, raw) = word
            .split_once('=')
            .ok_or_else(|| TextArgumentsError::NotKeyValue(word.clone()))?;
        if arguments.contains_key(key) {
            return Err(TextArgumentsError::DuplicateKey(key.to_owned()));
        }
        let field = aliases
            .iter()
            .find(|a| a.alias == key)
            .map_or(key, |a| a.field.as_str());
        let wants_string = properties.and_then(|p| p.get(field)).is_some_and(is_string_schema);
        let value = if wants_string {
            Value::String(raw.to_owned())
        } else {
            // The value alone, to its end: `5,"x":1` is not a value followed by more keys.
            kyro_core::parse_strict(raw).map_err(|e| TextArgumentsError::NotJson {
                key: key.to_owned(),
                message: e.to_string(),
            })?
        };
        arguments.insert(key.to_owned(), value);
    }
    Ok(arguments)
}

fn is_string_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().all(|t| t == "string" || t == "null"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"}, "limit": {"type": ["integer", "null"]}, "note": {"type": ["string", "null"]}
        }})
    }

    fn from_words(words: &[String], schema: &Value) -> Result<Map<String, Value>, TextArgumentsError> {
        let aliases = [ArgumentAlias {
            alias: "file_path".into(),
            field: "path".into(),
        }];
        super::from_words(words, schema, &aliases)
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn string_arguments_stay_strings_and_others_are_json() {
        let args = from_words(&words(&["path=a|b=c.txt", "limit=5", "note=123"]), &schema()).unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"path": "a|b=c.txt", "limit": 5, "note": "123"})
        );
        let args = from_words(&words(&["file_path=0x1"]), &schema()).unwrap();
        assert_eq!(Value::Object(args), json!({"file_path": "0x1"}));
    }

    #[test]
    fn duplicate_keys_and_bare_words_are_refused() {
        assert_eq!(
            from_words(&words(&["path=a", "path=b"]), &schema()),
            Err(TextArgumentsError::DuplicateKey("path".into()))
        );
        assert_eq!(
            from_words(&words(&["path"]), &schema()),
            Err(TextArgumentsError::NotKeyValue("path".into()))
        );
    }

    #[test]
    fn a_non_string_value_must_be_json() {
        assert!(matches!(
            from_words(&words(&["limit=five"]), &schema()),
            Err(TextArgumentsError::NotJson { .. })
        ));
    }

    #[test]
    fn a_value_is_one_json_value_and_nothing_after_it() {
        for trailing in [r#"limit=5,"x":1"#, "limit=5 6", "limit=5}", r#"limit={"a":1,"a":2}"#] {
            assert!(
                matches!(
                    from_words(&words(&[trailing]), &schema()),
                    Err(TextArgumentsError::NotJson { .. })
                ),
                "{trailing}"
            );
        }
        assert_eq!(from_words(&words(&["limit= 5 "]), &schema()).unwrap()["limit"], 5);
    }
}
