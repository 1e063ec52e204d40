//! Anthropic tools: `{name, description, input_schema}`. The canonical schema is already in
//! the accepted subset; `tool_use.input` objects are passed to the runtime as they are.

use kyro_core::ToolDescriptor;
use serde_json::{Value, json};

use super::export::{ExportError, Exported};

const DIALECT: &str = "anthropic";

/// The tool definition.
pub fn export(d: &ToolDescriptor) -> Result<Exported, ExportError> {
    for key in ["oneOf", "anyOf", "allOf"] {
        if d.input_schema.get(key).is_some() {
            return Err(ExportError::Unsupported {
                dialect: DIALECT,
                tool: d.name.clone(),
                pointer: String::new(),
                what: format!("`{key}` at the top level of input_schema"),
            });
        }
    }
    let name_ok = super::export::name_fits(&d.name, &[]);
    if !name_ok {
        return Err(ExportError::Name {
            dialect: DIALECT,
            tool: d.name.clone(),
        });
    }
    Ok(Exported {
        definition: json!({
            "name": d.name,
            "description": d.description,
            "input_schema": d.input_schema,
        }),
        relaxed: Vec::new(),
    })
}

/// The arguments of a `tool_use` block: its `input` object, unchanged.
pub fn arguments(tool_use: &Value) -> Option<&Value> {
    tool_use.get("input").filter(|input| input.is_object())
}
