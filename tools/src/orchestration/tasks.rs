//! The task list's rows on the state database.

use crate::Failure;
use kyro_core::ToolError;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::state::state_error;

/// `pending`, `in_progress`, `completed` or `cancelled`.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Completed,
    /// Given up.
    Cancelled,
}

impl TaskStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(text: &str) -> TaskStatus {
        match text {
            "in_progress" => TaskStatus::InProgress,
            "completed" => TaskStatus::Completed,
            "cancelled" => TaskStatus::Cancelled,
            _ => TaskStatus::Pending,
        }
    }
}

/// A task.
#[kyro_core::output]
#[derive(Debug, Clone)]
pub struct Task {
    /// Its id.
    pub id: i64,
    /// What to do.
    pub title: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Its place in the list, 1-based.
    pub position: i64,
    /// Free-form notes.
    pub notes: String,
    /// Created, milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Last changed, milliseconds since the Unix epoch.
    pub updated_at: i64,
}

pub(crate) fn load_task(conn: &Connection, id: i64) -> Result<Task, ToolError> {
    conn.query_row(
        "SELECT id, title, status, position, notes, created_at, updated_at FROM tasks WHERE id = ?1",
        params![id],
        row_task,
    )
    .optional()
    .map_err(state_error)?
    .ok_or(
        Failure::NoSuchRecord {
            record: "task".into(),
            key: id.to_string(),
        }
        .into(),
    )
}

pub(crate) fn row_task(r: &rusqlite::Row) -> rusqlite::Result<Task> {
    Ok(Task {
        id: r.get(0)?,
        title: r.get(1)?,
        status: TaskStatus::parse(&r.get::<_, String>(2)?),
        position: r.get(3)?,
        notes: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

/// Moves a task to `position` (clamped to the list), shifting the others.
pub(crate) fn place(tx: &rusqlite::Transaction, id: i64, position: i64) -> Result<(), ToolError> {
    let count: i64 = tx
        .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
        .map_err(state_error)?;
    let target = position.clamp(1, count.max(1));
    let mut ids: Vec<i64> = {
        let mut statement = tx
            .prepare("SELECT id FROM tasks WHERE id != ?1 ORDER BY position, id")
            .map_err(state_error)?;
        statement
            .query_map(params![id], |r| r.get(0))
            .map_err(state_error)?
            .collect::<Result<_, _>>()
            .map_err(state_error)?
    };
    ids.insert((target - 1) as usize, id);
    for (i, each) in ids.iter().enumerate() {
        tx.execute(
            "UPDATE tasks SET position = ?1 WHERE id = ?2",
            params![i as i64 + 1, each],
        )
        .map_err(state_error)?;
    }
    Ok(())
}
