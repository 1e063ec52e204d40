//! `memory_store`: store or replace a note under a key.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::{DEFAULT_NAMESPACE, tags_column};
use crate::state::{Store, now, state_error};

/// Store a note under a key (replacing any there), with optional tags.
/// Notes persist across restarts; find them with `memory_search` or `memory_get`.
#[tool(name = "memory_store", title = "Remember", category = "memory", effect = "state", aliases = ["remember"], destructive = true, idempotent = true)]
pub struct MemoryStore {
    /// Key, unique within its namespace.
    #[schemars(length(min = 1, max = 256))]
    pub key: String,
    /// The note.
    #[schemars(length(max = 65536))]
    pub value: String,
    /// Namespace; default `default`.
    #[schemars(regex(pattern = "^[a-z0-9_-]{1,64}$"))]
    pub namespace: Option<String>,
    /// Single-word tags.
    #[serde(default)]
    #[schemars(length(max = 16), inner(regex(pattern = "^[^\\s]{1,64}$")))]
    pub tags: Vec<String>,
}

/// What was stored.
#[kyro_core::output]
#[derive(Debug)]
pub struct Stored {
    /// The namespace.
    pub namespace: String,
    /// The key.
    pub key: String,
    /// False when an earlier note under the key was replaced.
    pub created: bool,
    /// When, in milliseconds since the Unix epoch.
    pub updated_at: i64,
}

impl Execute for MemoryStore {
    type Output = Stored;

    async fn run(self, cx: &ToolContext) -> Result<Stored, ToolError> {
        let namespace = self.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        let at = now();
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let created = super::shared::store(&pg, &namespace, &self.key, &self.value, &self.tags, at).await?;
            return Ok(Stored {
                namespace,
                key: self.key,
                created,
                updated_at: at,
            });
        }
        let mut store = Store::open(cx)?;
        let created = store.write(|tx| {
            let existing: bool = tx
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM memories WHERE namespace = ?1 AND key = ?2)",
                    params![namespace, self.key],
                    |r| r.get(0),
                )
                .map_err(state_error)?;
            tx.execute(
                "INSERT INTO memories (namespace, key, value, tags, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, tags = excluded.tags, updated_at = excluded.updated_at",
                params![namespace, self.key, self.value, tags_column(&self.tags), at],
            )
            .map_err(state_error)?;
            Ok(!existing)
        })?;
        Ok(Stored {
            namespace,
            key: self.key,
            created,
            updated_at: at,
        })
    }
}
