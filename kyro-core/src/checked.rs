//! The check a call's arguments go through: the tool's generated check when it has a
//! complete one ([`crate::check`]), else its schema's validator (JSON Schema's interpreter,
//! the `interpreter` feature); without either, deserializing into the tool's type is the
//! check (serde's error, as one violation).

use serde_json::Value;

use crate::registry::RegisteredTool;
use crate::schema::{SchemaError, Violation};

/// Every violation of `arguments` (after aliases are rewritten), sorted by pointer; `None`
/// when no check states the tool's whole schema and serde's deserialization decides.
pub(crate) fn violations(tool: &RegisteredTool, arguments: &Value) -> Result<Option<Vec<Violation>>, SchemaError> {
    if let Some(found) = tool.executor().check(arguments) {
        return Ok(Some(found));
    }
    #[cfg(feature = "interpreter")]
    return Ok(Some(tool.input()?.violations(arguments)));
    #[cfg(not(feature = "interpreter"))]
    Ok(None)
}
