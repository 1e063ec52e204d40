//! Long calls as tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`): a call
//! of a tool that allows it (`#[tool(task = "optional")]`), from a client that declared
//! the extension, is answered with a task id the moment the boundary has authorized it
//! (approval comes first, as for any call); the work goes on, and the client polls
//! `tasks/get` for its status and result, or stops it with `tasks/cancel` (the work is told
//! to stop, as for a cancelled call). Each task is its caller's: another caller's id is
//! unknown. A result is kept [`KEPT`] after the work ends; at most [`MOST`] tasks ([`PER_CALLER`] a caller) are kept
//! at once, and a call past that runs as an ordinary call.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use kyro_core::policy::Scope;
use kyro_core::{Call, Caller, Outcome, Runtime, TaskHook};
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, CreateTaskResult, DetailedTask, JsonObject, Task, TaskPayload, TaskStatus};
use rmcp::task_manager::current_timestamp;
use tokio::sync::oneshot;

/// How long a task's result is kept once its work ended.
pub(super) const KEPT: Duration = Duration::from_secs(300);
/// Tasks kept at once, working or ended, at most.
pub(super) const MOST: usize = 64;
/// Tasks kept at once for one caller, at most.
pub(super) const PER_CALLER: usize = 16;
/// The polling interval suggested to clients.
const POLL_MS: u64 = 500;

/// The tasks of one server.
#[derive(Default)]
pub(crate) struct Tasks {
    entries: Mutex<HashMap<String, Entry>>,
}

struct Entry {
    caller: Caller,
    task: Task,
    payload: TaskPayload,
    /// Tells the work to stop (`tasks/cancel`); taken once used.
    stop: Option<oneshot::Sender<()>>,
    ended: Option<Instant>,
    /// A slot held for a call not yet authorized: no task to anyone yet.
    reserved: bool,
}

/// What a call that may become a task came to.
pub(super) enum Ran {
    /// It was answered as any call (refused, asked for approval, or no room for a task).
    Outcome(Outcome),
    /// It became a task, running now.
    Task(CreateTaskResult),
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task `{id}` (tasks last five minutes after they end)"), None)
}

impl Tasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|_, e| e.ended.is_none_or(|at| at.elapsed() < KEPT));
        entries
    }

    /// Holds a slot for a task of `caller`'s, when there is room (at most [`MOST`] in all,
    /// [`PER_CALLER`] a caller): its id.
    fn reserve(&self, caller: &Caller) -> Option<String> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).ok()?;
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let mut entries = self.lock();
        let mine = entries.values().filter(|e| &e.caller == caller).count();
        if entries.len() >= MOST || mine >= PER_CALLER {
            return None;
        }
        let now = current_timestamp();
        entries.insert(
            id.clone(),
            Entry {
                caller: caller.clone(),
                task: Task::new(id.clone(), TaskStatus::Working, now.clone(), now),
                payload: TaskPayload::Working,
                stop: None,
                ended: None,
                reserved: true,
            },
        );
        Some(id)
    }

    /// Runs `call` as a task when it passes authorization and there is room; otherwise as
    /// a call, to its outcome. `result` renders the outcome a finished task keeps.
    pub(super) async fn run(
        self: &Arc<Tasks>,
        (runtime, scope): (&Runtime, Scope),
        call: Call,
        cancel: impl Future<Output = ()> + Send,
        result: impl FnOnce(Outcome) -> CallToolResult + Send + 'static,
    ) -> Ran {
        let Some(id) = self.reserve(&call.caller) else {
            return Ran::Outcome(runtime.execute_until(call, &scope, None, cancel).await.outcome);
        };
        // Until the call is a task its slot is held, unseen; a refusal, or a request
        // dropped before, gives it back.
        let mut held = Held {
            tasks: self,
            id: Some(id.clone()),
        };
        let (hook, mut authorized) = TaskHook::new(&id);
        let (stop, stopped) = oneshot::channel::<()>();
        let mut stop_early = Some(stop);
        let (caller, tool) = (call.caller.clone(), call.tool.clone());
        let mut work = {
            let runtime = runtime.clone();
            let call = call.as_task(hook);
            tokio::spawn(async move {
                let stopped = async {
                    let _ = stopped.await;
                };
                runtime.execute_until(call, &scope, None, stopped).await.outcome
            })
        };
        // Until it is authorized, the call is the request's: its cancellation stops it.
        let mut cancel = std::pin::pin!(cancel);
        let authorized = std::future::poll_fn(|cx| {
            if let Poll::Ready(told) = Pin::new(&mut authorized).poll(cx) {
                return Poll::Ready(told.is_ok());
            }
            if cancel.as_mut().poll(cx).is_ready() {
                let _ = stop_early.take().map(|stop| stop.send(()));
                return Poll::Ready(false);
            }
            Poll::Pending
        })
        .await;
        let stop = match stop_early {
            Some(stop) if authorized => stop,
            _ => {
                return Ran::Outcome(work.await.unwrap_or_else(|e| panicked(e, &tool)));
            }
        };
        let now = current_timestamp();
        let mut task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(KEPT.as_millis() as u64)
            .with_poll_interval_ms(POLL_MS);
        task.status_message = Some(format!("{tool} is running"));
        self.lock().insert(
            id.clone(),
            Entry {
                caller,
                task: task.clone(),
                payload: TaskPayload::Working,
                stop: Some(stop),
                ended: None,
                reserved: false,
            },
        );
        held.id = None;
        let tasks = self.clone();
        tokio::spawn(async move {
            let outcome = (&mut work).await.unwrap_or_else(|e| panicked(e, &tool));
            let payload = match outcome {
                Outcome::Cancelled { .. } => TaskPayload::Cancelled,
                outcome => TaskPayload::Completed {
                    result: as_object(&result(outcome)),
                },
            };
            if let Some(entry) = tasks.lock().get_mut(&id) {
                entry.task.status_message = None;
                entry.task.last_updated_at = current_timestamp();
                entry.payload = payload;
                entry.ended = Some(Instant::now());
                entry.stop = None;
            }
        });
        Ran::Task(CreateTaskResult::new(task))
    }

    /// `tasks/get`: the task's status, and its result once it ended.
    pub(super) fn get(&self, id: &str, caller: &Caller) -> Result<DetailedTask, ErrorData> {
        let entries = self.lock();
        let entry = entries
            .get(id)
            .filter(|e| &e.caller == caller && !e.reserved)
            .ok_or_else(|| unknown(id))?;
        Ok(DetailedTask::new(entry.task.clone(), entry.payload.clone()))
    }

    /// `tasks/cancel`: tells the work to stop; the task ends `cancelled` once it has.
    pub(super) fn cancel(&self, id: &str, caller: &Caller) -> Result<(), ErrorData> {
        let mut entries = self.lock();
        let entry = entries
            .get_mut(id)
            .filter(|e| &e.caller == caller && !e.reserved)
            .ok_or_else(|| unknown(id))?;
        if let Some(stop) = entry.stop.take() {
            let _ = stop.send(());
            entry.task.status_message = Some("stopping".into());
            entry.task.last_updated_at = current_timestamp();
        }
        Ok(())
    }
}

/// A slot held for a call on its way to becoming a task; given back when dropped unused.
struct Held<'a> {
    tasks: &'a Tasks,
    id: Option<String>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.tasks.lock().remove(&id);
        }
    }
}

fn as_object(result: &CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// The outcome of work whose thread panicked (a bug in a tool's async code).
fn panicked(error: tokio::task::JoinError, tool: &str) -> Outcome {
    Outcome::ExecutionFailed {
        tool: tool.to_owned(),
        error: kyro_core::ToolError::custom("internal", format!("the call's work ended abnormally: {error}")),
    }
}
