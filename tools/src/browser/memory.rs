//! What kyro keeps of one page between calls: where its mouse is and which buttons it
//! holds (for `browser_mouse_down`/`browser_mouse_up`), and the media features emulated for
//! it (each `browser_emulate_media` call changes only what it names).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The mouse: its last position in the viewport, and the buttons held (DevTools' bits:
/// left 1, right 2, middle 4).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Mouse {
    pub x: f64,
    pub y: f64,
    pub buttons: u32,
}

/// The media emulated: the CSS media type (`print`, `screen`) and features
/// (`prefers-color-scheme` -> `dark`), each only while overridden.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Media {
    pub kind: Option<String>,
    pub features: BTreeMap<String, String>,
}

/// One page's memory.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    mouse: Mutex<Mouse>,
    media: Mutex<Media>,
}

impl Memory {
    /// The mouse now.
    pub(crate) fn mouse(&self) -> Mouse {
        *lock(&self.mouse)
    }

    /// The mouse moved to (`x`, `y`).
    pub(crate) fn moved(&self, x: f64, y: f64) {
        let mut mouse = lock(&self.mouse);
        mouse.x = x;
        mouse.y = y;
    }

    /// A button (its bit) pressed or released; the buttons held afterwards.
    pub(crate) fn press(&self, bit: u32, down: bool) -> u32 {
        let mut mouse = lock(&self.mouse);
        if down {
            mouse.buttons |= bit;
        } else {
            mouse.buttons &= !bit;
        }
        mouse.buttons
    }

    /// The media emulated now.
    pub(crate) fn media(&self) -> Media {
        lock(&self.media).clone()
    }

    /// The media emulated from now on.
    pub(crate) fn set_media(&self, media: Media) {
        *lock(&self.media) = media;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
