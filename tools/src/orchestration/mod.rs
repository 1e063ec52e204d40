//! Orchestration: a task list on the state database, and batches and sub-agents that run
//! calls through the runtime's boundary under the caller's scope or a narrower one.

mod run_batch;
#[cfg(feature = "postgres")]
mod shared;
mod spawn_subagent;
#[cfg(feature = "state")]
mod task_create;
#[cfg(feature = "state")]
mod task_list;
#[cfg(feature = "state")]
mod task_update;
#[cfg(feature = "state")]
mod tasks;

pub use run_batch::{BatchCall, BatchMode, BatchResult, CallResult, RunBatch};
pub use spawn_subagent::{SpawnSubagent, SubagentResult, SubagentRoot};
#[cfg(feature = "state")]
pub use task_create::TaskCreate;
#[cfg(feature = "state")]
pub use task_list::{TaskList, Tasks};
#[cfg(feature = "state")]
pub use task_update::TaskUpdate;
#[cfg(feature = "state")]
pub use tasks::{Task, TaskStatus};
#[cfg(feature = "state")]
pub(crate) use tasks::{load_task, place, row_task};
