//! `task_update`: change a task.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::{Task, TaskStatus, load_task, place};
use crate::state::{Store, now, state_error};

/// Change a task's status, title, notes or place; only fields given change.
#[tool(
    name = "task_update",
    title = "Update task",
    category = "orchestration",
    effect = "state",
    destructive = true,
    idempotent = true
)]
pub struct TaskUpdate {
    /// Task id.
    #[schemars(range(min = 1))]
    pub id: i64,
    /// New status.
    pub status: Option<TaskStatus>,
    /// New title.
    #[schemars(length(min = 1, max = 500))]
    pub title: Option<String>,
    /// New notes (replacing the old).
    #[schemars(length(max = 10000))]
    pub notes: Option<String>,
    /// New place, 1-based.
    #[schemars(range(min = 1))]
    pub position: Option<u32>,
}

impl Execute for TaskUpdate {
    type Output = Task;

    async fn run(self, cx: &ToolContext) -> Result<Task, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let change = super::shared::Change {
                status: self.status,
                title: self.title.as_deref(),
                notes: self.notes.as_deref(),
                position: self.position,
            };
            return super::shared::update(&pg, self.id, change, now()).await;
        }
        let mut store = Store::open(cx)?;
        store.write(|tx| {
            load_task(tx, self.id)?;
            tx.execute(
                "UPDATE tasks SET status = COALESCE(?2, status), title = COALESCE(?3, title),
                 notes = COALESCE(?4, notes), updated_at = ?5 WHERE id = ?1",
                params![
                    self.id,
                    self.status.map(TaskStatus::as_str),
                    self.title,
                    self.notes,
                    now()
                ],
            )
            .map_err(state_error)?;
            if let Some(position) = self.position {
                place(tx, self.id, i64::from(position))?;
            }
            Ok(())
        })?;
        load_task(&store.conn, self.id)
    }
}
