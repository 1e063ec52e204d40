//! Memory on the PostgreSQL state replicas share (`--state`): the same notes and answers as
//! on SQLite, searched with PostgreSQL's own text search (the `simple` configuration: words
//! lowercased, never stemmed, as SQLite's FTS5 tokenizer does).

use kyro_core::ToolError;

use super::{MemoryHit, tags_column, tags_from_column};
use crate::Failure;
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

/// The note under `key`: value, tags, created and updated times.
pub(super) async fn get(pg: &PgState, namespace: &str, key: &str) -> Result<super::Memory, ToolError> {
    let client = pg.client().await.map_err(pg_error)?;
    let row = client
        .query_opt(
            "SELECT value, tags, created_at, updated_at FROM kyro_memories WHERE namespace = $1 AND key = $2",
            &[&namespace, &key],
        )
        .await
        .map_err(pg_error)?
        .ok_or_else(|| Failure::NoSuchRecord {
            record: "memory".into(),
            key: format!("{namespace}/{key}"),
        })?;
    Ok(super::Memory {
        namespace: namespace.to_owned(),
        key: key.to_owned(),
        value: row.get(0),
        tags: tags_from_column(row.get(1)),
        created_at: row.get(2),
        updated_at: row.get(3),
    })
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

/// Notes holding every word of `query`, best first. The words are taken as plain words
/// (`plainto_tsquery`), never as query syntax; the rank is `ts_rank` negated, so that lower
/// is better as with SQLite's BM25.
pub(super) async fn search(
    pg: &PgState,
    query: &str,
    namespace: Option<&str>,
    limit: u32,
) -> Result<Vec<MemoryHit>, ToolError> {
    let client = pg.client().await.map_err(pg_error)?;
    let rows = client
        .query(
            "SELECT namespace, key, ts_headline('simple', value, q, 'StartSel=[, StopSel=], MaxWords=12, MinWords=4, ShortWord=0, FragmentDelimiter=…'),
                    tags, -ts_rank(search, q)::float8 AS rank
             FROM kyro_memories, plainto_tsquery('simple', $1) q
             WHERE search @@ q AND ($2::text IS NULL OR namespace = $2)
             ORDER BY rank, id LIMIT $3",
            &[&query, &namespace, &i64::from(limit)],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows
        .iter()
        .map(|row| MemoryHit {
            namespace: row.get(0),
            key: row.get(1),
            snippet: row.get(2),
            tags: tags_from_column(row.get(3)),
            rank: row.get(4),
        })
        .collect())
}
