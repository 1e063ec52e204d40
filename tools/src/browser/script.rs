//! `page.js`, the script every page operation runs, and the ways into it.

use kyro_core::ToolError;
use serde_json::{Value, json};

use super::driven::Driven;

/// The script every page operation runs.
const PAGE_JS: &str = include_str!("page.js");

/// The page's URL, title and the HTTP status of its document.
pub(super) fn page_info(page: &Driven) -> Result<(String, String, Option<u16>), ToolError> {
    let info = page_op(page, "read the page", "page", &json!({}))?;
    Ok((
        info["url"].as_str().unwrap_or_default().to_owned(),
        info["title"].as_str().unwrap_or_default().to_owned(),
        info["status"].as_u64().and_then(|s| u16::try_from(s).ok()),
    ))
}

/// Runs one operation of `page.js` in the page's main frame.
pub(super) fn page_op(page: &Driven, operation: &str, op: &str, arg: &Value) -> Result<Value, ToolError> {
    page_op_in(page, None, operation, op, arg)
}

/// Runs one operation of `page.js` in kyro's world of `frame` (the main frame when `None`).
pub(super) fn page_op_in(
    page: &Driven,
    frame: Option<&str>,
    operation: &str,
    op: &str,
    arg: &Value,
) -> Result<Value, ToolError> {
    let expression = format!("({PAGE_JS})({}, {})", json!(op), arg);
    page.evaluate_json_in(frame, operation, &expression)
}
