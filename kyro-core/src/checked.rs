//! The check a call's arguments go through: the tool's generated check when it has a
//! complete one ([`crate::check`]), which also makes the typed arguments; else its schema's
//! validator (JSON Schema's interpreter, the `interpreter` feature); without either,
//! deserializing into the tool's type is the check (serde's error, as one violation).

use serde_json::Value;

use crate::registry::RegisteredTool;
use crate::schema::{SchemaError, Violation};
use crate::tool::Typed;

/// What the check found.
pub(crate) enum Verdict {
    /// Valid, and typed in the same pass.
    Typed(Typed),
    /// Every violation, sorted by pointer.
    Refused(Vec<Violation>),
    /// Valid by the schema's validator: serde makes the typed arguments.
    #[cfg_attr(not(feature = "interpreter"), allow(dead_code))]
    Valid,
    /// Nothing checked the whole: serde's deserialization decides.
    #[cfg_attr(feature = "interpreter", allow(dead_code))]
    BySerde,
}

/// The verdict on `arguments` (after aliases are rewritten).
pub(crate) fn verdict(tool: &RegisteredTool, arguments: &Value) -> Result<Verdict, SchemaError> {
    match tool.executor().check(arguments) {
        Some(Ok(typed)) => return Ok(Verdict::Typed(typed)),
        Some(Err(violations)) => return Ok(Verdict::Refused(violations)),
        None => {}
    }
    #[cfg(feature = "interpreter")]
    return Ok(match tool.input()?.violations(arguments) {
        violations if violations.is_empty() => Verdict::Valid,
        violations => Verdict::Refused(violations),
    });
    #[cfg(not(feature = "interpreter"))]
    Ok(Verdict::BySerde)
}
