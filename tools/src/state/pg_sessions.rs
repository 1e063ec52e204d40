//! Pre-2026 MCP sessions on the shared state: what a replica needs to take over a session
//! another replica opened (the client's `initialize` parameters, which rmcp replays) and
//! whose it is (the caller that opened it, the only one it answers to). A session not
//! used for a day is forgotten, as is one its client deleted or a replica closed.

use super::postgres::{PgState, failed};

/// How long a session nobody used is kept.
const SESSION_LIFETIME_MS: i64 = 86_400_000;

fn now() -> i64 {
    kyro_core::grants::now_ms() as i64
}

impl PgState {
    /// Records the `initialize` parameters (JSON) of session `id`.
    pub async fn session_store(&self, id: &str, initialize: &str) -> Result<(), String> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM kyro_sessions WHERE touched_at < $1",
                &[&(now() - SESSION_LIFETIME_MS)],
            )
            .await
            .map_err(failed)?;
        client
            .execute(
                "INSERT INTO kyro_sessions (id, initialize, touched_at) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET initialize = excluded.initialize, touched_at = excluded.touched_at",
                &[&id, &initialize, &now()],
            )
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// Records that session `id` is `caller`'s.
    pub async fn session_own(&self, id: &str, caller: &str) -> Result<(), String> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO kyro_sessions (id, caller, touched_at) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET caller = excluded.caller, touched_at = excluded.touched_at",
                &[&id, &caller, &now()],
            )
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// The caller and the `initialize` parameters of session `id`, when it is known and
    /// was used within a day.
    pub async fn session_load(&self, id: &str) -> Result<Option<(Option<String>, Option<String>)>, String> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "UPDATE kyro_sessions SET touched_at = $2 WHERE id = $1 AND touched_at >= $3 RETURNING caller, initialize",
                &[&id, &now(), &(now() - SESSION_LIFETIME_MS)],
            )
            .await
            .map_err(failed)?;
        Ok(row.map(|row| (row.get(0), row.get(1))))
    }

    /// Forgets session `id`.
    pub async fn session_delete(&self, id: &str) -> Result<(), String> {
        let client = self.client().await?;
        client
            .execute("DELETE FROM kyro_sessions WHERE id = $1", &[&id])
            .await
            .map_err(failed)?;
        Ok(())
    }
}
