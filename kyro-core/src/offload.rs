//! Where an executor runs: off the thread that serves requests, and stoppable.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::executor::Prepared;
use crate::registry::RegisteredTool;
use crate::stop::StopSignal;

/// How long a caller that gave up (time limit, cancellation) waits for the executor to
/// acknowledge the stop before it answers: an async executor stops at once, so its receipt
/// is written after it stopped; blocking code that ignores the stop is left to finish on
/// the pool, holding up no one.
const STOP_GRACE: Duration = Duration::from_millis(250);

/// An executor running on tokio's blocking pool, so that an executor doing blocking work
/// (std I/O, a sync HTTP client, `std::thread::sleep`, a child process waited for) never
/// stalls the thread serving requests, whatever runtime the server runs on. Async
/// executors are driven there too (the I/O and timers stay the server's runtime's).
pub(crate) struct Offloaded {
    stop: Option<oneshot::Sender<()>>,
    work: JoinHandle<Option<Result<Value, ToolError>>>,
}

impl Offloaded {
    /// Starts the executor.
    pub(crate) fn start(
        tool: Arc<RegisteredTool>,
        (prepared, arguments): (Prepared, Value),
        cx: ToolContext,
    ) -> Offloaded {
        let handle = tokio::runtime::Handle::current();
        let (stop, stopped) = oneshot::channel::<()>();
        let work = tokio::task::spawn_blocking(move || {
            handle.block_on(async move {
                let stopped = async {
                    // Resolves when told to stop (or when the caller's side is gone).
                    let _ = stopped.await;
                };
                let run = async {
                    let result = tool.executor().run(prepared, arguments, &cx).await?;
                    checked(&tool, result, cx.output_limit())
                };
                first_of(run, stopped).await
            })
        });
        Offloaded { stop: Some(stop), work }
    }

    /// The executor's result. Cancel-safe: dropping this future leaves the executor
    /// running until [`Offloaded::stop`].
    pub(crate) async fn finish(&mut self) -> Result<Value, ToolError> {
        match (&mut self.work).await {
            Ok(Some(result)) => result,
            Ok(None) => Err(ToolError::Output {
                message: "the executor was stopped".into(),
            }),
            Err(join) => Err(ToolError::Output {
                message: format!("the executor panicked: {join}"),
            }),
        }
    }

    /// Tells the executor to stop (an async one is dropped at its next await point, blocking
    /// code sees `signal`) and waits for that, [`STOP_GRACE`] at most: true when it stopped,
    /// false when it is still running (left to finish on the pool).
    pub(crate) async fn stop(mut self, signal: &StopSignal) -> bool {
        signal.stop();
        drop(self.stop.take());
        tokio::time::timeout(STOP_GRACE, &mut self.work).await.is_ok()
    }
}

/// A result within the output limit (`limit` bytes of JSON) and valid against the tool's
/// output schema, checked here, on the executor's thread, not on the one serving requests.
/// A catalog tool's output is its type, whose schema was derived from it: checked in debug
/// builds and tests, where a disagreement would show, and not again in release.
pub(crate) fn checked(tool: &RegisteredTool, result: Value, limit: u64) -> Result<Value, ToolError> {
    let bytes = crate::size::json_len(&result);
    if bytes > limit {
        return Err(ToolError::OutputTooLarge { bytes, limit });
    }
    #[cfg(feature = "interpreter")]
    if tool.checks_output() {
        let output = tool.output().map_err(ToolError::from)?;
        if let Some(first) = output.violations(&result).into_iter().next() {
            return Err(ToolError::Output {
                message: format!("{}: {}", first.pointer, first.message),
            });
        }
    }
    #[cfg(not(feature = "interpreter"))]
    let _ = tool;
    Ok(result)
}

/// Runs `work` unless `cancel` completes first; dropping `work` stops the executor.
pub(crate) async fn first_of<T>(work: impl Future<Output = T>, cancel: impl Future<Output = ()>) -> Option<T> {
    let mut work = std::pin::pin!(work);
    let mut cancel = std::pin::pin!(cancel);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(value) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(value));
        }
        if cancel.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}
