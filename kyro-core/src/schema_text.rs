//! A canonical schema as a descriptor holds it: a JSON value, or the text a build script
//! prepared, parsed the first time it is read.

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

/// A descriptor's canonical schema. Reads as the [`Value`] it is (it derefs to one); a
/// catalog tool's prepared schema ([`crate::Registry::with_prepared_catalog`]) stays the
/// embedded text until something reads it, so that a server starts without parsing the
/// schemas of tools nobody lists or calls.
#[derive(Clone, Default)]
pub struct Schema {
    text: Option<&'static str>,
    value: OnceLock<Value>,
}

impl Schema {
    /// A schema the build script wrote as compact JSON (parsed when first read).
    pub(crate) fn prepared(text: &'static str) -> Schema {
        Schema {
            text: Some(text),
            value: OnceLock::new(),
        }
    }

    /// The schema.
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            // The build script's own output, embedded: JSON it wrote from a `Value`.
            self.text
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null)
        })
    }

    /// The schema, owned.
    pub fn into_value(self) -> Value {
        self.value();
        self.value.into_inner().unwrap_or_default()
    }

    /// Whether the schema has been parsed (or was given as a value).
    pub fn is_parsed(&self) -> bool {
        self.value.get().is_some()
    }
}

impl From<Value> for Schema {
    fn from(value: Value) -> Schema {
        Schema {
            text: None,
            value: OnceLock::from(value),
        }
    }
}

impl Deref for Schema {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl DerefMut for Schema {
    fn deref_mut(&mut self) -> &mut Value {
        let value = std::mem::take(self).into_value();
        *self = Schema::from(value);
        self.value.get_mut().expect("a schema made from a value holds it")
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value().fmt(f)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.value() == other.value()
    }
}

impl PartialEq<Value> for Schema {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl Serialize for Schema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl schemars::JsonSchema for Schema {
    fn inline_schema() -> bool {
        <Value as schemars::JsonSchema>::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Value as schemars::JsonSchema>::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Value as schemars::JsonSchema>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Schema;

    #[test]
    fn a_prepared_schema_is_parsed_when_first_read_and_reads_as_its_value() {
        let schema = Schema::prepared(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
        assert!(!schema.is_parsed());
        let copy = schema.clone();
        assert_eq!(schema["properties"]["a"]["type"], "string");
        assert!(schema.is_parsed() && !copy.is_parsed());
        assert_eq!(copy, schema);
        assert_eq!(serde_json::to_value(&copy).unwrap(), *schema);
        assert_eq!(Schema::from(json!({"type": "object"})), json!({"type": "object"}));
        assert_eq!(copy.into_value()["type"], "object");
        let mut changed = Schema::prepared(r#"{"type":"object"}"#);
        changed["title"] = json!("changed");
        assert_eq!(changed, json!({"type": "object", "title": "changed"}));
    }
}
