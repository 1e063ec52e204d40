//! Grants and spent approval nonces in the workspace's state database, shared by every
//! kyro process serving the workspace.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, Grant, MemoryApprovalStore, NewGrant, now_ms};
use rusqlite::{OptionalExtension, params};

use super::store::Store;

/// The workspace's grants and spent approvals, in `.kyro/state.db`, opened (and made)
/// on first use.
pub struct SqliteApprovalStore {
    root: PathBuf,
    store: Mutex<Option<Store>>,
}

impl std::fmt::Debug for SqliteApprovalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteApprovalStore")
    }
}

fn failed(e: impl std::fmt::Display) -> String {
    format!("the state database: {e}")
}

impl SqliteApprovalStore {
    /// The state database of the workspace at `root` (its `.kyro/state.db`), opened when
    /// first needed: a server that never asks makes no database.
    pub fn in_workspace(root: &Path) -> SqliteApprovalStore {
        SqliteApprovalStore {
            root: root.to_owned(),
            store: Mutex::new(None),
        }
    }

    fn with<T>(&self, work: impl FnOnce(&rusqlite::Transaction) -> rusqlite::Result<T>) -> Result<T, String> {
        let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if store.is_none() {
            let dir = kyro_core::receipt::state_dir(&self.root).map_err(failed)?;
            *store = Some(Store::open_at(&dir).map_err(failed)?);
        }
        let Some(store) = store.as_mut() else {
            return Err(failed("not open"));
        };
        store.write(|tx| work(tx).map_err(super::state_error)).map_err(failed)
    }
}

fn grant_of(row: &rusqlite::Row) -> rusqlite::Result<(i64, String, String, Option<String>, i64, i64)> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

fn grant(
    (id, caller, tool, arguments, created, expires): (i64, String, String, Option<String>, i64, i64),
) -> Result<Grant, String> {
    Ok(Grant {
        id: id.to_string(),
        caller: Caller::named(&caller)?,
        tool,
        arguments: arguments
            .map(|a| serde_json::from_str(&a).map_err(failed))
            .transpose()?,
        created_at_ms: created as u64,
        expires_at_ms: expires as u64,
    })
}

impl ApprovalStore for SqliteApprovalStore {
    fn spend_nonce(&self, nonce: &str, until_ms: u64) -> Result<bool, String> {
        self.with(|tx| {
            tx.execute(
                "DELETE FROM spent_nonces WHERE until_ms <= ?1",
                params![now_ms() as i64],
            )?;
            let added = tx.execute(
                "INSERT OR IGNORE INTO spent_nonces (nonce, until_ms) VALUES (?1, ?2)",
                params![nonce, until_ms as i64],
            )?;
            Ok(added == 1)
        })
    }

    fn add_grant(&self, new: NewGrant) -> Result<Grant, String> {
        let arguments = new
            .arguments
            .as_ref()
            .map(|a| serde_json::to_string(a).map_err(failed))
            .transpose()?;
        let now = now_ms() as i64;
        let row = self.with(|tx| {
            // Expired grants go; a caller holds at most MOST_GRANTS in force.
            tx.execute("DELETE FROM grants WHERE expires_at <= ?1", params![now])?;
            let held: i64 = tx.query_row(
                "SELECT count(*) FROM grants WHERE caller = ?1",
                params![new.caller.name()],
                |r| r.get(0),
            )?;
            if held >= MemoryApprovalStore::MOST_GRANTS as i64 {
                return Ok(None);
            }
            tx.execute(
                "INSERT INTO grants (caller, tool, arguments, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![new.caller.name(), new.tool, arguments, now, new.expires_at_ms as i64],
            )?;
            let id = tx.last_insert_rowid();
            tx.query_row(
                "SELECT id, caller, tool, arguments, created_at, expires_at FROM grants WHERE id = ?1",
                params![id],
                grant_of,
            )
            .map(Some)
        })?;
        match row {
            Some(row) => grant(row),
            None => Err(format!(
                "{} holds {} grants in force already; revoke some first",
                new.caller,
                MemoryApprovalStore::MOST_GRANTS
            )),
        }
    }

    fn grants(&self, caller: Option<&Caller>, now_ms: u64) -> Result<Vec<Grant>, String> {
        let rows = self.with(|tx| {
            let mut statement = tx.prepare(
                "SELECT id, caller, tool, arguments, created_at, expires_at FROM grants
                 WHERE expires_at > ?1 AND (?2 IS NULL OR caller = ?2) ORDER BY id",
            )?;
            let rows = statement.query_map(params![now_ms as i64, caller.map(Caller::name)], grant_of)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        // A row that does not read back (edited by hand) is left out, not the whole list.
        Ok(rows.into_iter().filter_map(|row| grant(row).ok()).collect())
    }

    fn revoke_grant(&self, id: &str) -> Result<bool, String> {
        let Ok(id) = id.parse::<i64>() else {
            return Ok(false);
        };
        self.with(|tx| {
            let gone = tx
                .query_row("DELETE FROM grants WHERE id = ?1 RETURNING id", params![id], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()?;
            Ok(gone.is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::SqliteApprovalStore;
    use kyro_core::Caller;
    use kyro_core::grants::{ApprovalStore, NewGrant, now_ms};
    use serde_json::json;

    #[test]
    fn two_processes_sharing_the_database_spend_a_nonce_once_and_see_one_grant_list() {
        let dir = tempfile::tempdir().unwrap();
        let one = SqliteApprovalStore::in_workspace(dir.path());
        let two = SqliteApprovalStore::in_workspace(dir.path());
        assert!(one.grants(None, now_ms()).unwrap().is_empty());
        assert!(dir.path().join(".kyro/state.db").is_file(), "made on first use");
        let later = now_ms() + 60_000;
        assert_eq!(one.spend_nonce("n1", later), Ok(true));
        assert_eq!(two.spend_nonce("n1", later), Ok(false), "spent by the other");
        // A nonce whose state has expired is forgotten.
        assert_eq!(one.spend_nonce("old", now_ms() - 1), Ok(true));
        assert_eq!(two.spend_nonce("n2", later), Ok(true));
        assert_eq!(
            one.spend_nonce("old", later),
            Ok(true),
            "the expired record was dropped"
        );

        let alice = Caller::named("alice").unwrap();
        let given = one
            .add_grant(NewGrant {
                caller: alice.clone(),
                tool: "run_command".into(),
                arguments: Some(json!({"argv": ["cargo", "test"]}).as_object().unwrap().clone()),
                expires_at_ms: later,
            })
            .unwrap();
        assert_eq!(two.grants(Some(&alice), now_ms()).unwrap(), vec![given.clone()]);
        assert!(two.grants(Some(&Caller::local()), now_ms()).unwrap().is_empty());
        assert!(two.grants(None, later).unwrap().is_empty(), "expired at its time");
        assert_eq!(two.revoke_grant(&given.id), Ok(true));
        assert_eq!(one.revoke_grant(&given.id), Ok(false));
        assert_eq!(one.revoke_grant("not-a-number"), Ok(false));
        assert!(one.grants(None, now_ms()).unwrap().is_empty());
    }
}
