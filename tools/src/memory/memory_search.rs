//! `memory_search`: full-text search over notes, ranked, with snippets.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Serialize;

use super::tags_from_column;
use crate::state::{Store, state_error};

const DEFAULT_LIMIT: u32 = 10;

/// Full-text search of notes (keys, notes, tags), best first; every word must appear, any order or case.
/// Returns keys, snippets (matches in `[brackets]`), tags and rank.
#[tool(name = "memory_search", title = "Search memory", category = "memory", effect = "read", capabilities = ["state"])]
pub struct MemorySearch {
    /// Words to look for.
    #[schemars(length(min = 1, max = 512))]
    pub query: String,
    /// Only this namespace; default all.
    #[schemars(regex(pattern = "^[a-z0-9_-]{1,64}$"))]
    pub namespace: Option<String>,
    /// Most notes; default 10.
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// Matching notes.
#[kyro_core::output]
#[derive(Debug)]
pub struct MemorySearchResults {
    /// Best first.
    pub results: Vec<MemoryHit>,
}

/// One matching note.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryHit {
    /// The namespace.
    pub namespace: String,
    /// The key.
    pub key: String,
    /// An excerpt of the note with the matches in `[brackets]`.
    pub snippet: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Relevance, lower is better (BM25 on the embedded store, text-search rank negated on
    /// PostgreSQL).
    pub rank: f64,
}

/// Each word as an FTS5 string literal, so the user's text is never FTS query syntax.
fn fts_query(query: &str) -> String {
    query
        .split_whitespace()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Execute for MemorySearch {
    type Output = MemorySearchResults;

    async fn run(self, cx: &ToolContext) -> Result<MemorySearchResults, ToolError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let results = shared::search(&pg, &self.query, self.namespace.as_deref(), limit).await?;
            return Ok(MemorySearchResults { results });
        }
        let store = Store::open(cx)?;
        let mut statement = store
            .conn
            .prepare(
                "SELECT m.namespace, m.key, snippet(memories_fts, 1, '[', ']', '…', 12), m.tags, bm25(memories_fts)
                 FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
                 WHERE memories_fts MATCH ?1 AND (?2 IS NULL OR m.namespace = ?2)
                 ORDER BY bm25(memories_fts) LIMIT ?3",
            )
            .map_err(state_error)?;
        let results = statement
            .query_map(params![fts_query(&self.query), self.namespace, limit], |r| {
                Ok(MemoryHit {
                    namespace: r.get(0)?,
                    key: r.get(1)?,
                    snippet: r.get(2)?,
                    tags: tags_from_column(&r.get::<_, String>(3)?),
                    rank: r.get(4)?,
                })
            })
            .map_err(state_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(state_error)?;
        Ok(MemorySearchResults { results })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn store_get_search_and_forget() {
        let ws = workspace();
        let first = ok(call(
            ws.path(),
            "memory_store",
            json!({"key": "db", "value": "Postgres 15 | port 5432, café", "tags": ["infra", "db"]}),
        ));
        assert_eq!(first["created"], true);
        ok(call(
            ws.path(),
            "remember",
            json!({"key": "ui", "value": "React with Vite", "namespace": "web"}),
        ));
        let again = ok(call(
            ws.path(),
            "memory_store",
            json!({"key": "db", "value": "Postgres 16 | port 5433, café", "tags": ["infra"]}),
        ));
        assert_eq!(again["created"], false);
        let got = ok(call(ws.path(), "memory_get", json!({"key": "db"})));
        assert_eq!(got["value"], "Postgres 16 | port 5433, café");
        assert_eq!(got["tags"], json!(["infra"]));
        let hits = ok(call(ws.path(), "memory_search", json!({"query": "POSTGRES café"})));
        assert_eq!(hits["results"].as_array().unwrap().len(), 1);
        assert!(hits["results"][0]["snippet"].as_str().unwrap().contains("[Postgres]"));
        let tagged = ok(call(ws.path(), "memory_search", json!({"query": "infra"})));
        assert_eq!(tagged["results"][0]["key"], "db");
        let scoped = ok(call(
            ws.path(),
            "memory_search",
            json!({"query": "vite", "namespace": "default"}),
        ));
        assert_eq!(scoped["results"], json!([]));
        assert_eq!(ok(call(ws.path(), "forget", json!({"key": "db"})))["forgotten"], true);
        assert_eq!(
            ok(call(ws.path(), "memory_forget", json!({"key": "db"})))["forgotten"],
            false
        );
        assert_eq!(
            failed(call(ws.path(), "memory_get", json!({"key": "db"}))),
            Failure::NoSuchRecord {
                record: "memory".into(),
                key: "default/db".into()
            }
            .into()
        );
    }

    #[test]
    fn query_syntax_in_the_text_is_searched_literally() {
        let ws = workspace();
        ok(call(
            ws.path(),
            "memory_store",
            json!({"key": "q", "value": "a OR b NEAR(c) \"quoted\" *star"}),
        ));
        for query in ["OR", "NEAR(c)", "\"quoted\"", "*star", "a OR"] {
            let hits = ok(call(ws.path(), "memory_search", json!({"query": query})));
            assert_eq!(hits["results"].as_array().unwrap().len(), 1, "{query}");
        }
    }
}

/// On the shared state (`--state`).
#[cfg(feature = "postgres")]
mod shared {
    use kyro_core::ToolError;

    use super::MemoryHit;
    use crate::memory::tags_from_column;
    use crate::state::{PgState, pg_error};

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
}
