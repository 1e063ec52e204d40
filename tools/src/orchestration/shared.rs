//! The task list on the PostgreSQL state replicas share (`--state`). Changes to the list
//! take one advisory lock for their transaction, so positions stay a gapless 1..n however
//! many replicas create and move tasks at once.

use deadpool_postgres::Transaction;
use kyro_core::ToolError;

use super::{Task, TaskStatus};
use crate::Failure;
use crate::state::{PgState, pg_error};

/// The advisory lock changes to the task list are made under.
const TASK_LIST_LOCK: i64 = 0x6b79_726f_7461_736b;

const COLUMNS: &str = "id, title, status, position, notes, created_at, updated_at";

fn task(row: &tokio_postgres::Row) -> Task {
    Task {
        id: row.get(0),
        title: row.get(1),
        status: TaskStatus::parse(row.get(2)),
        position: row.get(3),
        notes: row.get(4),
        created_at: row.get(5),
        updated_at: row.get(6),
    }
}

async fn load(tx: &Transaction<'_>, id: i64) -> Result<Task, ToolError> {
    let row = tx
        .query_opt(&format!("SELECT {COLUMNS} FROM kyro_tasks WHERE id = $1"), &[&id])
        .await
        .map_err(pg_error)?
        .ok_or_else(|| Failure::NoSuchRecord {
            record: "task".into(),
            key: id.to_string(),
        })?;
    Ok(task(&row))
}

/// Moves task `id` to `position` (clamped to the list), shifting the others.
async fn place(tx: &Transaction<'_>, id: i64, position: i64) -> Result<(), ToolError> {
    let count: i64 = tx
        .query_one("SELECT count(*) FROM kyro_tasks", &[])
        .await
        .map_err(pg_error)?
        .get(0);
    let target = position.clamp(1, count.max(1));
    let mut ids: Vec<i64> = tx
        .query("SELECT id FROM kyro_tasks WHERE id <> $1 ORDER BY position, id", &[&id])
        .await
        .map_err(pg_error)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    ids.insert((target - 1) as usize, id);
    let positions: Vec<i64> = (1..=ids.len() as i64).collect();
    tx.execute(
        "UPDATE kyro_tasks t SET position = u.position FROM unnest($1::bigint[], $2::bigint[]) AS u (id, position)
         WHERE t.id = u.id AND t.position <> u.position",
        &[&ids, &positions],
    )
    .await
    .map_err(pg_error)?;
    Ok(())
}

async fn locked(client: &mut deadpool_postgres::Object) -> Result<Transaction<'_>, ToolError> {
    let tx = client.transaction().await.map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TASK_LIST_LOCK])
        .await
        .map_err(pg_error)?;
    Ok(tx)
}

/// Adds a task at the end, or at `position`.
pub(super) async fn create(
    pg: &PgState,
    title: &str,
    notes: &str,
    position: Option<u32>,
    at: i64,
) -> Result<Task, ToolError> {
    let mut client = pg.client().await.map_err(pg_error)?;
    let tx = locked(&mut client).await?;
    let id: i64 = tx
        .query_one(
            "INSERT INTO kyro_tasks (title, status, position, notes, created_at, updated_at)
             VALUES ($1, $2, (SELECT coalesce(max(position), 0) + 1 FROM kyro_tasks), $3, $4, $4) RETURNING id",
            &[&title, &TaskStatus::Pending.as_str(), &notes, &at],
        )
        .await
        .map_err(pg_error)?
        .get(0);
    if let Some(position) = position {
        place(&tx, id, i64::from(position)).await?;
    }
    let created = load(&tx, id).await?;
    tx.commit().await.map_err(pg_error)?;
    Ok(created)
}

/// What `task_update` changes; `None` leaves a field as it is.
pub(super) struct Change<'a> {
    pub status: Option<TaskStatus>,
    pub title: Option<&'a str>,
    pub notes: Option<&'a str>,
    pub position: Option<u32>,
}

/// Changes task `id`.
pub(super) async fn update(pg: &PgState, id: i64, change: Change<'_>, at: i64) -> Result<Task, ToolError> {
    let mut client = pg.client().await.map_err(pg_error)?;
    let tx = locked(&mut client).await?;
    load(&tx, id).await?;
    tx.execute(
        "UPDATE kyro_tasks SET status = coalesce($2, status), title = coalesce($3, title),
         notes = coalesce($4, notes), updated_at = $5 WHERE id = $1",
        &[
            &id,
            &change.status.map(TaskStatus::as_str),
            &change.title,
            &change.notes,
            &at,
        ],
    )
    .await
    .map_err(pg_error)?;
    if let Some(position) = change.position {
        place(&tx, id, i64::from(position)).await?;
    }
    let updated = load(&tx, id).await?;
    tx.commit().await.map_err(pg_error)?;
    Ok(updated)
}

/// The list in order, or only the tasks of one status.
pub(super) async fn list(pg: &PgState, status: Option<TaskStatus>) -> Result<Vec<Task>, ToolError> {
    let client = pg.client().await.map_err(pg_error)?;
    let rows = client
        .query(
            &format!("SELECT {COLUMNS} FROM kyro_tasks WHERE $1::text IS NULL OR status = $1 ORDER BY position, id"),
            &[&status.map(TaskStatus::as_str)],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows.iter().map(task).collect())
}
