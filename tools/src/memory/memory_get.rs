//! `memory_get`: one note by key.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::{OptionalExtension, params};

use super::{DEFAULT_NAMESPACE, tags_from_column};
use crate::state::{Store, state_error};

/// Get the note stored under a key.
#[tool(name = "memory_get", title = "Recall", category = "memory", effect = "read", aliases = ["recall"], capabilities = ["state"])]
pub struct MemoryGet {
    /// The key.
    #[schemars(length(min = 1, max = 256))]
    pub key: String,
    /// Namespace; default `default`.
    #[schemars(regex(pattern = "^[a-z0-9_-]{1,64}$"))]
    pub namespace: Option<String>,
}

/// A stored note.
#[kyro_core::output]
#[derive(Debug)]
pub struct Memory {
    /// The namespace.
    pub namespace: String,
    /// The key.
    pub key: String,
    /// The note.
    pub value: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// First stored, milliseconds since the Unix epoch.
    pub created_at: i64,
    /// Last replaced, milliseconds since the Unix epoch.
    pub updated_at: i64,
}

impl Execute for MemoryGet {
    type Output = Memory;

    async fn run(self, cx: &ToolContext) -> Result<Memory, ToolError> {
        let namespace = self.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            return shared::get(&pg, &namespace, &self.key).await;
        }
        let store = Store::open(cx)?;
        store
            .conn
            .query_row(
                "SELECT value, tags, created_at, updated_at FROM memories WHERE namespace = ?1 AND key = ?2",
                params![namespace, self.key],
                |r| {
                    Ok(Memory {
                        namespace: namespace.clone(),
                        key: self.key.clone(),
                        value: r.get(0)?,
                        tags: tags_from_column(&r.get::<_, String>(1)?),
                        created_at: r.get(2)?,
                        updated_at: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(state_error)?
            .ok_or(
                Failure::NoSuchRecord {
                    record: "memory".into(),
                    key: format!("{namespace}/{}", self.key),
                }
                .into(),
            )
    }
}

/// On the shared state (`--state`).
#[cfg(feature = "postgres")]
mod shared {
    use kyro_core::ToolError;

    use super::Memory;
    use crate::Failure;
    use crate::memory::tags_from_column;
    use crate::state::{PgState, pg_error};

    /// The note under `key`: value, tags, created and updated times.
    pub(super) async fn get(pg: &PgState, namespace: &str, key: &str) -> Result<Memory, ToolError> {
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
        Ok(Memory {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: row.get(0),
            tags: tags_from_column(row.get(1)),
            created_at: row.get(2),
            updated_at: row.get(3),
        })
    }
}
