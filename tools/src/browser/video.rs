//! Playwright MCP's video tools, on a headless Chromium: the driven page's screencast,
//! written to a workspace file as Motion-JPEG in an AVI ([`super::avi`]; no VP8 encoder
//! is at hand, so not Playwright's webm).

use kyro_core::policy::SettingsTable;
use kyro_core::{ConfinedPath, EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::recorder::{Annotations, Limits, Recording};
use super::session::with_studio;
use crate::Failure;
use crate::settings::NetworkSettings;

/// Start recording a video of the page the tools drive, to a workspace file written by
/// `browser_stop_video` (Motion-JPEG in an AVI). At most 10 minutes, 64 MiB of frames.
#[tool(
    name = "browser_start_video",
    title = "Start video",
    category = "browser.devtools",
    effect = "write",
    destructive = false
)]
pub struct BrowserStartVideo {
    /// Workspace-relative file the video goes to; default `video-<unix ms>.avi` in the
    /// root. An existing file is replaced when the video stops.
    pub filename: Option<WorkspacePath>,
    /// The largest frame, in pixels; the page's aspect ratio is kept. Default: the
    /// viewport fit in 800 x 800.
    pub size: Option<VideoSize>,
    /// Frames a second; default 25.
    #[schemars(range(min = 1.0, max = 60.0))]
    pub fps: Option<f64>,
    /// Draw a mouse cursor that travels to each action point (actions wait up to 800 ms
    /// for it), as `browser_video_show_actions` with `cursor: pointer` and no titles.
    pub cursor: Option<bool>,
}

/// A video's frame size.
#[kyro_core::input]
#[derive(Debug, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct VideoSize {
    /// Width in pixels.
    #[schemars(range(min = 16, max = 3840))]
    pub width: u32,
    /// Height in pixels.
    #[schemars(range(min = 16, max = 2160))]
    pub height: u32,
}

/// The recording started.
#[kyro_core::output]
#[derive(Debug)]
pub struct VideoStarted {
    /// The file the video goes to.
    pub path: String,
    /// Frames a second.
    pub fps: f64,
}

impl Execute for BrowserStartVideo {
    type Output = VideoStarted;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<VideoStarted, ToolError> {
        let given = self.filename.unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or_default();
            WorkspacePath::new(format!("video-{now}.avi"))
        });
        // The file is confined before anything is recorded: a path refused records nothing.
        let path = cx.path(&given)?;
        writable(&path, false)?;
        let fps = self.fps.unwrap_or(25.0);
        let size = self.size.map_or((800, 800), |s| (s.width, s.height));
        let cursor = self.cursor.unwrap_or(false);
        let shown = path.given().to_owned();
        with_studio(cx, move |page, studio| {
            let mut recording = studio.recording();
            if recording.is_some() {
                return Err(Failure::InvalidRequest {
                    message: "a video is already being recorded; stop it with browser_stop_video first".into(),
                }
                .into());
            }
            *recording = Some(Recording::start(&page.tab, given, size, fps, Limits::DEFAULT)?);
            // Playwright's cursor: a pointer travelling 800 ms to each action point, no
            // titles (annotations asked for already stay as they are).
            let mut annotations = studio.annotations();
            if cursor && annotations.is_none() {
                *annotations = Some(Annotations {
                    duration: 1600,
                    position: "top-right",
                    cursor: true,
                    style: serde_json::json!({ "title": "display: none" }),
                    last: None,
                    by_video: true,
                });
            }
            Ok(())
        })
        .await?;
        Ok(VideoStarted { path: shown, fps })
    }
}

/// Refuses a path that cannot take the video: a directory, or a file in a missing one;
/// the file it replaces, when `read` (for the receipt's hash before).
fn writable(path: &ConfinedPath, read: bool) -> Result<Option<Vec<u8>>, ToolError> {
    let existing = match path.entry_type()? {
        Some(EntryType::File) if read => Some(path.read()?),
        Some(EntryType::File) => None,
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
    Ok(existing)
}

/// Stop the video `browser_start_video` began and write it to its workspace file.
#[tool(
    name = "browser_stop_video",
    title = "Stop video",
    category = "browser.devtools",
    effect = "write",
    destructive = true
)]
pub struct BrowserStopVideo {}

/// The video written.
#[kyro_core::output]
#[derive(Debug)]
pub struct VideoSaved {
    /// The file (Motion-JPEG in an AVI).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its frames.
    pub frames: u64,
    /// Its length in seconds.
    pub duration: f64,
    /// Its frame width in pixels.
    pub width: u32,
    /// Its frame height in pixels.
    pub height: u32,
    /// Why the video ends before the recording did, when a limit (time, bytes) cut it.
    pub cut: Option<String>,
}

impl Execute for BrowserStopVideo {
    type Output = VideoSaved;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<VideoSaved, ToolError> {
        let given = with_studio(cx, |_, studio| {
            studio.recording().as_ref().map(|r| r.path.clone()).ok_or_else(|| {
                Failure::InvalidRequest {
                    message: "no video is being recorded; start one with browser_start_video".into(),
                }
                .into()
            })
        })
        .await?;
        // Confined again for this call's write; refused, the recording goes on.
        let path = cx.path(&given)?;
        let existing = writable(&path, true)?;
        let video = with_studio(cx, |page, studio| {
            let Some(recording) = studio.recording().take() else {
                return Err(Failure::InvalidRequest {
                    message: "no video is being recorded; start one with browser_start_video".into(),
                }
                .into());
            };
            let mut annotations = studio.annotations();
            if annotations.as_ref().is_some_and(|a| a.by_video) {
                *annotations = None;
                super::actions::hide_cursor(&page.driven());
            }
            recording.stop()
        })
        .await?;
        path.write_atomic(&video.avi, existing.as_deref())?;
        Ok(VideoSaved {
            path: path.given().to_owned(),
            bytes: video.avi.len() as u64,
            frames: video.frames as u64,
            duration: (video.seconds * 1000.0).round() / 1000.0,
            width: video.width,
            height: video.height,
            cut: video.cut,
        })
    }
}
