//! `--catalog search`: a listing of the discovery tools and one `call_tool` meta-tool, for
//! clients whose model should find tools rather than read them all. `call_tool` runs any
//! served tool through the same boundary as a direct call (validation, policy, approvals,
//! receipts naming the real tool).

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

/// The meta-tool's name.
pub(crate) const CALL_TOOL: &str = "call_tool";

/// The meta-tool as listed: a name and the arguments object; no output schema (the result
/// is the called tool's).
pub(crate) fn call_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "The tool to run, as tool_search names it."},
            "arguments": {"type": "object", "description": "Its arguments, as tool_describe's inputSchema asks."}
        }
    });
    let annotations = ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(true);
    Tool::new(
        CALL_TOOL,
        "Run any tool by name with its arguments. Find tools with tool_search and read their \
         arguments with tool_describe first; the call goes through the same checks and \
         approvals as calling the tool directly.",
        Arc::new(schema.as_object().cloned().unwrap_or_default()),
    )
    .with_annotations(annotations)
}

/// The call `call_tool` stands for, or why its arguments are not one.
pub(crate) fn unwrap(arguments: Option<&Map<String, Value>>) -> Result<CallToolRequestParams, String> {
    let arguments = arguments.cloned().unwrap_or_default();
    if let Some(extra) = arguments.keys().find(|k| *k != "name" && *k != "arguments") {
        return Err(format!("/{extra}: call_tool takes `name` and `arguments` only"));
    }
    let name = match arguments.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err("/name: the tool to run, a non-empty string, is required".into()),
    };
    let inner = match arguments.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(inner)) => inner.clone(),
        Some(_) => return Err("/arguments: must be a JSON object of the tool's arguments".into()),
    };
    Ok(CallToolRequestParams::new(name).with_arguments(inner))
}
