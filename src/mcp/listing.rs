//! How a tool is listed over MCP: its descriptor as an MCP tool, the input schema without
//! the bounds that only guard the server, the output schema without what only restates a
//! Rust type.

use std::sync::Arc;

use kyro_core::ToolDescriptor;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

/// The MCP tool for a descriptor: same name, description, schemas; annotations from the effect.
pub(crate) fn mcp_tool(d: &ToolDescriptor) -> Tool {
    // Each hint only where it differs from the spec's default (read-only false,
    // destructive true, idempotent false, open-world true): a client reads the same four
    // values, in a fifth of the bytes. The title is the tool's own (`annotations.title`
    // would repeat it).
    let a = d.annotations;
    let differs = |value: bool, default: bool| (value != default).then_some(value);
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = differs(a.read_only_hint, false);
    // The spec reads destructive and idempotent "only when readOnlyHint == false": a
    // read-only tool's are not listed.
    if !a.read_only_hint {
        annotations.destructive_hint = differs(a.destructive_hint, true);
        annotations.idempotent_hint = differs(a.idempotent_hint, false);
    }
    annotations.open_world_hint = differs(a.open_world_hint, true);
    let mut tool = Tool::new(
        d.name.clone(),
        d.description.clone(),
        Arc::new(object(&listed_input(&d.input_schema))),
    )
    .with_raw_output_schema(Arc::new(object(&listed_output(&d.output_schema))))
    .with_annotations(annotations);
    if let Some(title) = &d.title {
        tool = tool.with_title(title.clone());
    }
    tool
}

/// The MCP tools asked for one by one (rmcp asks for a tool's on every 2026-07-28
/// `tools/call` over HTTP, to check its `Mcp-Param-*` headers), each built once per
/// registry version instead of on every call.
#[derive(Default)]
pub(crate) struct Described(std::sync::Mutex<(u64, std::collections::HashMap<String, Tool>)>);

impl Described {
    /// The MCP tool `name` names in `snapshot` (canonical name or alias).
    pub(crate) fn get(&self, snapshot: &kyro_core::Snapshot, name: &str) -> Option<Tool> {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if held.0 != snapshot.version() {
            // At most one entry per name the registry answers to: bounded by the catalog.
            *held = (snapshot.version(), std::collections::HashMap::new());
        }
        if let Some(tool) = held.1.get(name) {
            return Some(tool.clone());
        }
        let tool = mcp_tool(snapshot.get(name)?.descriptor());
        held.1.insert(name.to_owned(), tool.clone());
        Some(tool)
    }
}

/// The largest and smallest values of Rust's integer types, which a generated schema states
/// as `maximum`/`minimum`: in an output schema they say only what the type is.
const TYPE_BOUNDS: &[i128] = &[
    // An unsigned type's `minimum: 0`.
    0,
    // 64-bit types are bounded to what a JSON number holds exactly (2^53 - 1).
    (1 << 53) - 1,
    -((1 << 53) - 1),
    u64::MAX as i128,
    u32::MAX as i128,
    u16::MAX as i128,
    u8::MAX as i128,
    i64::MAX as i128,
    i64::MIN as i128,
    i32::MAX as i128,
    i32::MIN as i128,
];

/// An output schema as listed: without its `description` keywords (the prose is left to
/// `tool_describe`; the output schema's prose was a third of a listing, and the model reads
/// results, not their schema) and without the integer bounds that only restate a Rust type's
/// range (`maximum: 4294967295`); every other keyword kept. A property named
/// `description` or `maximum` stays.
fn listed_output(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => choices(Value::Object(
            map.iter()
                .filter(|(k, v)| match k.as_str() {
                    "description" => !v.is_string(),
                    // Every property of a result is always there (`null` when empty), and a
                    // result never has others: the lists restate that on every object.
                    "required" => !v.is_array(),
                    "additionalProperties" => v.as_bool() != Some(false),
                    "maximum" | "minimum" => !v
                        .as_i64()
                        .map(i128::from)
                        .or_else(|| v.as_u64().map(i128::from))
                        .is_some_and(|n| TYPE_BOUNDS.contains(&n)),
                    _ => true,
                })
                .map(|(k, v)| {
                    let kept = match (k.as_str(), v) {
                        // Property names are data here, not keywords.
                        ("properties" | "$defs" | "definitions", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| (name.clone(), listed_output(sub)))
                                .collect(),
                        ),
                        _ => listed_output(v),
                    };
                    (k.clone(), kept)
                })
                .collect(),
        )),
        Value::Array(items) => Value::Array(items.iter().map(listed_output).collect()),
        other => other.clone(),
    }
}

/// An input schema as listed: each choice among strings (`oneOf` of `const`s, one per
/// variant of a Rust enum) as one `enum`, the choices' descriptions read after the
/// field's own (about 40 bytes less a choice), an optional property without its `null`,
/// and without the bounds that guard the server rather than shape a call (see
/// [`guard_bound`]). Every other keyword is kept. The tool checks its whole schema, so a
/// call past a bound the listing leaves out is refused with `invalid_arguments` naming the
/// field and the bound, and `tool_describe` and `kyro://tools/NAME` state every bound.
fn listed_input(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => choices(Value::Object(
            map.iter()
                .filter(|(k, v)| !guard_bound(map, k, v))
                .map(|(k, v)| {
                    let required = |name: &str| {
                        map.get("required")
                            .and_then(Value::as_array)
                            .is_some_and(|r| r.iter().any(|n| n == name))
                    };
                    let kept = match (k.as_str(), v) {
                        // An optional property is sent or left out: its `null` (accepted
                        // all the same) is not listed.
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| {
                                    let sub = if required(name) { sub.clone() } else { not_null(sub) };
                                    (name.clone(), listed_input(&sub))
                                })
                                .collect(),
                        ),
                        ("$defs" | "definitions", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| (name.clone(), listed_input(sub)))
                                .collect(),
                        ),
                        ("default" | "const" | "enum" | "examples", _) => v.clone(),
                        _ => listed_input(v),
                    };
                    (k.clone(), kept)
                })
                .collect(),
        )),
        Value::Array(items) => Value::Array(items.iter().map(listed_input).collect()),
        other => other.clone(),
    }
}

/// A bound of an input schema (`schema`, holding `keyword`) that guards the server rather
/// than shapes a call: a most length of [`GUARD`] or more (`maxLength`, `maxItems`: what a
/// path, a body or a list may cost the server, far past what a call means to send), a
/// least length of one (a model does not send an empty name) unless the most is one too,
/// and the range of a JSON-safe integer (what a 64-bit field holds). A tuple's lengths
/// (`prefixItems`) and a smaller most length (a title's 256, a post's 280) shape the call
/// and stay. About 5 KB of the whole catalog's listing.
fn guard_bound(schema: &Map<String, Value>, keyword: &str, value: &Value) -> bool {
    const SAFE: i64 = (1 << 53) - 1;
    if schema.contains_key("prefixItems") {
        return false;
    }
    let most_is_one = ["maxLength", "maxItems"]
        .iter()
        .any(|k| schema.get(*k).and_then(Value::as_u64) == Some(1));
    match keyword {
        "maxLength" | "maxItems" => value.as_u64().is_some_and(|n| n >= GUARD),
        "minLength" | "minItems" => value.as_u64() == Some(1) && !most_is_one,
        "maximum" => value.as_i64() == Some(SAFE) || value.as_u64() == Some(u64::MAX),
        "minimum" => value.as_i64() == Some(-SAFE),
        _ => false,
    }
}

/// The least most length [`guard_bound`] takes for a guard.
const GUARD: u64 = 1000;

/// `{"type": ["string", "null"]}` as `{"type": "string"}`; anything else unchanged.
fn not_null(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(Value::Array(types)) = schema.get("type")
        && types.len() == 2
        && let Some(other) = types.iter().find(|t| *t != "null")
        && types.iter().any(|t| t == "null")
    {
        schema["type"] = other.clone();
    }
    schema
}

/// `{"oneOf": [{"type": "string", "const": "a", "description": "..."}, ...], ...}` as
/// `{"type": "string", "enum": ["a", ...], ...}`, the choices' descriptions appended to the
/// schema's own (one line each) unless it names them already; anything else unchanged.
fn choices(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let Some(Value::Array(items)) = map.get("oneOf") else {
        return Value::Object(map);
    };
    let mut values = Vec::with_capacity(items.len());
    let mut said = Vec::new();
    for item in items {
        let Some(item) = item.as_object() else {
            return Value::Object(map);
        };
        let plain = item.get("type").is_some_and(|t| t == "string")
            && item
                .keys()
                .all(|k| matches!(k.as_str(), "type" | "const" | "description"));
        let (Some(Value::String(value)), true) = (item.get("const"), plain) else {
            return Value::Object(map);
        };
        let named = map
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|own| own.contains(&format!("`{value}`")));
        if let (Some(Value::String(description)), false) = (item.get("description"), named) {
            said.push(format!("`{value}`: {description}"));
        }
        values.push(Value::String(value.clone()));
    }
    if map.contains_key("type") || map.contains_key("enum") || values.is_empty() {
        return Value::Object(map);
    }
    map.remove("oneOf");
    map.insert("type".to_owned(), Value::String("string".to_owned()));
    map.insert("enum".to_owned(), Value::Array(values));
    if !said.is_empty() {
        let mut text = map
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for line in said {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&line);
        }
        map.insert("description".to_owned(), Value::String(text));
    }
    Value::Object(map)
}

fn object(schema: &Value) -> Map<String, Value> {
    schema.as_object().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_choice_among_strings_is_listed_as_one_enum_that_validates_the_same() {
        let input = json!({"type": "object", "properties": {
            "mode": {"description": "How far.", "default": "mixed", "oneOf": [
                {"type": "string", "const": "soft", "description": "HEAD only."},
                {"type": "string", "const": "mixed"},
            ]},
            // Not a plain choice: kept as it is.
            "either": {"oneOf": [{"type": "string", "const": "a"}, {"type": "null"}]},
            // A property named `oneOf` is data.
            "properties": {"type": "string"},
            "optional": {"type": ["integer", "null"], "minimum": 1},
            "needed": {"type": ["integer", "null"]},
        }, "required": ["needed"]});
        let listed = super::listed_input(&input);
        assert_eq!(
            listed["properties"]["mode"],
            json!({"type": "string", "enum": ["soft", "mixed"], "default": "mixed",
                   "description": "How far.\n`soft`: HEAD only."})
        );
        assert_eq!(listed["properties"]["either"], input["properties"]["either"]);
        // A field that names its choices already is not told them twice.
        let named = json!({"description": "`soft` or `mixed`.", "oneOf": [
            {"type": "string", "const": "soft", "description": "HEAD only."},
            {"type": "string", "const": "mixed", "description": "And the index."},
        ]});
        assert_eq!(super::listed_input(&named)["description"], "`soft` or `mixed`.");
        assert_eq!(listed["properties"]["properties"], input["properties"]["properties"]);
        assert_eq!(
            listed["properties"]["optional"],
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(listed["properties"]["needed"], input["properties"]["needed"]);
        // Bounds that guard the server are left to the tool; those that shape a call stay.
        let bounded = json!({"type": "object", "properties": {
            "path": {"type": "string", "minLength": 1, "maxLength": 4096},
            "code": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
            "paths": {"type": "array", "items": {"type": "string", "maxLength": 9}, "minItems": 1, "maxItems": 1000},
            "post": {"type": "string", "minLength": 1, "maxLength": 280},
            "one": {"type": "array", "minItems": 1, "maxItems": 1},
            "none": {"type": "array", "maxItems": 0},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
            "id": {"type": "integer", "minimum": 1, "maximum": 9007199254740991_u64},
            "offset": {"type": "integer", "minimum": -9007199254740991_i64, "maximum": 100},
            "maxLength": {"type": "integer", "maximum": 10},
        }});
        assert_eq!(
            super::listed_input(&bounded),
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "code": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
                "paths": {"type": "array", "items": {"type": "string", "maxLength": 9}},
                "post": {"type": "string", "maxLength": 280},
                "one": {"type": "array", "minItems": 1, "maxItems": 1},
                "none": {"type": "array", "maxItems": 0},
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
                "id": {"type": "integer", "minimum": 1},
                "offset": {"type": "integer", "maximum": 100},
                "maxLength": {"type": "integer", "maximum": 10},
            }})
        );
        let validator = |schema: &serde_json::Value| jsonschema::validator_for(schema).unwrap();
        for value in [
            json!({"mode": "soft"}),
            json!({"mode": "hard"}),
            json!({"mode": 1}),
            json!({}),
            json!({"optional": 0}),
        ] {
            let value = json!({"needed": null})
                .as_object()
                .unwrap()
                .clone()
                .into_iter()
                .chain(value.as_object().unwrap().clone())
                .collect::<serde_json::Map<_, _>>();
            let value = serde_json::Value::Object(value);
            assert_eq!(
                validator(&input).is_valid(&value),
                validator(&listed).is_valid(&value),
                "{value}"
            );
        }
        // Only `null` for an optional property is accepted by the tool and not listed.
        assert!(validator(&input).is_valid(&json!({"needed": 1, "optional": null})));
        assert!(!validator(&listed).is_valid(&json!({"needed": 1, "optional": null})));
        let output = json!({"type": "object", "required": ["op"], "additionalProperties": false, "properties": {"op": {"oneOf": [
            {"type": "string", "const": "created", "description": "Made."},
            {"type": "string", "const": "deleted", "description": "Gone."},
        ]}, "count": {"type": "integer", "minimum": 0}}});
        assert_eq!(
            super::listed_output(&output)["properties"]["op"],
            json!({"type": "string", "enum": ["created", "deleted"]})
        );
        assert_eq!(
            super::listed_output(&output)["properties"]["count"],
            json!({"type": "integer"})
        );
        let listed = super::listed_output(&output);
        assert!(
            listed.get("required").is_none() && listed.get("additionalProperties").is_none(),
            "{listed}"
        );
    }
}
