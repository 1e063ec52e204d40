//! Canonicalization: from a raw schema to the closed, inlined, strict form kyro serves.

use serde_json::{Map, Value};

use super::error::SchemaError;
use super::error::escape;

/// Which side of a tool a schema describes. Inputs are held to more rules than outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The arguments (`inputSchema`).
    Input,
    /// The result (`outputSchema`).
    Output,
}

/// The keywords a canonical schema may use: what the validator and every export dialect
/// understand. Anything else is refused at registration.
pub const VOCABULARY: &[&str] = &[
    "type",
    "title",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "enum",
    "const",
    "default",
    "examples",
    "anyOf",
    "oneOf",
    "readOnly",
    "writeOnly",
    "deprecated",
];

/// String formats the validator enforces and the dialects know.
const STRING_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uuid",
];

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Brings a raw schema to canonical form or says why it cannot be.
///
/// The canonical form: root `type: object`; no `$schema`, `$ref` or `$defs`; integer
/// `format`s replaced by exact `minimum`/`maximum`; `additionalProperties: false` on every
/// object that lists `properties`; only [`VOCABULARY`] keywords; `anyOf` only as `[T, null]`.
pub fn canonicalize(schema: Value, role: Role) -> Result<Value, SchemaError> {
    canonicalize_from(schema, role, Origin::Native)
}

/// Where a schema was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Generated from kyro's own types: every input property must have a description and
    /// only draft 2020-12 is accepted.
    Native,
    /// Declared by another server (an upstream MCP tool): descriptions are optional, and
    /// a draft-07 or 2019-09 `$schema` is accepted, since over the canonical vocabulary
    /// (which has no tuple-form `items`, `definitions` or `dependencies`) they mean the
    /// same as 2020-12.
    Foreign,
}

/// [`canonicalize`] for a schema of the given origin.
pub fn canonicalize_from(mut schema: Value, role: Role, origin: Origin) -> Result<Value, SchemaError> {
    let role_name = match role {
        Role::Input => "input",
        Role::Output => "output",
    };
    let root = schema
        .as_object_mut()
        .ok_or(SchemaError::NotAnObject { role: role_name })?;
    if let Some(dialect) = root.remove("$schema")
        && dialect.as_str() != Some(DRAFT_2020_12)
        && !(origin == Origin::Foreign && dialect.as_str().is_some_and(same_over_vocabulary))
    {
        return Err(SchemaError::Dialect {
            found: dialect.to_string(),
        });
    }
    root.remove("title");
    if role == Role::Input {
        // The tool's description is the descriptor's; repeating it here only costs tokens.
        root.remove("description");
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject { role: role_name });
    }
    let mut walker = Walker {
        role,
        require_descriptions: origin == Origin::Native,
    };
    walker.node(&mut schema, "")?;
    // A malformed schema is refused when the registry compiles it; defaults are checked here.
    check_defaults(&schema, "")?;
    Ok(schema)
}

struct Walker {
    role: Role,
    require_descriptions: bool,
}

/// Draft-07 and 2019-09 meta-schema URIs (with or without `#`, http or https).
fn same_over_vocabulary(uri: &str) -> bool {
    let uri = uri.trim_end_matches('#');
    let uri = uri
        .strip_prefix("http://")
        .or_else(|| uri.strip_prefix("https://"))
        .unwrap_or(uri);
    matches!(
        uri,
        "json-schema.org/draft-07/schema" | "json-schema.org/draft/2019-09/schema"
    )
}

impl Walker {
    fn node(&mut self, node: &mut Value, pointer: &str) -> Result<(), SchemaError> {
        let map = match node {
            Value::Bool(_) => return Ok(()),
            Value::Object(map) => map,
            _ => {
                return Err(SchemaError::Malformed {
                    message: format!("`{pointer}` is neither an object nor a boolean schema"),
                });
            }
        };
        for key in map.keys() {
            if key == "$ref" {
                return Err(SchemaError::Reference {
                    pointer: pointer.to_owned(),
                });
            }
            if !VOCABULARY.contains(&key.as_str()) {
                return Err(SchemaError::UnsupportedKeyword {
                    pointer: pointer.to_owned(),
                    keyword: key.clone(),
                });
            }
        }
        numeric_format(map, pointer)?;
        if map.contains_key("properties") && !map.contains_key("additionalProperties") {
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
        if let Some(Value::Array(branches)) = map.get("anyOf") {
            let nulls = branches.iter().filter(|b| is_null_schema(b)).count();
            if branches.len() != 2 || nulls != 1 {
                return Err(SchemaError::Untagged {
                    pointer: pointer.to_owned(),
                });
            }
        }
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            for (name, sub) in properties.iter_mut() {
                let at = format!("{pointer}/properties/{}", escape(name));
                if self.require_descriptions
                    && self.role == Role::Input
                    && sub.get("description").is_none()
                    && !sub.is_boolean()
                {
                    return Err(SchemaError::MissingDescription { pointer: at });
                }
                self.node(sub, &at)?;
            }
        }
        for key in ["additionalProperties", "items"] {
            if let Some(sub) = map.get_mut(key) {
                self.node(sub, &format!("{pointer}/{key}"))?;
            }
        }
        for key in ["prefixItems", "anyOf", "oneOf"] {
            if let Some(Value::Array(subs)) = map.get_mut(key) {
                for (i, sub) in subs.iter_mut().enumerate() {
                    self.node(sub, &format!("{pointer}/{key}/{i}"))?;
                }
            }
        }
        Ok(())
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The largest integer a JSON number carries exactly in JavaScript and in an f64
/// (`Number.MAX_SAFE_INTEGER`, 2^53 - 1).
const SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Replaces schemars' numeric formats (`uint32`, `int64`, `double`...) with the bounds
/// serde enforces, and refuses unknown string formats. 64-bit integers are bounded to
/// ±(2^53 - 1): past that a client in JavaScript, or any that reads numbers as f64, cannot
/// hold the bound or the value exactly (a schema saying `maximum: 18446744073709551615`
/// is read as 2^64), and the validator stays stricter than serde, never looser.
fn numeric_format(map: &mut Map<String, Value>, pointer: &str) -> Result<(), SchemaError> {
    let Some(format) = map.get("format").and_then(Value::as_str).map(str::to_owned) else {
        return Ok(());
    };
    let bounds: Option<(Value, Value)> = match format.as_str() {
        "int8" => Some((i8::MIN.into(), i8::MAX.into())),
        "int16" => Some((i16::MIN.into(), i16::MAX.into())),
        "int32" => Some((i32::MIN.into(), i32::MAX.into())),
        "int64" | "int" => Some(((-SAFE_INTEGER).into(), SAFE_INTEGER.into())),
        "uint8" => Some((0.into(), u8::MAX.into())),
        "uint16" => Some((0.into(), u16::MAX.into())),
        "uint32" => Some((0.into(), u32::MAX.into())),
        "uint64" | "uint" => Some((0.into(), SAFE_INTEGER.into())),
        "double" | "float" => None,
        other if STRING_FORMATS.contains(&other) => return Ok(()),
        other => {
            return Err(SchemaError::Format {
                pointer: pointer.to_owned(),
                format: other.to_owned(),
            });
        }
    };
    map.remove("format");
    if let Some((min, max)) = bounds {
        tighten(map, "minimum", min, |new, old| new > old);
        tighten(map, "maximum", max, |new, old| new < old);
    }
    Ok(())
}

fn tighten(map: &mut Map<String, Value>, key: &str, bound: Value, stricter: fn(f64, f64) -> bool) {
    let keep_existing = match (map.get(key).and_then(Value::as_f64), bound.as_f64()) {
        (Some(existing), Some(new)) => !stricter(new, existing),
        _ => false,
    };
    if !keep_existing {
        map.insert(key.to_owned(), bound);
    }
}

fn check_defaults(node: &Value, pointer: &str) -> Result<(), SchemaError> {
    let Some(map) = node.as_object() else {
        return Ok(());
    };
    #[cfg(feature = "interpreter")]
    if let Some(default) = map.get("default") {
        let mut without = map.clone();
        without.remove("default");
        let compiled = super::validate::CompiledSchema::compile(&Value::Object(without))?;
        if !compiled.is_valid(default) {
            return Err(SchemaError::InvalidDefault {
                pointer: pointer.to_owned(),
            });
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, sub) in properties {
            check_defaults(sub, &format!("{pointer}/properties/{}", escape(name)))?;
        }
    }
    Ok(())
}
