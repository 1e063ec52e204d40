//! `browser_snapshot`: the page as an outline with element refs.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::json;

use super::session::with_page;
use crate::settings::NetworkSettings;

const DEFAULT_MAX_CHARS: u64 = 20_000;

/// Read the current browser page as an accessibility-style outline: roles, names, values
/// and text, one element per line, indented by nesting.
///
/// Every element one can act on carries a ref (`[ref=e3]`) for browser_click and
/// browser_type; refs hold until the next snapshot or navigation. Hidden elements are
/// left out. Iframes are read too: elements of a cross-origin frame get refs like `f1e3`.
#[tool(
    name = "browser_snapshot",
    title = "Read the browser page",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserSnapshot {
    /// Most characters of outline to return; default 20000, at most 200000.
    #[schemars(range(min = 100, max = 200000))]
    pub max_chars: Option<u64>,
}

/// The outline of the page.
#[kyro_core::output]
#[derive(Debug)]
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
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PageSnapshot, ToolError> {
        let max = self.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        with_page(cx, move |tab, _| {
            let (url, title, _) = super::page_info(tab)?;
            let outline = super::page_op(tab, "read the page", "snapshot", &json!({ "max": max }))?;
            let mut lines: Vec<String> = outline["snapshot"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect();
            let mut refs = outline["refs"].as_u64().unwrap_or(0);
            let mut truncated = outline["truncated"].as_bool().unwrap_or(false);
            // Each cross-origin frame is read in a world of its own and its outline put
            // under its `[frame=fK]` line, its refs prefixed `fK`.
            for index in 1..=outline["frames"].as_u64().unwrap_or(0) as usize {
                let marker = format!("[frame=f{index}]");
                let Some(at) = lines.iter().position(|l| l.contains(&marker)) else {
                    continue;
                };
                let read = match tab.frame(index, false, "read a frame")? {
                    Some((_, frame)) => {
                        let arg = json!({ "max": max, "prefix": format!("f{index}") });
                        super::page_op_in(tab, Some(&frame), "read a frame", "snapshot", &arg).ok()
                    }
                    None => None,
                };
                let Some(inner) = read else {
                    lines[at].push_str(" [not readable]");
                    continue;
                };
                let indent = " ".repeat(lines[at].len() - lines[at].trim_start().len() + 2);
                let inner_lines = inner["snapshot"].as_str().unwrap_or_default().lines();
                let spliced: Vec<String> = inner_lines.map(|l| format!("{indent}{l}")).collect();
                refs += inner["refs"].as_u64().unwrap_or(0);
                truncated |= inner["truncated"].as_bool().unwrap_or(false);
                lines.splice(at + 1..at + 1, spliced);
            }
            let mut snapshot = String::new();
            for line in lines {
                if snapshot.len() + line.len() + 1 > max as usize {
                    truncated = true;
                    break;
                }
                if !snapshot.is_empty() {
                    snapshot.push('\n');
                }
                snapshot.push_str(&line);
            }
            Ok(PageSnapshot {
                url,
                title,
                snapshot,
                refs,
                truncated,
            })
        })
        .await
    }

    /// The outline as is, under the page's URL and title, as Playwright MCP shows it.
    fn text(page: &PageSnapshot) -> Option<String> {
        let mut out = format!("- Page URL: {}\n- Page Title: {}\n", page.url, page.title);
        out.push_str(&format!("- Page Snapshot ({} refs):\n{}", page.refs, page.snapshot));
        if page.truncated {
            out.push_str("\n[… cut at max_chars; ask for more with a larger max_chars]");
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::{BrowserSnapshot, PageSnapshot};
    use kyro_core::Execute;

    #[test]
    fn the_text_is_the_outline_as_is_under_the_url_and_title() {
        let page = PageSnapshot {
            url: "http://127.0.0.1:1/form".into(),
            title: "A \"form\"".into(),
            snapshot: "- form\n  - textbox \"Name\" [ref=e1]".into(),
            refs: 1,
            truncated: true,
        };
        assert_eq!(
            BrowserSnapshot::text(&page).unwrap(),
            "- Page URL: http://127.0.0.1:1/form\n- Page Title: A \"form\"\n- Page Snapshot (1 refs):\n- form\n  - textbox \"Name\" [ref=e1]\n[… cut at max_chars; ask for more with a larger max_chars]"
        );
    }
}
