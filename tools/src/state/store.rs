//! Opening the state database and migrating its schema.

use crate::Failure;
use std::path::Path;

use kyro_core::{ToolContext, ToolError};
use rusqlite::Connection;

/// The schema, one migration per entry; `PRAGMA user_version` counts those applied.
const MIGRATIONS: &[&str] = &[
    // 1: memory with full-text search.
    "CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (namespace, key)
    );
    CREATE VIRTUAL TABLE memories_fts USING fts5(key, value, tags, content='memories', content_rowid='id');
    CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, key, value, tags) VALUES (new.id, new.key, new.value, new.tags);
    END;
    CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, value, tags) VALUES ('delete', old.id, old.key, old.value, old.tags);
    END;
    CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, value, tags) VALUES ('delete', old.id, old.key, old.value, old.tags);
        INSERT INTO memories_fts(rowid, key, value, tags) VALUES (new.id, new.key, new.value, new.tags);
    END;",
    // 2: the knowledge graph of the MCP memory server.
    "CREATE TABLE entities (
        name TEXT PRIMARY KEY,
        entity_type TEXT NOT NULL
    );
    CREATE TABLE observations (
        entity TEXT NOT NULL REFERENCES entities(name) ON DELETE CASCADE,
        content TEXT NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (entity, content)
    );
    CREATE TABLE relations (
        source TEXT NOT NULL REFERENCES entities(name) ON DELETE CASCADE,
        target TEXT NOT NULL REFERENCES entities(name) ON DELETE CASCADE,
        relation_type TEXT NOT NULL,
        PRIMARY KEY (source, target, relation_type)
    );",
    // 3: the task list.
    "CREATE TABLE tasks (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        position INTEGER NOT NULL,
        notes TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );",
    // 4: grants and the one-time approvals already spent, kept here until they moved to
    // the user's state directory (approvals.rs); left unused, so versions count the same.
    GRANTS,
];

/// Grants and the one-time approvals already spent (the MCP server's).
pub(crate) const GRANTS: &str = "CREATE TABLE grants (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        caller TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE INDEX grants_by_caller ON grants (caller, expires_at);
    CREATE TABLE spent_nonces (
        nonce TEXT PRIMARY KEY,
        until_ms INTEGER NOT NULL
    );
    CREATE INDEX spent_nonces_by_time ON spent_nonces (until_ms);";

/// How long a write waits for another writer at most.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// An open state database.
pub(crate) struct Store {
    pub conn: Connection,
    /// Interrupts the running statement when the call is stopped.
    _on_stop: Option<kyro_core::OnStop>,
}

/// Maps a SQLite failure to the tool error.
pub(crate) fn state_error(e: rusqlite::Error) -> ToolError {
    Failure::State { message: e.to_string() }.into()
}

impl Store {
    /// Opens (creating and migrating on first use) the store of the call's workspace.
    /// A statement running when the call is stopped is interrupted, and waiting for another
    /// writer's lock ends at the call's time limit.
    pub fn open(cx: &ToolContext) -> Result<Store, ToolError> {
        let mut store = Store::open_at(&cx.state_dir()?)?;
        if let Some(left) = cx.stop().remaining() {
            store.conn.busy_timeout(left.min(BUSY_TIMEOUT)).map_err(state_error)?;
        }
        let interrupt = store.conn.get_interrupt_handle();
        store._on_stop = Some(cx.stop().on_stop(move || interrupt.interrupt()));
        cx.stop().check()?;
        Ok(store)
    }

    /// Opens the store in `dir`.
    pub fn open_at(dir: &Path) -> Result<Store, ToolError> {
        std::fs::create_dir_all(dir).map_err(|e| ToolError::io("create", &dir.display().to_string(), &e))?;
        Store::open_file(&dir.join("state.db"), MIGRATIONS)
    }

    /// Opens (creating and migrating) the database `file` of the schema `migrations`.
    pub fn open_file(file: &Path, migrations: &[&str]) -> Result<Store, ToolError> {
        // No symlink at the database's name (its directory was checked by whoever named it).
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(file, flags).map_err(state_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(state_error)?;
        wal(&conn)?;
        conn.pragma_update(None, "foreign_keys", true).map_err(state_error)?;
        let mut store = Store { conn, _on_stop: None };
        store.migrate(migrations)?;
        Ok(store)
    }

    fn migrate(&mut self, migrations: &[&str]) -> Result<(), ToolError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(state_error)?;
        let applied: i64 = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(state_error)?;
        for (i, migration) in migrations.iter().enumerate().skip(applied as usize) {
            tx.execute_batch(migration).map_err(state_error)?;
            tx.pragma_update(None, "user_version", i as i64 + 1)
                .map_err(state_error)?;
        }
        tx.commit().map_err(state_error)
    }

    /// Runs `work` in an immediate transaction: all of it lands, or none.
    pub fn write<T>(
        &mut self,
        work: impl FnOnce(&rusqlite::Transaction) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(state_error)?;
        let value = work(&tx)?;
        tx.commit().map_err(state_error)?;
        Ok(value)
    }
}

/// Switches the database to WAL. The switch needs the database to itself and SQLite does
/// not wait for that through the busy handler, so when another process is creating the
/// same database at the same moment, wait (up to the busy timeout) until one of them has
/// made the switch.
fn wal(conn: &Connection) -> Result<(), ToolError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mode: String = match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Ok(mode) => mode,
            Err(_) => conn
                .pragma_query_value(None, "journal_mode", |r| r.get(0))
                .unwrap_or_default(),
        };
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(Failure::State {
                message: format!("could not switch the state database to WAL (journal mode is `{mode}`)"),
            }
            .into());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now() -> i64 {
    kyro_core::grants::now_ms() as i64
}

#[cfg(test)]
mod tests {
    use super::{MIGRATIONS, Store};

    #[test]
    fn the_schema_is_created_once_and_reopening_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_at(dir.path()).unwrap();
        let version: i64 = store
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        drop(store);
        let again = Store::open_at(dir.path()).unwrap();
        let mode: String = again
            .conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }
}

#[cfg(test)]
mod confinement_tests {
    use serde_json::json;

    use crate::testing::{call, failed, workspace};

    #[test]
    fn a_planted_kyro_symlink_keeps_the_state_inside() {
        let ws = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join(".kyro")).unwrap();
        let error = failed(call(
            ws.path(),
            "memory_store",
            json!({"key": "k", "value": "secret note"}),
        ));
        assert!(error.to_string().contains("symlink"), "{error}");
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "nothing written outside"
        );
    }
}
