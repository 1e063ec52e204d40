//! Long calls as tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`): a call
//! of a tool that allows it (`#[tool(task = "optional")]`), from a client that declared
//! the extension, is answered with a task id the moment the boundary has authorized it
//! (approval comes first, as for any call); the work goes on, and the client polls
//! `tasks/get` for its status and result, or stops it with `tasks/cancel` (the work is told
//! to stop, as for a cancelled call). Each task is its caller's: another caller's id is
//! unknown. A result is kept [`KEPT`] after the work ends; at most [`MOST`] tasks ([`PER_CALLER`] a caller) are kept
//! at once, and a call past that runs as an ordinary call. On the state replicas share
//! (`--state`), a task is also kept there, so any replica answers `tasks/get` and takes
//! `tasks/cancel` for it (the running replica beats every second and reads the request).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use kyro_core::policy::Scope;
use kyro_core::{Call, Caller, Outcome, Runtime, TaskHook, TaskWaiting};
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
/// How often the replica running a task on the shared state says it still does.
#[cfg(feature = "postgres")]
const BEAT: Duration = Duration::from_secs(1);
/// A working task whose replica has not beaten for this long is reported failed.
#[cfg(feature = "postgres")]
const SILENT_MS: i64 = 30_000;

/// The state replicas share, when the server has one.
#[cfg(feature = "postgres")]
fn shared(runtime: &Runtime) -> Option<Arc<kyro_tools::state::PgState>> {
    runtime
        .workspace()
        .resource::<kyro_tools::state::PgState, ()>(|| Err(()))
        .ok()
}

/// A task as JSON, for the shared state.
#[cfg(feature = "postgres")]
fn json(task: &DetailedTask) -> String {
    serde_json::to_string(task).unwrap_or_default()
}

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
    /// What the task waits for before it runs, while it does.
    waiting: Option<TaskWaiting>,
    /// The tool's name.
    tool: String,
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
    /// How many tasks run here now (a server draining waits for them).
    #[cfg(feature = "http")]
    pub(crate) fn working(&self) -> usize {
        self.lock()
            .values()
            .filter(|e| e.ended.is_none() && !e.reserved)
            .count()
    }

    /// Tells every task running here to stop (a server whose drain is over).
    #[cfg(feature = "http")]
    pub(crate) fn stop_all(&self) {
        for entry in self.lock().values_mut() {
            if let Some(stop) = entry.stop.take() {
                let _ = stop.send(());
            }
        }
    }

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
                waiting: None,
                tool: String::new(),
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
        // Not the hook itself: its drop is what tells a call refused before it ran.
        let waiting = hook.waiting();
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
        task.status_message = Some(waiting.now().unwrap_or_else(|| format!("{tool} is running")));
        #[cfg(feature = "postgres")]
        let shared = shared(runtime);
        #[cfg(feature = "postgres")]
        let caller_name = caller.name().to_owned();
        #[cfg(feature = "postgres")]
        if let Some(pg) = &shared {
            let working = json(&DetailedTask::new(task.clone(), TaskPayload::Working));
            if let Err(e) = pg
                .task_put(&id, &caller_name, &working, false, KEPT.as_millis() as i64)
                .await
            {
                kyro_core::log::warn(&format!("task {id} is known to this replica only: {e}"));
            }
        }
        self.lock().insert(
            id.clone(),
            Entry {
                caller,
                task: task.clone(),
                payload: TaskPayload::Working,
                stop: Some(stop),
                ended: None,
                reserved: false,
                waiting: Some(waiting),
                tool: tool.clone(),
            },
        );
        held.id = None;
        let tasks = self.clone();
        tokio::spawn(async move {
            #[cfg(feature = "postgres")]
            let outcome = match &shared {
                Some(pg) => tasks.beating(&mut work, pg, &id).await,
                None => (&mut work).await,
            };
            #[cfg(not(feature = "postgres"))]
            let outcome = (&mut work).await;
            let outcome = outcome.unwrap_or_else(|e| panicked(e, &tool));
            let payload = match outcome {
                Outcome::Cancelled { .. } => TaskPayload::Cancelled,
                outcome => TaskPayload::Completed {
                    result: as_object(&result(outcome)),
                },
            };
            let ended = tasks.lock().get_mut(&id).map(|entry| {
                entry.task.status_message = None;
                entry.task.last_updated_at = current_timestamp();
                entry.payload = payload;
                entry.ended = Some(Instant::now());
                entry.stop = None;
                DetailedTask::new(entry.task.clone(), entry.payload.clone())
            });
            #[cfg(feature = "postgres")]
            if let (Some(pg), Some(ended)) = (&shared, ended) {
                let _ = pg
                    .task_put(&id, &caller_name, &json(&ended), true, KEPT.as_millis() as i64)
                    .await;
            }
            #[cfg(not(feature = "postgres"))]
            drop(ended);
        });
        Ran::Task(CreateTaskResult::new(task))
    }

    /// `tasks/get`: the task's status, and its result once it ended; from the shared state
    /// when another replica runs it.
    pub(super) async fn get(&self, id: &str, caller: &Caller, runtime: &Runtime) -> Result<DetailedTask, ErrorData> {
        if let Some(entry) = self.lock().get(id).filter(|e| &e.caller == caller && !e.reserved) {
            let mut task = entry.task.clone();
            // Waiting for a review, then running: the message says which.
            if entry.ended.is_none() && entry.stop.is_some() {
                let tool = &entry.tool;
                task.status_message = Some(
                    entry
                        .waiting
                        .as_ref()
                        .and_then(TaskWaiting::now)
                        .unwrap_or_else(|| format!("{tool} is running")),
                );
            }
            return Ok(DetailedTask::new(task, entry.payload.clone()));
        }
        #[cfg(feature = "postgres")]
        if let Some(pg) = shared(runtime) {
            let found = pg
                .task_get(id, caller.name(), KEPT.as_millis() as i64)
                .await
                .map_err(|e| ErrorData::internal_error(e, None))?;
            if let Some(stored) = found {
                let task: DetailedTask = serde_json::from_str(&stored.detailed)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                if stored.ended || stored.silent_ms < SILENT_MS {
                    return Ok(task);
                }
                let mut error = JsonObject::new();
                error.insert("code".into(), (-32603).into());
                error.insert(
                    "message".into(),
                    "the replica running this task stopped (no word from it for 30 seconds)".into(),
                );
                return Ok(DetailedTask::new(task.task, TaskPayload::Failed { error }));
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = runtime;
        Err(unknown(id))
    }

    /// `tasks/cancel`: tells the work to stop; the task ends `cancelled` once it has. A
    /// task another replica runs is asked to stop through the shared state.
    pub(super) async fn cancel(&self, id: &str, caller: &Caller, runtime: &Runtime) -> Result<(), ErrorData> {
        if self.stop(id, Some(caller)) {
            return Ok(());
        }
        #[cfg(feature = "postgres")]
        if let Some(pg) = shared(runtime) {
            let asked = pg
                .task_cancel(id, caller.name())
                .await
                .map_err(|e| ErrorData::internal_error(e, None))?;
            // An ended task is there to cancel too (nothing to do), as locally.
            if asked
                || pg
                    .task_get(id, caller.name(), KEPT.as_millis() as i64)
                    .await
                    .is_ok_and(|t| t.is_some())
            {
                return Ok(());
            }
        }
        #[cfg(not(feature = "postgres"))]
        let _ = runtime;
        Err(unknown(id))
    }

    /// Tells task `id`'s work to stop (when `caller`, only if it is theirs): whether this
    /// server holds such a task.
    fn stop(&self, id: &str, caller: Option<&Caller>) -> bool {
        let mut entries = self.lock();
        let Some(entry) = entries
            .get_mut(id)
            .filter(|e| caller.is_none_or(|c| &e.caller == c) && !e.reserved)
        else {
            return false;
        };
        if let Some(stop) = entry.stop.take() {
            let _ = stop.send(());
            entry.task.status_message = Some("stopping".into());
            entry.task.last_updated_at = current_timestamp();
        }
        true
    }

    /// Waits for a task's work, beating on the shared state meanwhile and stopping the work
    /// when a replica asked.
    #[cfg(feature = "postgres")]
    async fn beating(
        &self,
        work: &mut tokio::task::JoinHandle<Outcome>,
        pg: &kyro_tools::state::PgState,
        id: &str,
    ) -> Result<Outcome, tokio::task::JoinError> {
        loop {
            tokio::select! {
                done = &mut *work => return done,
                () = tokio::time::sleep(BEAT) => {
                    if pg.task_beat(id).await.unwrap_or(false) {
                        self.stop(id, None);
                    }
                }
            }
        }
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
