//! What the video tools keep between calls, with the browser session (it ends with the
//! browser): the recording under way, and the action annotations asked for.
//!
//! A recording is Chromium's screencast of one page (`Page.startScreencast`, JPEG frames)
//! on `headless_chrome`'s connection, where its events arrive. The listener runs on that
//! connection's reader thread, which must not wait for a command of its own (an ack would
//! never be answered): it only hands each frame to a thread of the recording's, which
//! decodes and keeps it and acknowledges it (Chromium sends the next frame after the ack).
//! What is kept is bounded ([`Limits`]): past a limit the screencast stops and the video
//! ends there, and `browser_stop_video` says so.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak, mpsc};
use std::time::Duration;

use headless_chrome::browser::tab::{EventListener, Tab};
use headless_chrome::protocol::cdp::Page::{
    ScreencastFrameAck, StartScreencast, StartScreencastFormatOption, StopScreencast,
};
use headless_chrome::protocol::cdp::types::Event;
use kyro_core::{ToolError, WorkspacePath};

use super::avi::{self, Frame};
use super::report::error;

type FrameListener = dyn EventListener<Event> + Send + Sync;

/// How much a recording keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The JPEG bytes kept of the screencast.
    pub frames: usize,
    /// The longest recording, in seconds.
    pub seconds: f64,
    /// The largest file written (frames repeated to the rate count each time).
    pub file: usize,
}

impl Limits {
    /// 64 MiB of frames, ten minutes, a 128 MiB file.
    pub(crate) const DEFAULT: Limits = Limits {
        frames: 64 << 20,
        seconds: 600.0,
        file: 128 << 20,
    };
}

/// Bytes in words: whole MiB when they are, else bytes.
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The frames kept so far, and where and why a limit cut the recording.
#[derive(Default)]
struct Captured {
    frames: Vec<Frame>,
    bytes: usize,
    cut: Option<(f64, String)>,
}

impl Captured {
    /// Keeps a frame drawn at `at`, unless it passes a limit (the recording is cut there
    /// then, and nothing later is kept); whether it was kept.
    fn keep(&mut self, started: f64, at: f64, jpeg: Vec<u8>, limits: &Limits) -> bool {
        if self.cut.is_some() {
            return false;
        }
        if at - started > limits.seconds {
            let reason = format!("the recording reached its limit of {} s", limits.seconds);
            self.cut = Some((started + limits.seconds, reason));
            return false;
        }
        if self.bytes + jpeg.len() > limits.frames {
            let reason = format!("the frames reached their limit of {}", size(limits.frames));
            self.cut = Some((at, reason));
            return false;
        }
        self.bytes += jpeg.len();
        self.frames.push(Frame { at, jpeg });
        true
    }
}

/// Now, in seconds since the Unix epoch (the clock of the screencast's timestamps).
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// A screencast being recorded.
pub(crate) struct Recording {
    /// The workspace file the video goes to (confined at start, and again at stop).
    pub(crate) path: WorkspacePath,
    fps: f64,
    started: f64,
    limits: Limits,
    captured: Arc<Mutex<Captured>>,
    stopped: Arc<AtomicBool>,
    tab: Weak<Tab>,
    listener: Weak<FrameListener>,
}

/// A video made of a recording.
#[derive(Debug)]
pub(crate) struct Video {
    /// The AVI file's bytes.
    pub avi: Vec<u8>,
    pub frames: usize,
    pub width: u32,
    pub height: u32,
    pub seconds: f64,
    /// Why the video ends before the recording did, when a limit cut it.
    pub cut: Option<String>,
}

impl Recording {
    /// Starts the screencast of `tab`, frames at most `size` (Chromium keeps the page's
    /// aspect ratio), to be written at `fps`.
    pub(crate) fn start(
        tab: &Arc<Tab>,
        path: WorkspacePath,
        size: (u32, u32),
        fps: f64,
        limits: Limits,
    ) -> Result<Recording, ToolError> {
        let started = now();
        let (sender, frames) = mpsc::channel::<(u32, String, Option<f64>)>();
        let listener: Arc<FrameListener> = Arc::new(move |event: &Event| {
            if let Event::PageScreencastFrame(frame) = event {
                let p = &frame.params;
                let _ = sender.send((p.session_id, p.data.clone(), p.metadata.timestamp));
            }
        });
        let captured = Arc::new(Mutex::new(Captured::default()));
        let stopped = Arc::new(AtomicBool::new(false));
        let (kept, done, page) = (captured.clone(), stopped.clone(), Arc::downgrade(tab));
        std::thread::Builder::new()
            .name("kyro-screencast".into())
            .spawn(move || take_frames(&frames, &kept, &done, &page, started, &limits))
            .map_err(|e| error("start the video", e))?;
        let listener = tab
            .add_event_listener(listener)
            .map_err(|e| error("start the video", e))?;
        let recording = Recording {
            path,
            fps,
            started,
            limits,
            captured,
            stopped,
            tab: Arc::downgrade(tab),
            listener,
        };
        tab.call_method(StartScreencast {
            format: Some(StartScreencastFormatOption::Jpeg),
            quality: Some(80),
            max_width: Some(size.0),
            max_height: Some(size.1),
            every_nth_frame: Some(1),
        })
        .map_err(|e| error("start the video", e))?;
        Ok(recording)
    }

    /// Ends the screencast and makes the video: frames placed at the rate from the start
    /// to now (or to where a limit cut it).
    pub(crate) fn stop(self) -> Result<Video, ToolError> {
        let ended = now();
        self.end();
        let (frames, cut) = {
            let mut captured = self.captured.lock().unwrap_or_else(|e| e.into_inner());
            (std::mem::take(&mut captured.frames), captured.cut.take())
        };
        make_video(&frames, self.started, ended, cut, self.fps, &self.limits)
    }

    /// Stops the screencast and the frames' thread.
    fn end(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(tab) = self.tab.upgrade() {
            let _ = tab.call_method(StopScreencast(None));
            let _ = tab.remove_event_listener(&self.listener);
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.stopped.load(Ordering::SeqCst) {
            self.end();
        }
    }
}

/// The recording's thread: decodes and keeps each frame and acknowledges it on the tab's
/// connection, until the recording stops (or its page goes); past a limit, it stops the
/// screencast instead.
fn take_frames(
    frames: &mpsc::Receiver<(u32, String, Option<f64>)>,
    captured: &Mutex<Captured>,
    stopped: &AtomicBool,
    tab: &Weak<Tab>,
    started: f64,
    limits: &Limits,
) {
    use base64::Engine;
    let mut ended = false;
    while !stopped.load(Ordering::SeqCst) {
        let (session_id, data, at) = match frames.recv_timeout(Duration::from_millis(200)) {
            Ok(frame) => frame,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let kept = match base64::prelude::BASE64_STANDARD.decode(data) {
            Ok(jpeg) => {
                captured
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .keep(started, at.unwrap_or_else(now), jpeg, limits)
            }
            // A frame that does not decode is skipped, the next one asked for.
            Err(_) => true,
        };
        let Some(tab) = tab.upgrade() else { return };
        if kept {
            let _ = tab.call_method(ScreencastFrameAck { session_id });
        } else if !std::mem::replace(&mut ended, true) {
            let _ = tab.call_method(StopScreencast(None));
        }
    }
}

/// The video of `frames`, recorded from `started` to `ended` (seconds since the epoch),
/// at `fps`, within `limits`.
fn make_video(
    frames: &[Frame],
    started: f64,
    ended: f64,
    mut cut: Option<(f64, String)>,
    fps: f64,
    limits: &Limits,
) -> Result<Video, ToolError> {
    let mut end = ended;
    match &cut {
        Some((at, _)) => end = end.min(*at),
        None if ended - started > limits.seconds => {
            end = started + limits.seconds;
            cut = Some((end, format!("the recording reached its limit of {} s", limits.seconds)));
        }
        None => {}
    }
    let (placed, file_cut) = avi::place(frames, started, end, fps, limits.file);
    let Some(&first) = placed.first() else {
        return Err(error(
            "stop the video",
            "Chromium sent no frames of the page (nothing was written)",
        ));
    };
    let mut cut = cut.map(|(_, why)| why);
    if file_cut {
        cut = Some(format!("the file reached its limit of {}", size(limits.file)));
    }
    let (width, height) = avi::jpeg_size(&frames[first].jpeg).unwrap_or((0, 0));
    let chunks: Vec<&[u8]> = placed.iter().map(|&i| frames[i].jpeg.as_slice()).collect();
    Ok(Video {
        avi: avi::write(&chunks, fps, width, height),
        frames: placed.len(),
        width,
        height,
        seconds: placed.len() as f64 / fps,
        cut: cut.map(|why| format!("{why}; the video ends there")),
    })
}

/// The action annotations `browser_video_show_actions` asked for.
#[derive(Debug, Clone)]
pub(crate) struct Annotations {
    /// How long each one stays, in milliseconds.
    pub duration: u64,
    /// Where the action's title goes (`top-right`, ...).
    pub position: &'static str,
    /// Whether a cursor travels to each action point.
    pub cursor: bool,
    /// CSS for the title, the point marker and the target's box (`title`, `point`,
    /// `highlight`).
    pub style: serde_json::Value,
    /// Where the cursor was left, for the next one to travel from.
    pub last: Option<(f64, f64)>,
    /// Turned on by `browser_start_video`'s `cursor` (its stop turns them off), not by
    /// `browser_video_show_actions`.
    pub by_video: bool,
}

/// The video state of a browser session.
#[derive(Default)]
pub(crate) struct Studio {
    recording: Mutex<Option<Recording>>,
    annotations: Mutex<Option<Annotations>>,
}

impl Studio {
    /// The recording under way, if any.
    pub(crate) fn recording(&self) -> MutexGuard<'_, Option<Recording>> {
        self.recording.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The action annotations asked for, if any.
    pub(crate) fn annotations(&self) -> MutexGuard<'_, Option<Annotations>> {
        self.annotations.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg(pad: usize) -> Vec<u8> {
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 11, 8, 0, 10, 0, 16, 1, 1, 0x11, 0];
        j.extend(std::iter::repeat_n(0, pad));
        j.extend([0xFF, 0xD9]);
        j
    }

    #[test]
    fn a_video_recording_is_cut_at_its_frame_byte_limit_and_says_so() {
        let tiny = Limits {
            frames: 100,
            seconds: 600.0,
            file: usize::MAX,
        };
        let mut captured = Captured::default();
        assert!(captured.keep(10.0, 10.1, jpeg(40), &tiny));
        assert!(!captured.keep(10.0, 10.5, jpeg(60), &tiny), "past 100 bytes");
        assert!(!captured.keep(10.0, 10.6, jpeg(1), &tiny), "nothing after the cut");
        assert_eq!(captured.frames.len(), 1);
        let video = make_video(&captured.frames, 10.0, 12.0, captured.cut.take(), 10.0, &tiny).unwrap();
        assert_eq!(
            (video.frames, video.width, video.height),
            (5, 16, 10),
            "ends at the cut, 0.5 s"
        );
        let cut = video.cut.unwrap();
        assert!(cut.contains("limit of 100 bytes"), "{cut}");
    }

    #[test]
    fn a_video_recording_is_cut_at_its_time_and_file_limits() {
        let short = Limits {
            frames: usize::MAX,
            seconds: 1.0,
            file: usize::MAX,
        };
        let frames = [Frame {
            at: 0.0,
            jpeg: jpeg(10),
        }];
        let video = make_video(&frames, 0.0, 30.0, None, 4.0, &short).unwrap();
        assert_eq!(video.frames, 4);
        assert!(video.cut.unwrap().contains("limit of 1 s"));
        let small = Limits {
            file: 1000,
            ..Limits::DEFAULT
        };
        let video = make_video(&frames, 0.0, 30.0, None, 25.0, &small).unwrap();
        assert!(video.avi.len() <= 1000 && video.frames > 0, "{}", video.avi.len());
        assert!(video.cut.unwrap().contains("file reached its limit of 1000 bytes"));
        assert!(make_video(&[], 0.0, 1.0, None, 25.0, &Limits::DEFAULT).is_err());
    }
}
