//! MCP tasks (the tasks extension) on the shared state: the replica running a task keeps
//! its status and, once it ends, its result here, and beats every second while it works;
//! any replica answers `tasks/get` from here, and `tasks/cancel` leaves a request the
//! running replica reads on its next beat. Ended tasks are forgotten after the time the
//! server keeps them.

use super::postgres::{PgState, failed};

fn now() -> i64 {
    kyro_core::grants::now_ms() as i64
}

/// A task as the store holds it.
#[derive(Debug, Clone)]
pub struct StoredTask {
    /// The task with its payload, as `tasks/get` answers it (JSON).
    pub detailed: String,
    /// Whether it ended.
    pub ended: bool,
    /// Milliseconds since its replica last beat.
    pub silent_ms: i64,
}

impl PgState {
    /// Records task `id` of `caller` (`detailed`: its JSON), working or `ended`; drops the
    /// tasks that ended more than `kept_ms` ago, and those whose replica has been silent
    /// that long (it died with them working: reported failed meanwhile).
    pub async fn task_put(
        &self,
        id: &str,
        caller: &str,
        detailed: &str,
        ended: bool,
        kept_ms: i64,
    ) -> Result<(), String> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM kyro_mcp_tasks WHERE ended_at < $1 OR (ended_at IS NULL AND heartbeat_at < $1)",
                &[&(now() - kept_ms)],
            )
            .await
            .map_err(failed)?;
        let ended_at = ended.then(now);
        client
            .execute(
                "INSERT INTO kyro_mcp_tasks (id, caller, detailed, ended_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (id) DO UPDATE SET detailed = excluded.detailed, ended_at = excluded.ended_at,
                 heartbeat_at = excluded.heartbeat_at WHERE kyro_mcp_tasks.caller = excluded.caller",
                &[&id, &caller, &detailed, &ended_at, &now()],
            )
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// Task `id` if it is `caller`'s and was not forgotten.
    pub async fn task_get(&self, id: &str, caller: &str, kept_ms: i64) -> Result<Option<StoredTask>, String> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT detailed, ended_at IS NOT NULL, $3 - heartbeat_at FROM kyro_mcp_tasks
                 WHERE id = $1 AND caller = $2 AND (ended_at IS NULL OR ended_at >= $3 - $4)",
                &[&id, &caller, &now(), &kept_ms],
            )
            .await
            .map_err(failed)?;
        Ok(row.map(|row| StoredTask {
            detailed: row.get(0),
            ended: row.get(1),
            silent_ms: row.get(2),
        }))
    }

    /// Asks the replica running task `id` of `caller` to stop it; whether there is such a
    /// task still working.
    pub async fn task_cancel(&self, id: &str, caller: &str) -> Result<bool, String> {
        let client = self.client().await?;
        let asked = client
            .execute(
                "UPDATE kyro_mcp_tasks SET cancel_requested = true WHERE id = $1 AND caller = $2 AND ended_at IS NULL",
                &[&id, &caller],
            )
            .await
            .map_err(failed)?;
        Ok(asked == 1)
    }

    /// The running replica's beat for task `id`: whether a stop was asked for.
    pub async fn task_beat(&self, id: &str) -> Result<bool, String> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "UPDATE kyro_mcp_tasks SET heartbeat_at = $2 WHERE id = $1 RETURNING cancel_requested",
                &[&id, &now()],
            )
            .await
            .map_err(failed)?;
        Ok(row.is_some_and(|row| row.get(0)))
    }
}
