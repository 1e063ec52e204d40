//! `memory_forget`: delete a note.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::DEFAULT_NAMESPACE;
use crate::state::{Store, state_error};

/// Forget the note under a key (a missing key is not an error).
#[tool(name = "memory_forget", title = "Forget", category = "memory", effect = "state", aliases = ["forget"], destructive = true, idempotent = true)]
pub struct MemoryForget {
    /// The key.
    #[schemars(length(min = 1, max = 256))]
    pub key: String,
    /// Namespace; default `default`.
    #[schemars(regex(pattern = "^[a-z0-9_-]{1,64}$"))]
    pub namespace: Option<String>,
}

/// Whether anything was forgotten.
#[kyro_core::output]
#[derive(Debug)]
pub struct Forgotten {
    /// True when a note was deleted.
    pub forgotten: bool,
}

impl Execute for MemoryForget {
    type Output = Forgotten;

    async fn run(self, cx: &ToolContext) -> Result<Forgotten, ToolError> {
        let namespace = self.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let forgotten = super::shared::forget(&pg, &namespace, &self.key).await?;
            return Ok(Forgotten { forgotten });
        }
        let mut store = Store::open(cx)?;
        let deleted = store.write(|tx| {
            tx.execute(
                "DELETE FROM memories WHERE namespace = ?1 AND key = ?2",
                params![namespace, self.key],
            )
            .map_err(state_error)
        })?;
        Ok(Forgotten { forgotten: deleted > 0 })
    }
}
