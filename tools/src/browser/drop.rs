//! `browser_drop`: files or data dropped onto an element, as if dragged in from outside
//! the page (DevTools' drag events: enter, over, drop, at the element's center).

use std::collections::BTreeMap;

use headless_chrome::protocol::cdp::Input::{DispatchDragEvent, DispatchDragEventTypeOption, DragData, DragDataItem};
use kyro_core::policy::SettingsTable;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::session::with_page;
use crate::Failure;
use crate::settings::NetworkSettings;

/// Most MIME types one drop carries.
const MAX_TYPES: usize = 32;
/// Most bytes of data one drop carries, all types together.
const MAX_DATA: usize = 4 << 20;
/// The drop operations offered: copy, link and move.
const OPERATIONS: u32 = 1 | 2 | 16;

/// Drop workspace files and/or MIME-typed data onto an element, as if dragged in from outside the page
/// (the page gets `dragenter`, `dragover` and `drop`). Give `paths`, `data` or both.
#[tool(
    name = "browser_drop",
    title = "Drop files or data onto an element",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserDrop {
    /// Ref from browser_snapshot, like `e3` or `f1e3`.
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// CSS selector instead of a ref (first match).
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The element in words (Playwright's `element`; shown when asked).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
    /// Workspace-relative files to drop.
    #[schemars(length(max = 100))]
    pub paths: Option<Vec<WorkspacePath>>,
    /// Data to drop, MIME type to text (`{"text/plain": "hello", "text/uri-list": "https://example.com"}`).
    pub data: Option<BTreeMap<String, String>>,
}

/// What was dropped.
#[kyro_core::output]
#[derive(Debug)]
pub struct Dropped {
    /// The files' names.
    pub files: Vec<String>,
    /// The data's MIME types.
    pub types: Vec<String>,
    /// The page's URL afterwards.
    pub url: String,
    /// The document's title afterwards.
    pub title: String,
    /// Dialogs the page opened meanwhile, all dismissed.
    pub dialogs: Vec<String>,
}

impl Execute for BrowserDrop {
    type Output = Dropped;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Dropped, ToolError> {
        let (target, element) = super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        let paths = self.paths.unwrap_or_default();
        let data = self.data.unwrap_or_default();
        let invalid = |message: String| -> ToolError { Failure::InvalidRequest { message }.into() };
        if paths.is_empty() && data.is_empty() {
            return Err(invalid("give `paths`, `data` or both: there is nothing to drop".into()));
        }
        if data.len() > MAX_TYPES {
            return Err(invalid(format!("{} MIME types given; {MAX_TYPES} at most", data.len())));
        }
        if data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() > MAX_DATA {
            return Err(invalid(format!("the data passes {} MiB", MAX_DATA >> 20)));
        }
        if let Some(kind) = data.keys().find(|k| k.is_empty() || k.chars().any(char::is_control)) {
            return Err(invalid(format!("{kind:?} is not a MIME type")));
        }
        // Confined as read_file confines them, before the page sees anything.
        let mut files = Vec::with_capacity(paths.len());
        let mut names = Vec::with_capacity(paths.len());
        for path in &paths {
            let confined = cx.path(path)?;
            if confined.entry_type()? != Some(EntryType::File) {
                return Err(ToolError::NotAFile {
                    path: confined.given().to_owned(),
                });
            }
            let host = confined.host_content_path();
            names.push(
                host.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
            files.push(host.to_string_lossy().into_owned());
        }
        let types: Vec<String> = data.keys().cloned().collect();
        let drag = DragData {
            items: data
                .into_iter()
                .map(|(mime_type, data)| DragDataItem {
                    mime_type,
                    data,
                    title: None,
                    base_url: None,
                })
                .collect(),
            files: (!files.is_empty()).then_some(files),
            drag_operations_mask: OPERATIONS,
        };
        with_page(cx, move |tab, dialogs| {
            let at = super::element_point(tab, &target, &element)?;
            for kind in [
                DispatchDragEventTypeOption::DragEnter,
                DispatchDragEventTypeOption::DragOver,
                DispatchDragEventTypeOption::Drop,
            ] {
                tab.call(
                    DispatchDragEvent {
                        Type: kind,
                        x: at.x,
                        y: at.y,
                        data: drag.clone(),
                        modifiers: None,
                    },
                    "drop onto the element",
                )?;
            }
            super::settle(tab);
            let state = super::keys::state(tab, dialogs)?;
            Ok(Dropped {
                files: names,
                types,
                url: state.url,
                title: state.title,
                dialogs: state.dialogs,
            })
        })
        .await
    }
}
