//! `task_list`: the task list in order.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::{Task, TaskStatus, row_task};
use crate::state::{Store, state_error};

/// List the workspace's tasks in order, optionally of one status.
#[tool(name = "task_list", title = "List tasks", category = "orchestration", effect = "read", capabilities = ["state"])]
pub struct TaskList {
    /// Only this status.
    pub status: Option<TaskStatus>,
}

/// The tasks.
#[kyro_core::output]
#[derive(Debug)]
pub struct Tasks {
    /// In list order.
    pub tasks: Vec<Task>,
}

impl Execute for TaskList {
    type Output = Tasks;

    async fn run(self, cx: &ToolContext) -> Result<Tasks, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let tasks = super::shared::list(&pg, self.status).await?;
            return Ok(Tasks { tasks });
        }
        let store = Store::open(cx)?;
        let mut statement = store
            .conn
            .prepare(
                "SELECT id, title, status, position, notes, created_at, updated_at FROM tasks
                 WHERE ?1 IS NULL OR status = ?1 ORDER BY position, id",
            )
            .map_err(state_error)?;
        let tasks = statement
            .query_map(params![self.status.map(TaskStatus::as_str)], row_task)
            .map_err(state_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(state_error)?;
        Ok(Tasks { tasks })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn create_order_update_and_list() {
        let ws = workspace();
        let a = ok(call(ws.path(), "task_create", json!({"title": "write | tests"})));
        let b = ok(call(
            ws.path(),
            "task_create",
            json!({"title": "ship", "notes": "café"}),
        ));
        let c = ok(call(ws.path(), "task_create", json!({"title": "plan", "position": 1})));
        assert_eq!((a["position"].clone(), c["position"].clone()), (json!(1), json!(1)));
        let listed = ok(call(ws.path(), "task_list", json!({})));
        let titles: Vec<&str> = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["title"].as_str().unwrap())
            .collect();
        assert_eq!(titles, ["plan", "write | tests", "ship"]);
        let updated = ok(call(
            ws.path(),
            "task_update",
            json!({"id": b["id"], "status": "in_progress", "position": 1}),
        ));
        assert_eq!(
            (updated["status"].clone(), updated["notes"].clone()),
            (json!("in_progress"), json!("café"))
        );
        let doing = ok(call(ws.path(), "task_list", json!({"status": "in_progress"})));
        assert_eq!(doing["tasks"].as_array().unwrap().len(), 1);
        assert_eq!(
            failed(call(ws.path(), "task_update", json!({"id": 99, "status": "completed"}))),
            Failure::NoSuchRecord {
                record: "task".into(),
                key: "99".into()
            }
            .into()
        );
        assert!(matches!(
            call(ws.path(), "task_update", json!({"id": 1, "status": "done"})),
            kyro_core::Outcome::InvalidArguments { .. }
        ));
    }
}
