//! Arguments at the edge: strict parsing of JSON text, and argument aliases.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::descriptor::ArgumentAlias;
use crate::schema::Violation;

/// Why an argument text could not become an arguments object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    /// Not JSON, or JSON with a duplicate key or a number out of range.
    #[error("arguments are not valid JSON: {message}")]
    Syntax {
        /// The parser's message, with line and column.
        message: String,
    },
    /// Valid JSON, but not an object.
    #[error("arguments must be a JSON object, found {found}")]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
    },
}

/// Parses argument text at an edge (CLI, OpenAI `arguments` strings).
///
/// Unlike `serde_json::from_str::<Value>`, a duplicate key at any depth is an error rather
/// than "last one wins", and numbers that overflow to infinity (`1e400`) are refused.
pub fn parse_arguments(text: &str) -> Result<Map<String, Value>, ArgumentsError> {
    match parse_strict(text)? {
        Value::Object(map) => Ok(map),
        other => Err(ArgumentsError::NotAnObject {
            found: json_type(&other),
        }),
    }
}

/// Parses any JSON text strictly: a duplicate key at any depth, a number that overflows to
/// infinity, a lone surrogate or nesting deeper than 128 levels is a syntax error.
pub fn parse_strict(text: &str) -> Result<Value, ArgumentsError> {
    let mut de = serde_json::Deserializer::from_str(text);
    StrictValue::deserialize_into(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| ArgumentsError::Syntax { message: e.to_string() })
}

/// The JSON type name of a value, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct StrictValue;

impl StrictValue {
    fn deserialize_into<'de, D: Deserializer<'de>>(de: D) -> Result<Value, D::Error> {
        de.deserialize_any(StrictValue)
    }
}

impl<'de> de::DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(StrictValue)
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let value = access.next_value_seed(StrictValue)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// Rewrites argument aliases to their canonical keys.
///
/// An alias given alongside its canonical key is accepted only when both carry the same
/// value; otherwise it is a violation naming both keys.
pub(crate) fn rewrite_aliases(arguments: &mut Map<String, Value>, aliases: &[ArgumentAlias]) -> Vec<Violation> {
    let mut violations = Vec::new();
    for alias in aliases {
        let Some(value) = arguments.remove(&alias.alias) else {
            continue;
        };
        match arguments.get(&alias.field) {
            Some(existing) if *existing != value => {
                violations.push(Violation::new(
                    format!("/{}", alias.alias),
                    format!(
                        "`{}` is an alias of `{}` and both were given with different values; send only `{}`",
                        alias.alias, alias.field, alias.field
                    ),
                ));
                arguments.insert(alias.alias.clone(), value);
            }
            Some(_) => {}
            None => {
                arguments.insert(alias.field.clone(), value);
            }
        }
    }
    violations
}
