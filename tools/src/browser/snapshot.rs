//! `browser_snapshot`: the page as an outline with element refs.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::session::with_page;

const DEFAULT_MAX_CHARS: u64 = 20_000;

/// Read the current browser page as an accessibility-style outline: roles, names, values
/// and text, one element per line, indented by nesting.
///
/// Every element one can act on carries a ref (`[ref=e3]`) for browser_click and
/// browser_type; refs hold until the next snapshot or navigation. Hidden elements are
/// left out.
#[tool(
    name = "browser_snapshot",
    title = "Read the browser page",
    category = "browser",
    effect = "network"
)]
pub struct BrowserSnapshot {
    /// Most characters of outline to return; default 20000, at most 200000.
    #[schemars(range(min = 100, max = 200000))]
    pub max_chars: Option<u64>,
}

/// The outline of the page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PageSnapshot {
    /// The page's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// One line per element: `- role "name" [ref=eN]`, indented by nesting.
    pub snapshot: String,
    /// How many elements have refs.
    pub refs: u64,
    /// True when the outline was cut at `max_chars`.
    pub truncated: bool,
}

impl Execute for BrowserSnapshot {
    type Output = PageSnapshot;

    async fn run(self, cx: &ToolContext) -> Result<PageSnapshot, ToolError> {
        let max = self.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        with_page(cx, move |tab, _| {
            let (url, title, _) = super::page_info(tab)?;
            let outline = super::page_op(tab, "read the page", "snapshot", &json!({ "max": max }))?;
            Ok(PageSnapshot {
                url,
                title,
                snapshot: outline["snapshot"].as_str().unwrap_or_default().to_owned(),
                refs: outline["refs"].as_u64().unwrap_or(0),
                truncated: outline["truncated"].as_bool().unwrap_or(false),
            })
        })
        .await
    }
}
