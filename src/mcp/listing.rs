//! How a tool is listed over MCP: its descriptor as an MCP tool, the output schema without
//! what only restates a Rust type.

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
    annotations.destructive_hint = differs(a.destructive_hint, true);
    annotations.idempotent_hint = differs(a.idempotent_hint, false);
    annotations.open_world_hint = differs(a.open_world_hint, true);
    let mut tool = Tool::new(d.name.clone(), d.description.clone(), Arc::new(object(&d.input_schema)))
        .with_raw_output_schema(Arc::new(object(&listed_output(&d.output_schema))))
        .with_annotations(annotations);
    if let Some(title) = &d.title {
        tool = tool.with_title(title.clone());
    }
    tool
}

/// The largest and smallest values of Rust's integer types, which a generated schema states
/// as `maximum`/`minimum`: in an output schema they say only what the type is.
const TYPE_BOUNDS: &[i128] = &[
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
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| match k.as_str() {
                    "description" => !v.is_string(),
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
        ),
        Value::Array(items) => Value::Array(items.iter().map(listed_output).collect()),
        other => other.clone(),
    }
}

fn object(schema: &Value) -> Map<String, Value> {
    schema.as_object().cloned().unwrap_or_default()
}
