//! Gemini function declarations: `parameters` in Gemini's OpenAPI 3.0 subset, where an
//! unknown keyword fails the whole request.

use kyro_core::ToolDescriptor;
use serde_json::{Map, Value, json};

use super::export::{ExportError, Exported, Relaxed, describe_relaxed, escape, unsupported};

const DIALECT: &str = "gemini";

/// String formats Gemini knows.
const FORMATS: &[&str] = &["date-time", "enum"];
/// Keywords Gemini accepts as they are.
const KEPT: &[&str] = &[
    "description",
    "title",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
];
/// Annotations that constrain nothing: left out.
const ANNOTATIONS: &[&str] = &["examples", "readOnly", "writeOnly", "deprecated", "default"];

/// `{name, description, parameters}`.
pub fn export(d: &ToolDescriptor) -> Result<Exported, ExportError> {
    let name_ok = super::export::name_fits(&d.name, b".");
    if !name_ok {
        return Err(ExportError::Name {
            dialect: DIALECT,
            tool: d.name.clone(),
        });
    }
    let mut relaxed = Vec::new();
    let parameters = openapi(&d.name, &d.input_schema, "", &mut relaxed)?;
    Ok(Exported {
        definition: json!({"name": d.name, "description": d.description, "parameters": parameters}),
        relaxed,
    })
}

fn gemini_type(tool: &str, pointer: &str, t: &str) -> Result<&'static str, ExportError> {
    Ok(match t {
        "object" => "OBJECT",
        "string" => "STRING",
        "integer" => "INTEGER",
        "number" => "NUMBER",
        "boolean" => "BOOLEAN",
        "array" => "ARRAY",
        other => return Err(unsupported(DIALECT, tool, pointer, &format!("type `{other}`"))),
    })
}

fn openapi(tool: &str, schema: &Value, pointer: &str, relaxed: &mut Vec<Relaxed>) -> Result<Value, ExportError> {
    let Some(map) = schema.as_object() else {
        return Err(unsupported(DIALECT, tool, pointer, "an untyped value (`true` schema)"));
    };
    let mut out = Map::new();
    let mut moved = Vec::new();
    let mut relax = |key: &str, value: &Value, moved: &mut Vec<(String, Value)>| {
        moved.push((key.to_owned(), value.clone()));
        relaxed.push(Relaxed {
            pointer: pointer.to_owned(),
            keyword: key.to_owned(),
            value: value.clone(),
        });
    };
    for (key, value) in map {
        match key.as_str() {
            "type" => match value {
                Value::String(t) => {
                    out.insert("type".into(), json!(gemini_type(tool, pointer, t)?));
                }
                Value::Array(ts) => {
                    let non_null: Vec<&str> = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
                    let [single] = non_null.as_slice() else {
                        return Err(unsupported(DIALECT, tool, pointer, "a union of several types"));
                    };
                    out.insert("type".into(), json!(gemini_type(tool, pointer, single)?));
                    if non_null.len() < ts.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                }
                _ => return Err(unsupported(DIALECT, tool, pointer, "a malformed type")),
            },
            "enum" | "const" => {
                let values: Vec<Value> = match value {
                    Value::Array(vs) => vs.clone(),
                    v => vec![v.clone()],
                };
                let strings: Vec<Value> = values.iter().filter(|v| !v.is_null()).cloned().collect();
                if !strings.iter().all(Value::is_string) {
                    return Err(unsupported(DIALECT, tool, pointer, "an enum of non-string values"));
                }
                if strings.len() < values.len() {
                    out.insert("nullable".into(), Value::Bool(true));
                }
                out.insert("type".into(), json!("STRING"));
                out.insert("format".into(), json!("enum"));
                out.insert("enum".into(), Value::Array(strings));
            }
            "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            "properties" | "items" | "anyOf" | "oneOf" | "required" => {}
            "prefixItems" => return Err(unsupported(DIALECT, tool, pointer, "a tuple (`prefixItems`)")),
            // Gemini cannot close an object: unknown keys are still refused by the runtime.
            "additionalProperties" if *value == Value::Bool(false) => relax(key, value, &mut moved),
            // Gemini objects are open already: an open object states nothing more.
            "additionalProperties" if *value == Value::Bool(true) => {}
            "additionalProperties" => {
                return Err(unsupported(
                    DIALECT,
                    tool,
                    pointer,
                    "a map (`additionalProperties` schema)",
                ));
            }
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            k if ANNOTATIONS.contains(&k) => {}
            _ => relax(key, value, &mut moved),
        }
    }
    // The object-closing note is implied for every object; keep descriptions to real limits.
    let described: Vec<(String, Value)> = moved.into_iter().filter(|(k, _)| k != "additionalProperties").collect();
    describe_relaxed(&mut out, &described);
    if let Some(items) = map.get("items") {
        out.insert(
            "items".into(),
            openapi(tool, items, &format!("{pointer}/items"), relaxed)?,
        );
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            // `[T, null]` is T with `nullable`, which Gemini states directly.
            let nulls = branches
                .iter()
                .filter(|b| b.get("type") == Some(&json!("null")))
                .count();
            let mut exported = Vec::new();
            for (i, branch) in branches.iter().enumerate() {
                if branch.get("type") != Some(&json!("null")) {
                    exported.push(openapi(tool, branch, &format!("{pointer}/{key}/{i}"), relaxed)?);
                }
            }
            if nulls > 0 {
                out.insert("nullable".into(), Value::Bool(true));
            }
            match exported.len() {
                1 => {
                    if let Some(Value::Object(only)) = exported.pop() {
                        for (k, v) in only {
                            out.entry(k).or_insert(v);
                        }
                    }
                }
                _ => {
                    out.insert("anyOf".into(), Value::Array(exported));
                }
            }
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let mut exported = Map::new();
        for (name, sub) in properties {
            exported.insert(
                name.clone(),
                openapi(tool, sub, &format!("{pointer}/properties/{}", escape(name)), relaxed)?,
            );
        }
        out.insert(
            "propertyOrdering".into(),
            Value::Array(properties.keys().cloned().map(Value::String).collect()),
        );
        out.insert("properties".into(), Value::Object(exported));
        if let Some(required) = map.get("required") {
            out.insert("required".into(), required.clone());
        }
    }
    Ok(Value::Object(out))
}

/// The arguments of a `functionCall`: its `args` object, unchanged.
pub fn arguments(function_call: &Value) -> Option<&Value> {
    function_call.get("args").filter(|args| args.is_object())
}
