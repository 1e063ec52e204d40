//! `browser_file_upload`, `browser_pdf_save` and `browser_drag`: files into the page, the
//! page into a file, and dragging with the mouse.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use headless_chrome::browser::tab::point::Point;
use headless_chrome::protocol::cdp::DOM::SetFileInputFiles;
use headless_chrome::protocol::cdp::Page::PrintToPDF;
use kyro_core::policy::SettingsTable;
use kyro_core::{ConfinedPath, EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::session::{error, with_page};
use crate::settings::NetworkSettings;

/// Set workspace files on a file input (`<input type="file">`) as a person picking them would
/// (`input` and `change` fire).
#[tool(
    name = "browser_file_upload",
    title = "Upload files in the browser",
    category = "browser",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserFileUpload {
    /// The input's ref from browser_snapshot, like `e3`.
    #[schemars(regex(pattern = "^e[0-9]{1,9}$"))]
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
    /// Workspace-relative files.
    #[schemars(length(min = 1, max = 100))]
    pub paths: Vec<WorkspacePath>,
}

/// The input after the choice.
#[kyro_core::output]
#[derive(Debug)]
pub struct Uploaded {
    /// The names of the files the input now holds.
    pub files: Vec<String>,
}

impl Execute for BrowserFileUpload {
    type Output = Uploaded;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Uploaded, ToolError> {
        let (mut target, element) =
            super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        let mut files = Vec::with_capacity(self.paths.len());
        for path in &self.paths {
            let confined = cx.path(path)?;
            if confined.entry_type()? != Some(EntryType::File) {
                return Err(ToolError::NotAFile {
                    path: confined.given().to_owned(),
                });
            }
            files.push(confined.host_content_path().to_string_lossy().into_owned());
        }
        target["count"] = files.len().into();
        with_page(cx, move |tab, _| {
            let answer = super::script::page_op(tab, "find the file input", "file_input", &target)?;
            super::element_answer(&answer, &element)?;
            let input = tab
                .evaluate(None, "find the file input", "window.__kyroFileInput".into(), false)?
                .object_id
                .ok_or_else(|| error("find the file input", "the input is gone"))?;
            tab.call(
                SetFileInputFiles {
                    files,
                    node_id: None,
                    backend_node_id: None,
                    object_id: Some(input),
                },
                "choose the files",
            )?;
            target["after"] = true.into();
            let answer = super::script::page_op(tab, "read the file input", "file_input", &target)?;
            let files = answer["files"]
                .as_array()
                .map(|f| f.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            Ok(Uploaded { files })
        })
        .await
    }
}

/// Save the page as a PDF in the workspace (as printed: A4-like pages, backgrounds included).
#[tool(
    name = "browser_pdf_save",
    title = "Save the browser page as PDF",
    category = "browser",
    effect = "write",
    destructive = true,
    idempotent = true
)]
pub struct BrowserPdfSave {
    /// Workspace-relative path; an existing file is replaced.
    pub path: WorkspacePath,
    /// Landscape pages.
    #[serde(default)]
    pub landscape: bool,
}

/// The PDF written.
#[kyro_core::output]
#[derive(Debug)]
pub struct PdfSaved {
    /// The file, as given.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
}

impl Execute for BrowserPdfSave {
    type Output = PdfSaved;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<PdfSaved, ToolError> {
        let (path, existing) = replaceable(cx, &self.path)?;
        let landscape = self.landscape;
        let pdf = with_page(cx, move |tab, _| {
            let printed = tab.call(
                PrintToPDF {
                    landscape: Some(landscape),
                    display_header_footer: None,
                    print_background: Some(true),
                    scale: None,
                    paper_width: None,
                    paper_height: None,
                    margin_top: None,
                    margin_bottom: None,
                    margin_left: None,
                    margin_right: None,
                    page_ranges: None,
                    header_template: None,
                    footer_template: None,
                    prefer_css_page_size: None,
                    transfer_mode: None,
                    generate_tagged_pdf: None,
                    generate_document_outline: None,
                },
                "print the page",
            )?;
            BASE64_STANDARD
                .decode(printed.data)
                .map_err(|e| error("print the page", e))
        })
        .await?;
        path.write_atomic(&pdf, existing.as_deref())?;
        Ok(PdfSaved {
            path: path.given().to_owned(),
            bytes: pdf.len() as u64,
        })
    }
}

/// Drag with the mouse from one element to another: pressed at the first's center, moved in steps,
/// released at the second's.
#[tool(
    name = "browser_drag",
    title = "Drag in the browser",
    category = "browser",
    effect = "network",
    destructive = true
)]
pub struct BrowserDrag {
    /// Start element's ref, like `e3`.
    #[schemars(regex(pattern = "^e[0-9]{1,9}$"))]
    pub start_ref: Option<String>,
    /// Start element's CSS selector, instead.
    #[schemars(length(min = 1, max = 1000))]
    pub start_selector: Option<String>,
    /// End element's ref.
    #[schemars(regex(pattern = "^e[0-9]{1,9}$"))]
    pub end_ref: Option<String>,
    /// End element's CSS selector, instead.
    #[schemars(length(min = 1, max = 1000))]
    pub end_selector: Option<String>,
    /// Playwright's spelling: the start element's ref or CSS selector.
    #[tool(alias = "startTarget")]
    #[schemars(length(min = 1, max = 1000))]
    pub start_target: Option<String>,
    /// Playwright's spelling: the end element's ref or CSS selector.
    #[tool(alias = "endTarget")]
    #[schemars(length(min = 1, max = 1000))]
    pub end_target: Option<String>,
    /// The start element in words (Playwright's `startElement`).
    #[tool(alias = "startElement")]
    #[schemars(length(max = 1000))]
    pub start_element: Option<String>,
    /// The end element in words (Playwright's `endElement`).
    #[tool(alias = "endElement")]
    #[schemars(length(max = 1000))]
    pub end_element: Option<String>,
}

impl Execute for BrowserDrag {
    type Output = super::PageState;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<super::PageState, ToolError> {
        let start = super::target(
            self.start_ref.as_deref(),
            self.start_selector.as_deref(),
            self.start_target.as_deref(),
        )?;
        let end = super::target(
            self.end_ref.as_deref(),
            self.end_selector.as_deref(),
            self.end_target.as_deref(),
        )?;
        with_page(cx, move |tab, dialogs| {
            let point = |(target, name): &(serde_json::Value, String)| -> Result<Point, ToolError> {
                let answer = super::script::page_op(tab, "find the element", "center", target)?;
                super::element_answer(&answer, name)?;
                Ok(Point {
                    x: answer["x"].as_f64().unwrap_or_default(),
                    y: answer["y"].as_f64().unwrap_or_default(),
                })
            };
            let (mut from, mut to) = (point(&start)?, point(&end)?);
            let action = format!("Drag {} to {}", start.1, end.1);
            if super::actions::announce(tab, &action, Some(&start.0), Some(from)) {
                (from, to) = (point(&start)?, point(&end)?);
            }
            tab.drag(from, to)?;
            super::settle(tab);
            let (url, title, _) = super::script::page_info(tab)?;
            Ok(super::PageState {
                url,
                title,
                dialogs: dialogs.take(),
            })
        })
        .await
    }
}

/// A workspace file a tool writes whole, confined for writing: the path, and what it holds
/// now (to replace it atomically and hash it in the receipt). Refused when it is no file or
/// its directory is missing, before anything is done.
pub(super) fn replaceable(
    cx: &ToolContext,
    given: &WorkspacePath,
) -> Result<(ConfinedPath, Option<Vec<u8>>), ToolError> {
    let path = cx.path(given)?;
    let existing = match path.entry_type()? {
        Some(EntryType::File) => Some(path.read()?),
        Some(_) => {
            return Err(ToolError::NotAFile {
                path: path.given().to_owned(),
            });
        }
        None => None,
    };
    if !path.parent_exists() {
        return Err(ToolError::NotFound {
            path: path.parent_display(),
        });
    }
    Ok((path, existing))
}
