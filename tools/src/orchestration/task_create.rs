//! `task_create`: add a task to the list.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::{Task, TaskStatus, load_task, place};
use crate::state::{Store, now, state_error};

/// Add a task to the workspace's task list, at the end or at `position`.
#[tool(
    name = "task_create",
    title = "Create task",
    category = "orchestration",
    effect = "state"
)]
pub struct TaskCreate {
    /// What to do.
    #[schemars(length(min = 1, max = 500))]
    pub title: String,
    /// Free-form notes.
    #[schemars(length(max = 10000))]
    pub notes: Option<String>,
    /// Place in the list, 1-based; default the end.
    #[schemars(range(min = 1))]
    pub position: Option<u32>,
}

impl Execute for TaskCreate {
    type Output = Task;

    async fn run(self, cx: &ToolContext) -> Result<Task, ToolError> {
        let at = now();
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let notes = self.notes.as_deref().unwrap_or_default();
            return super::shared::create(&pg, &self.title, notes, self.position, at).await;
        }
        let mut store = Store::open(cx)?;
        let id = store.write(|tx| {
            tx.execute(
                "INSERT INTO tasks (title, status, position, notes, created_at, updated_at)
                 VALUES (?1, ?2, (SELECT COALESCE(MAX(position), 0) + 1 FROM tasks), ?3, ?4, ?4)",
                params![
                    self.title,
                    TaskStatus::Pending.as_str(),
                    self.notes.clone().unwrap_or_default(),
                    at
                ],
            )
            .map_err(state_error)?;
            let id = tx.last_insert_rowid();
            if let Some(position) = self.position {
                place(tx, id, i64::from(position))?;
            }
            Ok(id)
        })?;
        load_task(&store.conn, id)
    }
}
