//! OpenAI strict function tools: every object closed, every property required (optional
//! ones nullable), a reduced keyword set; and incoming `arguments` strings.

use kyro_core::{ArgumentsError, ToolDescriptor, parse_arguments};
use serde_json::{Map, Value, json};

use super::export::{ExportError, Exported, Relaxed, admits_null, describe_relaxed, escape, unsupported};

const DIALECT: &str = "openai";

/// Keywords strict mode accepts (constraints and structure).
const KEPT: &[&str] = &[
    "type",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];
/// Annotations strict mode refuses and that constrain nothing: left out.
const ANNOTATIONS: &[&str] = &["examples", "readOnly", "writeOnly", "deprecated"];
/// String formats strict mode knows.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// `{"type": "function", "function": {name, description, parameters, strict: true}}`.
pub fn export(d: &ToolDescriptor) -> Result<Exported, ExportError> {
    let name_ok = super::export::name_fits(&d.name, &[]);
    if !name_ok {
        return Err(ExportError::Name {
            dialect: DIALECT,
            tool: d.name.clone(),
        });
    }
    let mut relaxed = Vec::new();
    let parameters = strict(&d.name, &d.input_schema, "", &mut relaxed)?;
    Ok(Exported {
        definition: json!({
            "type": "function",
            "function": {
                "name": d.name,
                "description": d.description,
                "parameters": parameters,
                "strict": true,
            }
        }),
        relaxed,
    })
}

fn strict(tool: &str, schema: &Value, pointer: &str, relaxed: &mut Vec<Relaxed>) -> Result<Value, ExportError> {
    let Some(map) = schema.as_object() else {
        return Err(unsupported(DIALECT, tool, pointer, "an untyped value (`true` schema)"));
    };
    if let Some(Value::Array(branches)) = map.get("oneOf")
        && !branches.iter().all(is_tagged)
    {
        return Err(unsupported(
            DIALECT,
            tool,
            pointer,
            "`oneOf` with overlapping branches (strict mode has only `anyOf`)",
        ));
    }
    if !["type", "anyOf", "oneOf", "enum", "const"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return Err(unsupported(DIALECT, tool, pointer, "an untyped value"));
    }
    let is_object = map
        .get("type")
        .is_some_and(|t| t == "object" || t.as_array().is_some_and(|ts| ts.contains(&json!("object"))));
    // An object that allows no property at all is an empty object, which strict mode
    // states as `properties: {}` (a tool without arguments).
    let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
    if is_object && !map.contains_key("properties") && closed {
        let mut empty = map.clone();
        empty.insert("properties".into(), Value::Object(Map::new()));
        return strict(tool, &Value::Object(empty), pointer, relaxed);
    }
    if is_object && !map.contains_key("properties") {
        return Err(unsupported(
            DIALECT,
            tool,
            pointer,
            "a free-form object (strict mode needs every property declared)",
        ));
    }
    let mut out = Map::new();
    let mut moved = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "properties" | "items" | "anyOf" | "oneOf" | "required" => {}
            "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            k if ANNOTATIONS.contains(&k) => {}
            _ => {
                moved.push((key.clone(), value.clone()));
                relaxed.push(Relaxed {
                    pointer: pointer.to_owned(),
                    keyword: key.clone(),
                    value: value.clone(),
                });
            }
        }
    }
    describe_relaxed(&mut out, &moved);
    if let Some(items) = map.get("items") {
        out.insert(
            "items".into(),
            strict(tool, items, &format!("{pointer}/items"), relaxed)?,
        );
    }
    // `oneOf` over disjoint branches (each pinned by a `const`) means the same as `anyOf`.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let mut exported = Vec::new();
            for (i, branch) in branches.iter().enumerate() {
                exported.push(strict(tool, branch, &format!("{pointer}/{key}/{i}"), relaxed)?);
            }
            out.insert("anyOf".into(), Value::Array(exported));
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut exported = Map::new();
        for (name, sub) in properties {
            let at = format!("{pointer}/properties/{}", escape(name));
            let mut property = strict(tool, sub, &at, relaxed)?;
            if !required.contains(&name.as_str()) && !admits_null(&property) {
                make_nullable(&mut property);
            }
            exported.insert(name.clone(), property);
        }
        out.insert(
            "required".into(),
            Value::Array(properties.keys().cloned().map(Value::String).collect()),
        );
        out.insert("properties".into(), Value::Object(exported));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Ok(Value::Object(out))
}

/// A branch pinned by a `const`: itself, or one of its properties (a tag).
fn is_tagged(branch: &Value) -> bool {
    branch.get("const").is_some()
        || branch
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.values().any(|v| v.get("const").is_some()))
}

/// Optional becomes nullable: strict mode requires every key.
fn make_nullable(property: &mut Value) {
    let Some(map) = property.as_object_mut() else {
        return;
    };
    match map.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) => ts.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.push(Value::Null);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf")
        && !branches.iter().any(admits_null)
    {
        branches.push(json!({"type": "null"}));
    }
}

/// Parses an OpenAI tool call's `arguments` string once, at the edge, and undoes the
/// export's nullability at every depth: `null` for an optional property the canonical
/// schema does not let be null means "absent" (in nested objects and list items too).
pub fn arguments(d: &ToolDescriptor, text: &str) -> Result<Map<String, Value>, ArgumentsError> {
    let mut arguments = Value::Object(parse_arguments(text)?);
    strip_export_nulls(&mut arguments, &d.input_schema);
    match arguments {
        Value::Object(arguments) => Ok(arguments),
        _ => unreachable!("an object stays an object"),
    }
}

/// Removes the nulls the strict export added for optional properties, following the
/// canonical schema into properties, list items and the one union branch that fits.
fn strip_export_nulls(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            let schema = branch_for(map, schema).unwrap_or(schema);
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|key, value| {
                let exported_nullable = !required.contains(&key.as_str())
                    && properties
                        .and_then(|p| p.get(key))
                        .is_some_and(|schema| !admits_null(schema));
                !(value.is_null() && exported_nullable)
            });
            if let Some(properties) = properties {
                for (key, value) in map.iter_mut() {
                    if let Some(schema) = properties.get(key) {
                        strip_export_nulls(value, schema);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(schema) = schema.get("items") {
                for item in items {
                    strip_export_nulls(item, schema);
                }
            }
        }
        _ => {}
    }
}

/// The branch of a `oneOf`/`anyOf` an object belongs to: the first whose properties hold
/// every key of the object (tagged unions differ by their tag's `const`, checked too).
fn branch_for<'s>(map: &Map<String, Value>, schema: &'s Value) -> Option<&'s Value> {
    let branches = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    branches.iter().find(|branch| {
        let Some(properties) = branch.get("properties").and_then(Value::as_object) else {
            return false;
        };
        map.iter().all(|(key, value)| {
            properties
                .get(key)
                .is_some_and(|p| p.get("const").is_none_or(|c| c == value))
        })
    })
}
