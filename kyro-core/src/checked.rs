//! The check a call's arguments go through: the tool's generated check when it has a
//! complete one ([`crate::check`]), else its schema's validator.

use serde_json::Value;

use crate::registry::{Executor, RegisteredTool};
use crate::schema::{SchemaError, Violation};

/// Every violation of `arguments` (after aliases are rewritten), sorted by pointer.
pub(crate) fn violations(tool: &RegisteredTool, arguments: &Value) -> Result<Vec<Violation>, SchemaError> {
    if let Executor::Builtin(.., Some(check)) = tool.executor()
        && let Some(found) = check(arguments)
    {
        return Ok(found);
    }
    Ok(tool.input()?.violations(arguments))
}
