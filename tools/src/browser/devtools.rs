//! Playwright MCP's `devtools` capability, where a headless browser can do it: highlights
//! over elements, and a performance trace of the page written to the workspace.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use headless_chrome::protocol::cdp::IO::{Close, Read};
use headless_chrome::protocol::cdp::Tracing::{End, Start, StartTransfer_modeOption};
use headless_chrome::protocol::cdp::types::Event;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use serde_json::json;

use super::session::{error, with_page};
use crate::Failure;
use crate::settings::NetworkSettings;

/// Outline an element on the page until hidden (it shows in screenshots, never in the
/// outline, and takes no clicks).
#[tool(
    name = "browser_highlight",
    title = "Highlight element",
    category = "browser.devtools",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserHighlight {
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
    /// More CSS for the outline, like `outline: 2px dashed red`.
    #[schemars(length(max = 1000))]
    pub style: Option<String>,
}

/// The highlights on the page after the call.
#[kyro_core::output]
#[derive(Debug)]
pub struct Highlights {
    /// How many elements are highlighted now.
    pub shown: u64,
    /// How many highlights the call removed.
    pub removed: u64,
}

impl Execute for BrowserHighlight {
    type Output = Highlights;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Highlights, ToolError> {
        let (mut target, element) =
            super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        target["style"] = json!(self.style.unwrap_or_default());
        with_page(cx, move |tab, _| highlight(tab, &target, &element)).await
    }
}

/// Remove the highlight of one element, or every highlight when none is named.
#[tool(
    name = "browser_hide_highlight",
    title = "Hide element highlight",
    category = "browser.devtools",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserHideHighlight {
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
}

impl Execute for BrowserHideHighlight {
    type Output = Highlights;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Highlights, ToolError> {
        let (target, element) = match (&self.r#ref, &self.selector, &self.target) {
            (None, None, None) => (json!({ "all": true }), String::new()),
            _ => {
                let (mut target, element) =
                    super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
                target["hide"] = json!(true);
                (target, element)
            }
        };
        with_page(cx, move |tab, _| highlight(tab, &target, &element)).await
    }
}

fn highlight(tab: &super::driven::Driven, target: &serde_json::Value, element: &str) -> Result<Highlights, ToolError> {
    let (answer, _) = super::element_op(tab, "highlight the element", "highlight", target, element)?;
    super::element_answer(&answer, element)?;
    Ok(Highlights {
        shown: answer["shown"].as_u64().unwrap_or_default(),
        removed: answer["removed"].as_u64().unwrap_or_default(),
    })
}

/// Start recording a performance trace of the browser (Chrome's trace events: scripting,
/// layout, paint, network); `browser_stop_tracing` writes it to the workspace.
#[tool(
    name = "browser_start_tracing",
    title = "Start tracing",
    category = "browser.devtools",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserStartTracing {}

/// The trace started.
#[kyro_core::output]
#[derive(Debug)]
pub struct TracingStarted {
    /// The trace categories recorded.
    pub categories: String,
}

/// What a trace records: what DevTools' performance panel shows.
const CATEGORIES: &str = "-*,devtools.timeline,disabled-by-default-devtools.timeline,\
disabled-by-default-devtools.timeline.frame,toplevel,blink.console,blink.user_timing,latencyInfo,\
disabled-by-default-devtools.timeline.stack,disabled-by-default-v8.cpu_profiler,loading,netlog";

/// The largest trace written; a longer recording is refused, not cut.
const MAX_TRACE: usize = 64 << 20;

impl Execute for BrowserStartTracing {
    type Output = TracingStarted;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<TracingStarted, ToolError> {
        with_page(cx, move |tab, _| {
            let start = Start {
                categories: Some(CATEGORIES.to_owned()),
                options: None,
                buffer_usage_reporting_interval: None,
                transfer_mode: Some(StartTransfer_modeOption::ReturnAsStream),
                stream_format: None,
                stream_compression: None,
                trace_config: None,
                perfetto_config: None,
                tracing_backend: None,
            };
            tab.call_listened(start, "start tracing")
                .map_err(|e| refused("start tracing", e))?;
            Ok(TracingStarted {
                categories: CATEGORIES.to_owned(),
            })
        })
        .await
    }
}

/// Stop the trace `browser_start_tracing` began and write it to a workspace file (JSON
/// trace events: open it in Chrome DevTools' Performance panel or ui.perfetto.dev).
#[tool(
    name = "browser_stop_tracing",
    title = "Stop tracing",
    category = "browser.devtools",
    effect = "write",
    destructive = true
)]
pub struct BrowserStopTracing {
    /// Workspace-relative path; default `trace-<unix ms>.json` in the root. An existing
    /// file is replaced.
    pub filename: Option<WorkspacePath>,
}

/// The trace written.
#[kyro_core::output]
#[derive(Debug)]
pub struct TraceSaved {
    /// The file.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Chromium's buffer filled and dropped events.
    pub data_lost: bool,
}

impl Execute for BrowserStopTracing {
    type Output = TraceSaved;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<TraceSaved, ToolError> {
        let given = self.filename.unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or_default();
            WorkspacePath::new(format!("trace-{now}.json"))
        });
        // The file is confined before the trace ends: a path refused ends nothing.
        let (path, existing) = super::files::replaceable(cx, &given)?;
        let (trace, data_lost) = with_page(cx, stop_trace).await?;
        path.write_atomic(&trace, existing.as_deref())?;
        Ok(TraceSaved {
            path: path.given().to_owned(),
            bytes: trace.len() as u64,
            data_lost,
        })
    }
}

/// Ends the page's trace and reads its stream, at most [`MAX_TRACE`] bytes.
fn stop_trace(tab: &super::driven::Driven, _: &super::page::Dialogs) -> Result<(Vec<u8>, bool), ToolError> {
    let (sender, done) = mpsc::sync_channel(1);
    let listener = tab.listen(Arc::new(move |event: &Event| {
        if let Event::TracingComplete(complete) = event {
            let _ = sender.try_send(complete.params.clone());
        }
    }))?;
    let ended = tab
        .call_listened(End(None), "stop tracing")
        .map_err(|e| refused("stop tracing", e));
    let complete = ended.and_then(|_| {
        done.recv_timeout(Duration::from_secs(30))
            .map_err(|_| error("stop tracing", "Chromium did not finish the trace in 30 s"))
    });
    tab.unlisten(&listener);
    let complete = complete?;
    let Some(handle) = complete.stream else {
        return Err(error("stop tracing", "Chromium returned no trace"));
    };
    let mut trace = Vec::new();
    let read = loop {
        let chunk = match tab.call_listened(
            Read {
                handle: handle.clone(),
                offset: None,
                size: Some(1 << 20),
            },
            "read the trace",
        ) {
            Ok(chunk) => chunk,
            Err(e) => break Err(e),
        };
        if chunk.base_64_encoded == Some(true) {
            use base64::Engine;
            match base64::prelude::BASE64_STANDARD.decode(chunk.data) {
                Ok(bytes) => trace.extend(bytes),
                Err(e) => break Err(error("read the trace", e)),
            }
        } else {
            trace.extend(chunk.data.into_bytes());
        }
        if trace.len() > MAX_TRACE {
            break Err(Failure::InvalidRequest {
                message: format!(
                    "the trace passed {} MiB; record a shorter one (start, the few actions to study, stop)",
                    MAX_TRACE >> 20
                ),
            }
            .into());
        }
        if chunk.eof {
            break Ok(());
        }
    };
    let _ = tab.call_listened(Close { handle }, "close the trace");
    read.map(|()| (trace, complete.data_loss_occurred))
}

/// Chromium's refusal to start or stop a trace (one already running, none started) as a
/// request that cannot be acted on; other failures as they are.
fn refused(operation: &str, e: ToolError) -> ToolError {
    let text = e.to_string();
    if text.contains("already") || text.contains("not started") || text.contains("not running") {
        let message = if operation == "start tracing" {
            "a trace is already being recorded; stop it with browser_stop_tracing first"
        } else {
            "no trace is being recorded in this tab; start one with browser_start_tracing"
        };
        return Failure::InvalidRequest {
            message: message.to_owned(),
        }
        .into();
    }
    e
}
