//! Grants and spent approval nonces of a workspace, shared by every kyro process serving
//! it: a database in the user's own state directory ([`kyro_core::authority`]), never in
//! the workspace tree, whose `.kyro/` a cloned repository could have brought.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, Grant, MemoryApprovalStore, NewGrant, now_ms};
use kyro_core::review::{DecideError, Decided, NewReview, Review};
use rusqlite::{OptionalExtension, params};

use super::reviews;
use super::store::Store;

/// The workspace's grants and spent approvals, in `authority.db` of its directory in the
/// user's state directory, opened (and made) on first use.
pub struct SqliteApprovalStore {
    root: PathBuf,
    /// The state home (default: [`kyro_core::authority::state_home`]).
    home: Option<PathBuf>,
    store: Mutex<Option<Store>>,
}

impl std::fmt::Debug for SqliteApprovalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteApprovalStore")
    }
}

/// The database's file in the workspace's directory of the state home.
const DATABASE: &str = "authority.db";

fn failed(e: impl std::fmt::Display) -> String {
    format!("the state database: {e}")
}

impl SqliteApprovalStore {
    /// The grants of the workspace at `root` (in the user's state directory, never the
    /// workspace's `.kyro/`), opened when first needed: a server that never asks makes no
    /// database.
    pub fn in_workspace(root: &Path) -> SqliteApprovalStore {
        SqliteApprovalStore {
            root: root.to_owned(),
            home: None,
            store: Mutex::new(None),
        }
    }

    /// Where the workspace at `root` keeps its database, made or not: nothing is made to
    /// find it (a reader tells a workspace that holds nothing yet from one never served).
    pub fn database_of(root: &Path) -> std::io::Result<PathBuf> {
        Ok(kyro_core::authority::authority_dir_path(root)?.join(DATABASE))
    }

    /// The grants of the workspace at `root` beneath the state home `home` instead of the
    /// user's (`KYRO_STATE_HOME`, `XDG_STATE_HOME`, `~/.local/state/kyro`).
    pub fn with_state_home(root: &Path, home: &Path) -> SqliteApprovalStore {
        SqliteApprovalStore {
            home: Some(home.to_owned()),
            ..SqliteApprovalStore::in_workspace(root)
        }
    }

    fn with<T>(&self, work: impl FnOnce(&rusqlite::Transaction) -> rusqlite::Result<T>) -> Result<T, String> {
        let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        if store.is_none() {
            let dir = match &self.home {
                Some(home) => kyro_core::authority::authority_dir_in(home, &self.root),
                None => kyro_core::authority::authority_dir(&self.root),
            }
            .map_err(failed)?;
            let mut opened = Store::open_file(&dir.join(DATABASE), AUTHORITY).map_err(failed)?;
            bind(&mut opened, &self.root).map_err(failed)?;
            *store = Some(opened);
        }
        let Some(store) = store.as_mut() else {
            return Err(failed("not open"));
        };
        store.write(|tx| work(tx).map_err(super::state_error)).map_err(failed)
    }
}

/// Binds the database to the workspace at `root` on first use, and refuses one bound to
/// another: a grant holds only in the workspace it was given for, even when the file is
/// copied into another workspace's directory. A workspace directory made anew at the same
/// path (deleted, and another repository cloned there) is another workspace too: its
/// grants and reviews are forgotten.
fn bind(store: &mut Store, root: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let workspace = root.canonicalize().map_err(failed)?;
    let meta = workspace.metadata().map_err(failed)?;
    // The inode with its birth time: a new directory may reuse a deleted one's inode.
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let identity = format!("{}:{}:{born}", meta.dev(), meta.ino());
    let workspace = workspace.to_string_lossy();
    let held = store
        .write(|tx| {
            let held: Option<(String, String)> = tx
                .query_row("SELECT workspace, identity FROM bound", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(super::state_error)?;
            match &held {
                None => {
                    tx.execute(
                        "INSERT INTO bound (workspace, identity) VALUES (?1, ?2)",
                        params![workspace.as_ref(), identity],
                    )
                    .map_err(super::state_error)?;
                }
                Some((path, was)) if *path == workspace && *was != identity => {
                    tx.execute_batch("DELETE FROM grants; DELETE FROM reviews; DELETE FROM bound;")
                        .map_err(super::state_error)?;
                    tx.execute(
                        "INSERT INTO bound (workspace, identity) VALUES (?1, ?2)",
                        params![workspace.as_ref(), identity],
                    )
                    .map_err(super::state_error)?;
                }
                Some(_) => {}
            }
            Ok(held)
        })
        .map_err(failed)?;
    match held {
        Some((other, _)) if other != workspace => Err(format!(
            "the grants database holds the grants of `{other}`, not of `{workspace}`; kyro does not carry grants between workspaces"
        )),
        _ => Ok(()),
    }
}

/// The authority database's schema, one migration per entry: the grants and spent
/// nonces, the workspace the database is bound to, the review queue.
const AUTHORITY: &[&str] = &[
    super::store::GRANTS,
    "CREATE TABLE bound (workspace TEXT NOT NULL, identity TEXT NOT NULL);",
    super::reviews::TABLE,
    super::reviews::NOTICES,
];

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

    fn request_review(&self, new: NewReview, now_ms: u64) -> Result<Review, String> {
        let (arguments, id) = (reviews::arguments_text(&new)?, kyro_core::review::new_id()?);
        // Found or inserted in the store's immediate transaction: one writer at a time, of
        // every process sharing the file.
        self.with(|tx| reviews::request(tx, &new, &arguments, &id, now_ms))??
            .read(now_ms)
    }

    fn review(&self, id: &str, now_ms: u64) -> Result<Option<Review>, String> {
        self.with(|tx| reviews::get(tx, id))?
            .map(|row| row.read(now_ms))
            .transpose()
    }

    fn reviews(&self, pending_only: bool, now_ms: u64) -> Result<Vec<Review>, String> {
        let rows = self.with(|tx| reviews::list(tx, pending_only, now_ms))?;
        // A row that does not read back (edited by hand) is left out, not the whole list.
        Ok(rows.into_iter().filter_map(|row| row.read(now_ms).ok()).collect())
    }

    fn decide_review(&self, id: &str, decided: Decided, now_ms: u64) -> Result<Review, DecideError> {
        let (state, reason) = (reviews::decided_state(decided.approve), decided.reason.as_deref());
        let updated = self
            .with(|tx| reviews::decide(tx, id, state, &decided.approver, reason, now_ms))
            .map_err(DecideError::Store)?;
        reviews::decision(id, updated, now_ms)
    }

    fn spend_review(&self, id: &str, now_ms: u64) -> Result<bool, String> {
        self.with(|tx| reviews::spend(tx, id, now_ms))
    }

    fn claim_notice(&self, id: &str, state: kyro_core::review::ReviewState, now_ms: u64) -> Result<bool, String> {
        self.with(|tx| reviews::claim(tx, id, state, now_ms))
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
        let home = tempfile::tempdir().unwrap();
        let one = SqliteApprovalStore::with_state_home(dir.path(), home.path());
        let two = SqliteApprovalStore::with_state_home(dir.path(), home.path());
        assert!(one.grants(None, now_ms()).unwrap().is_empty());
        let made = kyro_core::authority::authority_dir_in(home.path(), dir.path()).unwrap();
        assert!(made.join("authority.db").is_file(), "made on first use");
        assert!(!dir.path().join(".kyro").exists(), "nothing in the workspace");
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

    #[test]
    fn the_review_queue_keeps_what_every_store_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        kyro_core::review::conformance(&SqliteApprovalStore::with_state_home(dir.path(), home.path()));
    }

    #[test]
    fn the_review_queue_keeps_at_most_so_many_settled_reviews() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        kyro_core::review::settled_bound(&SqliteApprovalStore::with_state_home(dir.path(), home.path()));
    }

    #[test]
    fn two_processes_sharing_the_database_decide_a_review_once_and_run_it_once() {
        use kyro_core::review::{DecideError, Decided, NewReview, ReviewState};
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let one = SqliteApprovalStore::with_state_home(dir.path(), home.path());
        let two = SqliteApprovalStore::with_state_home(dir.path(), home.path());
        let now = now_ms();
        let asked = NewReview {
            caller: Caller::named("alice").unwrap(),
            tool: "run_command".into(),
            fingerprint: "f1".into(),
            arguments: json!({"argv": ["cargo", "publish"]}),
            summary: "run_command\n  argv: cargo publish".into(),
            expires_at_ms: now + 60_000,
            self_review: false,
        };
        let review = one.request_review(asked.clone(), now).unwrap();
        assert_eq!(two.request_review(asked, now).unwrap().id, review.id, "one review");
        let yes = Decided {
            approve: true,
            approver: Caller::named("bob").unwrap(),
            reason: None,
        };
        assert_eq!(
            one.decide_review(&review.id, yes.clone(), now).unwrap().state,
            ReviewState::Approved
        );
        assert_eq!(
            two.decide_review(&review.id, yes, now),
            Err(DecideError::NotPending {
                id: review.id.clone(),
                state: ReviewState::Approved
            })
        );
        let spent = [two.spend_review(&review.id, now), one.spend_review(&review.id, now)];
        assert_eq!(spent.iter().filter(|s| **s == Ok(true)).count(), 1, "{spent:?}");
        assert_eq!(spent.iter().filter(|s| **s == Ok(false)).count(), 1, "{spent:?}");
        assert_eq!(two.review(&review.id, now).unwrap().unwrap().state, ReviewState::Ran);
    }

    /// An approved review another party wrote into the workspace tree (an authority
    /// database under `.kyro/`, as a cloned repository could bring) approves nothing: the
    /// queue is read only from the user's state directory.
    #[test]
    fn a_review_approved_in_a_database_planted_in_the_workspace_approves_nothing() {
        use kyro_core::review::{NewReview, ReviewState};
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".kyro")).unwrap();
        let mut planted = super::Store::open_file(&ws.path().join(".kyro/authority.db"), super::AUTHORITY).unwrap();
        planted
            .write(|tx| {
                tx.execute(
                    "INSERT INTO reviews (id, caller, tool, fingerprint, arguments, summary, created_at, expires_at, state, approver, decided_at)
                     VALUES ('00000000000000aa', 'local', 'run_command', 'f', '{}', '', 0, ?1, 'approved', 'bob', 0)",
                    rusqlite::params![i64::MAX],
                )
                .map_err(crate::state::state_error)
            })
            .unwrap();
        drop(planted);
        let store = SqliteApprovalStore::with_state_home(ws.path(), home.path());
        let now = now_ms();
        assert!(
            !store.spend_review("00000000000000aa", now).unwrap(),
            "a planted approval ran"
        );
        let asked = NewReview {
            caller: kyro_core::Caller::local(),
            tool: "run_command".into(),
            fingerprint: "f".into(),
            arguments: json!({}),
            summary: String::new(),
            expires_at_ms: now + 60_000,
            self_review: false,
        };
        let review = store.request_review(asked, now).unwrap();
        assert_eq!(
            review.state,
            ReviewState::Pending,
            "the planted approval stood for the call"
        );
        assert_ne!(review.id, "00000000000000aa");
    }

    /// A grant whose row another party wrote into the workspace's own `.kyro/state.db`
    /// (a repository that tracks it, an extracted archive, a checkout) authorizes nothing:
    /// grants are read only from the user's state directory.
    #[test]
    fn grants_planted_in_the_workspace_tree_are_not_read() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        // The planted database, as an earlier kyro (which kept grants there) would write it.
        let planted = crate::state::Store::open_at(&ws.path().join(".kyro")).unwrap();
        planted
            .conn
            .execute(
                "INSERT INTO grants (caller, tool, arguments, created_at, expires_at) VALUES ('local', 'run_command', NULL, 0, ?1)",
                rusqlite::params![i64::MAX],
            )
            .unwrap();
        planted
            .conn
            .execute(
                "INSERT INTO spent_nonces (nonce, until_ms) VALUES ('n1', ?1)",
                rusqlite::params![i64::MAX],
            )
            .unwrap();
        drop(planted);
        let store = SqliteApprovalStore::with_state_home(ws.path(), home.path());
        assert!(store.grants(None, now_ms()).unwrap().is_empty(), "no planted grant");
        assert_eq!(store.spend_nonce("n1", now_ms() + 60_000), Ok(true), "no planted nonce");
        // Copying one workspace's grants into another's directory carries none either.
        let other = tempfile::tempdir().unwrap();
        let theirs = SqliteApprovalStore::with_state_home(other.path(), home.path());
        theirs
            .add_grant(NewGrant {
                caller: Caller::local(),
                tool: "run_command".into(),
                arguments: None,
                expires_at_ms: now_ms() + 60_000,
            })
            .unwrap();
        drop(theirs);
        let (from, to) = (
            kyro_core::authority::authority_dir_in(home.path(), other.path()).unwrap(),
            kyro_core::authority::authority_dir_in(home.path(), ws.path()).unwrap(),
        );
        drop(store);
        std::fs::copy(from.join("authority.db"), to.join("authority.db")).unwrap();
        let _ = std::fs::remove_file(to.join("authority.db-wal"));
        let _ = std::fs::remove_file(to.join("authority.db-shm"));
        let copied = SqliteApprovalStore::with_state_home(ws.path(), home.path());
        let error = copied.grants(None, now_ms()).unwrap_err();
        assert!(error.contains("does not carry grants between workspaces"), "{error}");

        // A directory made anew at a granted workspace's path starts with no grants.
        let place = other.path().to_owned();
        std::fs::remove_dir_all(&place).unwrap();
        std::fs::create_dir(&place).unwrap();
        let again = SqliteApprovalStore::with_state_home(&place, home.path());
        assert!(
            again.grants(None, now_ms()).unwrap().is_empty(),
            "a new directory, no grants"
        );
    }
}
