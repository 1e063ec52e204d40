//! The first answer written over stdio (or, over HTTP, the address bound), which work put
//! off until then waits for. The sandbox probe starts a child process: forking copies the
//! server's page tables while holding its memory map, which stalls the start it runs
//! beside (every page start-up touches faults through that map), so the probe waits for
//! the first answer ([`AT_MOST`] at most). A call that runs a program before then probes
//! at once, itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

static WRITTEN: AtomicBool = AtomicBool::new(false);
static LOCK: Mutex<bool> = Mutex::new(false);
static CHANGED: Condvar = Condvar::new();

/// Says an answer was written (cheap after the first).
pub(crate) fn written() {
    if WRITTEN.swap(true, Ordering::AcqRel) {
        return;
    }
    *LOCK.lock().unwrap_or_else(|p| p.into_inner()) = true;
    CHANGED.notify_all();
}

/// How long [`wait`] waits at most: work put off runs even when no request comes.
const AT_MOST: std::time::Duration = std::time::Duration::from_millis(250);

/// Waits until an answer was written, [`AT_MOST`] at most.
pub(crate) fn wait() {
    let written = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let _ = CHANGED.wait_timeout_while(written, AT_MOST, |written| !*written);
}
