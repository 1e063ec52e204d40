//! Where an executor runs: off the thread that serves requests, and stoppable.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::registry::RegisteredTool;

/// Runs the executor on tokio's blocking pool, so that an executor doing blocking work
/// (std I/O, a sync HTTP client, `std::thread::sleep`, a child process waited for) never
/// stalls the thread serving requests, whatever runtime the server runs on. Async
/// executors are driven there too (the I/O and timers stay the server's runtime's).
/// Dropping the returned future (the time limit or a cancellation) tells the executor to
/// stop: it is dropped at its next await point; blocking code between two await points
/// runs to that point, on the pool, without holding up anyone.
pub(crate) async fn run_off_thread(
    tool: Arc<RegisteredTool>,
    arguments: Value,
    cx: ToolContext,
) -> Result<Value, ToolError> {
    let handle = tokio::runtime::Handle::current();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let work = tokio::task::spawn_blocking(move || {
        handle.block_on(async move {
            let stopped = async {
                // Resolves when the caller's side is dropped.
                let _ = stopped.await;
            };
            first_of(tool.executor().run(arguments, &cx), stopped).await
        })
    });
    let _stop = stop;
    match work.await {
        Ok(Some(result)) => result,
        Ok(None) => Err(ToolError::Output {
            message: "the executor was stopped".into(),
        }),
        Err(join) => Err(ToolError::Output {
            message: format!("the executor panicked: {join}"),
        }),
    }
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
