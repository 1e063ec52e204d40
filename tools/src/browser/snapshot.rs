//! `browser_snapshot`: the page as an outline with element refs.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde_json::json;

use super::session::with_page;
use crate::settings::NetworkSettings;

const DEFAULT_MAX_CHARS: u64 = 20_000;

/// The most outline read when only a part of it is returned (`ref`, `depth`, `find`).
pub(super) const WHOLE_PAGE_CHARS: u64 = 4_000_000;

/// Read the page as an accessibility outline, one element per line, indented.
/// Actionable elements carry refs (`[ref=e3]`; `f1e3` in cross-origin frames) valid until the next
/// snapshot or navigation. Hidden elements are left out; read parts with `ref`, `depth` or `find`.
#[tool(
    name = "browser_snapshot",
    title = "Read the browser page",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserSnapshot {
    /// Most characters; default 20000.
    #[schemars(range(min = 100, max = 1000000))]
    pub max_chars: Option<u64>,
    /// Only this element's part (a ref from the previous snapshot; Playwright's `target`).
    #[tool(alias = "target")]
    #[schemars(regex(pattern = "^e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// Only lines this deep at most (0: top level).
    #[schemars(range(min = 0, max = 100))]
    pub depth: Option<u32>,
    /// Only lines containing this text (any case), with their ancestors.
    #[schemars(length(min = 1, max = 1000))]
    pub find: Option<String>,
}

/// How deep an outline line is nested (two spaces a level).
fn level(line: &str) -> usize {
    (line.len() - line.trim_start_matches(' ').len()) / 2
}

/// The lines at most `depth` deep, and (with `find`) only those containing it with the
/// lines they are nested in.
fn narrow(lines: Vec<String>, depth: Option<u32>, find: Option<&str>) -> Vec<String> {
    let lines: Vec<String> = match depth {
        Some(depth) => lines.into_iter().filter(|l| level(l) <= depth as usize).collect(),
        None => lines,
    };
    let Some(find) = find.map(str::to_lowercase) else {
        return lines;
    };
    let mut keep = vec![false; lines.len()];
    // The open ancestors of the current line, by level.
    let mut ancestors: Vec<usize> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let at = level(line);
        ancestors.truncate(at);
        if line.to_lowercase().contains(&find) {
            keep[i] = true;
            for &a in &ancestors {
                keep[a] = true;
            }
        }
        ancestors.push(i);
    }
    lines
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(l, _)| l)
        .collect()
}

/// The page's outline, its cross-origin frames read into it.
pub(super) struct Outline {
    pub url: String,
    pub title: String,
    pub lines: Vec<String>,
    pub refs: u64,
    pub truncated: bool,
}

/// Reads the outline (at most `walk_max` characters of the page, `frame_max` of each
/// frame), of one element's part when `root` names it.
pub(super) fn outline(
    tab: &super::driven::Driven,
    walk_max: u64,
    frame_max: u64,
    root: Option<&str>,
) -> Result<Outline, ToolError> {
    // One evaluation reads the outline, the URL and the title.
    let arg = json!({ "max": walk_max, "root": root });
    let outline = super::script::page_op(tab, "read the page", "snapshot", &arg)?;
    let text = |key: &str| outline[key].as_str().unwrap_or_default().to_owned();
    let (url, title) = (text("url"), text("title"));
    if let Some(root) = &root {
        super::element_answer(&outline, root)?;
    }
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
                let arg = json!({ "max": frame_max, "prefix": format!("f{index}") });
                super::script::page_op_in(tab, Some(&frame), "read a frame", "snapshot", &arg).ok()
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
    Ok(Outline {
        url,
        title,
        lines,
        refs,
        truncated,
    })
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
        let BrowserSnapshot {
            r#ref: root,
            depth,
            find,
            ..
        } = self;
        // A part of the page is cut from the whole outline (bounded by the walk's own cap).
        let whole = root.is_some() || depth.is_some() || find.is_some();
        let walk_max = if whole { WHOLE_PAGE_CHARS } else { max };
        with_page(cx, move |tab, _| {
            let Outline {
                url,
                title,
                lines,
                refs,
                mut truncated,
            } = outline(tab, walk_max, max, root.as_deref())?;
            let lines = narrow(lines, depth, find.as_deref());
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
    use super::{BrowserSnapshot, PageSnapshot, narrow};
    use kyro_core::Execute;

    #[test]
    fn depth_and_find_narrow_the_outline_keeping_what_a_line_is_nested_in() {
        let outline: Vec<String> = [
            "- navigation",
            "  - link \"Home\" [ref=e1]",
            "- main",
            "  - form",
            "    - textbox \"Email\" [ref=e2]",
            "    - button \"Send\" [ref=e3]",
            "  - text: \"Footer email us\"",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(narrow(outline.clone(), Some(0), None), ["- navigation", "- main"]);
        assert_eq!(
            narrow(outline.clone(), None, Some("EMAIL")),
            [
                "- main",
                "  - form",
                "    - textbox \"Email\" [ref=e2]",
                "  - text: \"Footer email us\""
            ]
        );
        assert_eq!(
            narrow(outline.clone(), Some(1), Some("email")),
            ["- main", "  - text: \"Footer email us\""]
        );
        assert_eq!(narrow(outline.clone(), None, None), outline);
    }

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
