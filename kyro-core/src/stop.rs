//! Telling a call's work to stop: set when its caller gave up (the time limit passed, or
//! the client cancelled), seen by blocking code that checks it and by async code that
//! awaits it.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::error::ToolError;

/// The stop signal of one call (`ToolContext::stop`).
///
/// An async executor needs nothing from it: when its caller gives up, its future is
/// dropped at the next await point. Blocking code cannot be dropped, so it checks
/// ([`StopSignal::check`], once per entry of a walk, per file, per row) or registers what
/// ends its work ([`StopSignal::on_stop`]: kill a child process, interrupt a query). A call
/// made from a tool (`ToolContext::call`) is stopped with its parent.
#[derive(Clone, Debug)]
pub struct StopSignal {
    token: CancellationToken,
    deadline: Option<Instant>,
}

impl Default for StopSignal {
    /// A signal that nothing sets (for code run outside a call).
    fn default() -> StopSignal {
        StopSignal {
            token: CancellationToken::new(),
            deadline: None,
        }
    }
}

impl StopSignal {
    /// A signal for a call that must end by `deadline`, stopped with `parent`.
    pub(crate) fn new(parent: Option<&StopSignal>, limit: Duration) -> StopSignal {
        let own = Instant::now().checked_add(limit);
        match parent {
            Some(parent) => StopSignal {
                token: parent.token.child_token(),
                deadline: match (own, parent.deadline) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            },
            None => StopSignal {
                token: CancellationToken::new(),
                deadline: own,
            },
        }
    }

    /// Sets the signal. The runtime does this when the caller gives up; a test does it to
    /// see a tool stop.
    pub fn stop(&self) {
        self.token.cancel();
    }

    /// True once the caller gave up.
    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// `Err(ToolError::Stopped)` once the caller gave up: `stop.check()?` in a loop ends the
    /// work at the next step. The error is never shown to anyone (the call's outcome is
    /// already `timed_out` or `cancelled`); it only unwinds the tool.
    pub fn check(&self) -> Result<(), ToolError> {
        if self.is_stopped() {
            Err(ToolError::Stopped {})
        } else {
            Ok(())
        }
    }

    /// Resolves once the caller gave up.
    pub async fn stopped(&self) {
        self.token.cancelled().await;
    }

    /// When the call's time limit ends (the earliest of its own and its parents').
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The time left before the limit, for a blocking operation that takes a timeout (an
    /// HTTP request, a lock wait); zero once it passed.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Runs `stop` once if the caller gives up while the returned guard lives (at once if it
    /// already did): for blocking work that something else must end, such as a child process
    /// to kill or a query to interrupt. Dropping the guard unregisters it. Needs the tokio
    /// runtime kyro runs executors on; outside one, `stop` runs only if already stopped.
    pub fn on_stop(&self, stop: impl FnOnce() + Send + 'static) -> OnStop {
        if self.is_stopped() {
            stop();
            return OnStop(None);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return OnStop(None);
        };
        let token = self.token.clone();
        let task = runtime.spawn(async move {
            token.cancelled().await;
            stop();
        });
        OnStop(Some(task.abort_handle()))
    }
}

/// Keeps an [`StopSignal::on_stop`] action registered; dropping it unregisters the action.
#[derive(Debug)]
#[must_use = "the action is unregistered when the guard is dropped"]
pub struct OnStop(Option<tokio::task::AbortHandle>);

impl Drop for OnStop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_child_stops_with_its_parent_and_keeps_the_earlier_deadline() {
        let parent = StopSignal::new(None, Duration::from_secs(1));
        let child = StopSignal::new(Some(&parent), Duration::from_secs(60));
        assert_eq!(child.deadline(), parent.deadline());
        assert!(child.check().is_ok());
        parent.stop();
        assert!(child.is_stopped());
        assert!(matches!(child.check(), Err(ToolError::Stopped {})));
    }

    #[test]
    fn an_action_runs_once_on_stop_and_not_after_its_guard_is_dropped() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let ran = Arc::new(AtomicUsize::new(0));
            let signal = StopSignal::new(None, Duration::from_secs(60));
            let count = ran.clone();
            let kept = signal.on_stop(move || {
                count.fetch_add(1, Ordering::SeqCst);
            });
            let count = ran.clone();
            drop(signal.on_stop(move || {
                count.fetch_add(10, Ordering::SeqCst);
            }));
            signal.stop();
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(ran.load(Ordering::SeqCst), 1);
            drop(kept);
            let count = ran.clone();
            let _late = signal.on_stop(move || {
                count.fetch_add(100, Ordering::SeqCst);
            });
            assert_eq!(
                ran.load(Ordering::SeqCst),
                101,
                "registered after the stop: runs at once"
            );
        });
    }
}
