//! Memory on the PostgreSQL state replicas share (`--state`): the same notes and answers as
//! on SQLite, searched with PostgreSQL's own text search (the `simple` configuration: words
//! lowercased, never stemmed, as SQLite's FTS5 tokenizer does).

use kyro_core::ToolError;

use super::tags_column;
use crate::state::{PgState, pg_error};

/// Stores or replaces a note; whether it was new.
pub(super) async fn store(
    pg: &PgState,
    namespace: &str,
    key: &str,
    value: &str,
    tags: &[String],
    at: i64,
) -> Result<bool, ToolError> {
    let client = pg.client().await.map_err(pg_error)?;
    // One statement: a concurrent store of the same key updates instead of failing, and
    // `xmax = 0` tells a row this statement inserted from one it updated.
    let row = client
        .query_one(
            "INSERT INTO kyro_memories (namespace, key, value, tags, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
             ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, tags = excluded.tags, updated_at = excluded.updated_at
             RETURNING (xmax = 0)",
            &[&namespace, &key, &value, &tags_column(tags), &at],
        )
        .await
        .map_err(pg_error)?;
    Ok(row.get(0))
}

/// Deletes the note under `key`; whether there was one.
pub(super) async fn forget(pg: &PgState, namespace: &str, key: &str) -> Result<bool, ToolError> {
    let client = pg.client().await.map_err(pg_error)?;
    let deleted = client
        .execute(
            "DELETE FROM kyro_memories WHERE namespace = $1 AND key = $2",
            &[&namespace, &key],
        )
        .await
        .map_err(pg_error)?;
    Ok(deleted > 0)
}
