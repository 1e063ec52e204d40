//! kyro's shared state on PostgreSQL (`--state postgres://...`), for replicas serving one
//! team: grants, spent approval nonces and receipts, and the tools' memory, knowledge graph
//! and task list, with the same meaning as in the embedded SQLite store. Every replica reads and writes the same rows; what SQLite
//! serialized by its file lock is serialized here by transactions, unique keys and row or
//! advisory locks. Receipts form one hash chain per store, linked under a lock on its
//! head, and a call's answer waits until its receipt is committed.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, Grant, MemoryApprovalStore, NewGrant, now_ms};
use kyro_core::receipt::{CanonicalCall, Observer, Receipt};
use kyro_core::{Outcome, chain};

/// The schema, one migration per entry; `kyro_migrations` records those applied.
const MIGRATIONS: &[&str] = &[
    // 1: grants, spent nonces, receipts and the head of their chain.
    "CREATE TABLE kyro_grants (
        id BIGSERIAL PRIMARY KEY,
        caller TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    );
    CREATE INDEX kyro_grants_by_caller ON kyro_grants (caller, expires_at);
    CREATE TABLE kyro_spent_nonces (nonce TEXT PRIMARY KEY, until_ms BIGINT NOT NULL);
    CREATE INDEX kyro_spent_nonces_by_time ON kyro_spent_nonces (until_ms);
    CREATE TABLE kyro_receipts (
        seq BIGSERIAL PRIMARY KEY,
        call_id TEXT NOT NULL UNIQUE,
        caller TEXT NOT NULL,
        tool TEXT NOT NULL,
        outcome TEXT NOT NULL,
        started_at_ms BIGINT NOT NULL,
        line TEXT NOT NULL
    );
    CREATE INDEX kyro_receipts_by_caller ON kyro_receipts (caller, started_at_ms);
    CREATE INDEX kyro_receipts_by_tool ON kyro_receipts (tool, started_at_ms);
    CREATE TABLE kyro_chain (id INT PRIMARY KEY CHECK (id = 1), head TEXT NOT NULL);
    INSERT INTO kyro_chain VALUES (1, '0000000000000000000000000000000000000000000000000000000000000000');",
    // 2: memory (with PostgreSQL's own full-text search), the knowledge graph, the task list:
    // the SQLite store's tables, with text ordered by code point wherever it is sorted.
    "CREATE TABLE kyro_memories (
        id BIGSERIAL PRIMARY KEY,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '',
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        search tsvector GENERATED ALWAYS AS (to_tsvector('simple', key || ' ' || value || ' ' || tags)) STORED,
        UNIQUE (namespace, key)
    );
    CREATE INDEX kyro_memories_search ON kyro_memories USING GIN (search);
    CREATE TABLE kyro_entities (name TEXT COLLATE \"C\" PRIMARY KEY, entity_type TEXT NOT NULL);
    CREATE TABLE kyro_observations (
        entity TEXT COLLATE \"C\" NOT NULL REFERENCES kyro_entities (name) ON DELETE CASCADE,
        content TEXT NOT NULL,
        position BIGINT NOT NULL,
        PRIMARY KEY (entity, content)
    );
    CREATE TABLE kyro_relations (
        source TEXT COLLATE \"C\" NOT NULL REFERENCES kyro_entities (name) ON DELETE CASCADE,
        target TEXT COLLATE \"C\" NOT NULL REFERENCES kyro_entities (name) ON DELETE CASCADE,
        relation_type TEXT COLLATE \"C\" NOT NULL,
        PRIMARY KEY (source, target, relation_type)
    );
    CREATE INDEX kyro_relations_by_target ON kyro_relations (target);
    CREATE TABLE kyro_tasks (
        id BIGSERIAL PRIMARY KEY,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        position BIGINT NOT NULL,
        notes TEXT NOT NULL DEFAULT '',
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );",
    // 3: pre-2026 sessions, so any replica can restore one for the caller that opened it.
    "CREATE TABLE kyro_sessions (
        id TEXT PRIMARY KEY,
        caller TEXT,
        initialize TEXT,
        touched_at BIGINT NOT NULL
    );
    CREATE INDEX kyro_sessions_by_time ON kyro_sessions (touched_at);",
    // 4: MCP tasks (the tasks extension), so `tasks/get` and `tasks/cancel` reach a task
    // from any replica.
    "CREATE TABLE kyro_mcp_tasks (
        id TEXT PRIMARY KEY,
        caller TEXT NOT NULL,
        detailed TEXT NOT NULL,
        ended_at BIGINT,
        heartbeat_at BIGINT NOT NULL,
        cancel_requested BOOLEAN NOT NULL DEFAULT false
    );
    CREATE INDEX kyro_mcp_tasks_by_end ON kyro_mcp_tasks (ended_at);",
];

/// The advisory lock migrations run under, so replicas starting together migrate once.
const MIGRATION_LOCK: i64 = 0x6b79_726f;

/// Connections a process holds at most.
const POOL_SIZE: usize = 16;

pub(super) fn failed(e: impl std::fmt::Display) -> String {
    format!("the PostgreSQL state store: {e}")
}

/// A PostgreSQL database holding kyro's shared state; cheap to clone.
#[derive(Clone)]
pub struct PgState {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    migrated: tokio::sync::OnceCell<()>,
    /// A runtime of its own for callers outside any (the command line).
    own: OnceLock<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for PgState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgState")
    }
}

impl PgState {
    /// The database at `url` (`postgres://user@host/db`, or key=value settings), connected
    /// on first use and migrated then. Connections are plain TCP or a Unix socket (no TLS).
    pub fn new(url: &str) -> Result<PgState, String> {
        let config: tokio_postgres::Config = url.parse().map_err(failed)?;
        let manager = Manager::from_config(
            config,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(std::time::Duration::from_secs(10)))
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .build()
            .map_err(failed)?;
        Ok(PgState {
            inner: Arc::new(Inner {
                pool,
                migrated: tokio::sync::OnceCell::new(),
                own: OnceLock::new(),
            }),
        })
    }

    /// A connection of the pool, the schema migrated.
    pub(crate) async fn client(&self) -> Result<Object, String> {
        let client = self.inner.pool.get().await.map_err(failed)?;
        self.inner.migrated.get_or_try_init(|| migrate(&client)).await?;
        Ok(client)
    }

    /// Runs `work` to its end from synchronous code: on a thread of a runtime's blocking
    /// pool through its handle, elsewhere on a runtime of the store's own.
    fn blocking<T>(&self, work: impl Future<Output = T>) -> T {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle.block_on(work),
            Err(_) => self
                .inner
                .own
                .get_or_init(|| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("a runtime for the state store")
                })
                .block_on(work),
        }
    }

    /// The receipt log of this store (an observer for the runtime).
    pub fn receipts(&self) -> PgReceipts {
        PgReceipts(Arc::new(ReceiptQueue {
            state: self.clone(),
            queue: Mutex::default(),
            writing: tokio::sync::Mutex::new(()),
            lost: Mutex::new(None),
        }))
    }

    /// Receipts matching the filter, the last `limit` (by chain order), oldest first: each
    /// as its line in the chain.
    pub fn query_receipts(&self, filter: &ReceiptFilter, limit: i64) -> Result<Vec<String>, String> {
        self.blocking(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT line FROM (SELECT seq, line FROM kyro_receipts
                     WHERE ($1::text IS NULL OR caller = $1) AND ($2::text IS NULL OR tool = $2)
                       AND ($3::text IS NULL OR outcome = $3)
                       AND ($4::bigint IS NULL OR started_at_ms >= $4) AND ($5::bigint IS NULL OR started_at_ms < $5)
                     ORDER BY seq DESC LIMIT $6) latest ORDER BY seq",
                    &[
                        &filter.caller,
                        &filter.tool,
                        &filter.outcome,
                        &filter.since_ms,
                        &filter.until_ms,
                        &limit,
                    ],
                )
                .await
                .map_err(failed)?;
            Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
        })
    }

    /// The receipt of call `call_id`: its caller and its line in the chain.
    pub async fn find_receipt(&self, call_id: &str) -> Result<Option<(String, String)>, String> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT caller, line FROM kyro_receipts WHERE call_id = $1", &[&call_id])
            .await
            .map_err(failed)?;
        Ok(row.map(|row| (row.get(0), row.get(1))))
    }

    /// Reads every receipt in chain order and checks the chain ([`chain::verify`]).
    pub fn verify_receipts(&self, expected_head: Option<&str>) -> Result<chain::Verified, String> {
        self.blocking(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(failed)?;
            // Read a thousand at a time: memory stays bounded however long the log.
            let portal = tx
                .bind("SELECT line FROM kyro_receipts ORDER BY seq", &[])
                .await
                .map_err(failed)?;
            let mut check = chain::Check::new(expected_head);
            loop {
                let rows = tx.query_portal(&portal, 1000).await.map_err(failed)?;
                if rows.is_empty() {
                    break;
                }
                for row in &rows {
                    check.line(row.get::<_, String>(0).as_bytes());
                }
            }
            Ok(check.end())
        })
    }
}

/// Which receipts [`PgState::query_receipts`] returns; `None` matches any.
#[derive(Debug, Default, Clone)]
pub struct ReceiptFilter {
    /// The caller's name.
    pub caller: Option<String>,
    /// The tool's name.
    pub tool: Option<String>,
    /// The outcome kind.
    pub outcome: Option<String>,
    /// Calls started at or after (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Calls started before.
    pub until_ms: Option<i64>,
}

/// Applies the migrations not yet applied, under an advisory lock.
async fn migrate(client: &Object) -> Result<(), String> {
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS kyro_migrations (version INT PRIMARY KEY)")
        .await
        .or_else(|e| {
            // Two replicas creating it at once: one loses the race, the table is there.
            if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
                Ok(())
            } else {
                Err(failed(e))
            }
        })?;
    client.batch_execute("BEGIN").await.map_err(failed)?;
    let applied = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let done: i32 = client
            .query_one("SELECT coalesce(max(version), 0) FROM kyro_migrations", &[])
            .await?
            .get(0);
        for (i, migration) in MIGRATIONS.iter().enumerate().skip(done as usize) {
            client.batch_execute(migration).await?;
            client
                .execute("INSERT INTO kyro_migrations VALUES ($1)", &[&(i as i32 + 1)])
                .await?;
        }
        Ok::<(), tokio_postgres::Error>(())
    }
    .await;
    match applied {
        Ok(()) => client.batch_execute("COMMIT").await.map_err(failed),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(failed(e))
        }
    }
}

type GrantRow = (i64, String, String, Option<String>, i64, i64);

fn grant_row(row: &tokio_postgres::Row) -> GrantRow {
    (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5))
}

fn grant((id, caller, tool, arguments, created, expires): GrantRow) -> Result<Grant, String> {
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

impl ApprovalStore for PgState {
    fn spend_nonce(&self, nonce: &str, until_ms: u64) -> Result<bool, String> {
        self.blocking(async {
            let client = self.client().await?;
            client
                .execute(
                    "DELETE FROM kyro_spent_nonces WHERE until_ms <= $1",
                    &[&(now_ms() as i64)],
                )
                .await
                .map_err(failed)?;
            let added = client
                .execute(
                    "INSERT INTO kyro_spent_nonces (nonce, until_ms) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&nonce, &(until_ms as i64)],
                )
                .await
                .map_err(failed)?;
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
        let row = self.blocking(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(failed)?;
            // One caller's grants are counted and added one writer at a time.
            tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&new.caller.name()])
                .await
                .map_err(failed)?;
            tx.execute("DELETE FROM kyro_grants WHERE expires_at <= $1", &[&now])
                .await
                .map_err(failed)?;
            let held: i64 = tx
                .query_one(
                    "SELECT count(*) FROM kyro_grants WHERE caller = $1",
                    &[&new.caller.name()],
                )
                .await
                .map_err(failed)?
                .get(0);
            if held >= MemoryApprovalStore::MOST_GRANTS as i64 {
                return Ok(None);
            }
            let row = tx
                .query_one(
                    "INSERT INTO kyro_grants (caller, tool, arguments, created_at, expires_at)
                     VALUES ($1, $2, $3, $4, $5)
                     RETURNING id, caller, tool, arguments, created_at, expires_at",
                    &[
                        &new.caller.name(),
                        &new.tool,
                        &arguments,
                        &now,
                        &(new.expires_at_ms as i64),
                    ],
                )
                .await
                .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            Ok::<_, String>(Some(grant_row(&row)))
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
        let rows = self.blocking(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT id, caller, tool, arguments, created_at, expires_at FROM kyro_grants
                     WHERE expires_at > $1 AND ($2::text IS NULL OR caller = $2) ORDER BY id",
                    &[&(now_ms as i64), &caller.map(Caller::name)],
                )
                .await
                .map_err(failed)?;
            Ok::<_, String>(rows.iter().map(grant_row).collect::<Vec<_>>())
        })?;
        Ok(rows.into_iter().filter_map(|row| grant(row).ok()).collect())
    }

    fn revoke_grant(&self, id: &str) -> Result<bool, String> {
        let Ok(id) = id.parse::<i64>() else {
            return Ok(false);
        };
        self.blocking(async {
            let client = self.client().await?;
            let gone = client
                .execute("DELETE FROM kyro_grants WHERE id = $1", &[&id])
                .await
                .map_err(failed)?;
            Ok(gone == 1)
        })
    }
}

/// One receipt waiting to be written.
struct Queued {
    call_id: String,
    caller: String,
    tool: String,
    outcome: String,
    started_at_ms: i64,
    raw: Vec<u8>,
}

/// The receipts observed and not yet written, and the writing of them.
struct ReceiptQueue {
    state: PgState,
    queue: Mutex<Vec<Queued>>,
    /// Held by the one settling future writing the queue.
    writing: tokio::sync::Mutex<()>,
    lost: Mutex<Option<String>>,
}

/// The receipt log on PostgreSQL: a receipt observed is written before its call is
/// answered ([`Observer::settled`]); receipts of calls finishing together are written in
/// one transaction, linked to the chain's head under its row lock, so the replicas'
/// receipts form one chain in commit order. A write that fails loses receipts: from then
/// on the log is not [ready](Observer::ready) and the runtime runs no call.
pub struct PgReceipts(Arc<ReceiptQueue>);

impl ReceiptQueue {
    fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Writes what is queued (everything observed before this was called, and perhaps more).
    async fn settle(self: Arc<Self>) {
        let _writing = self.writing.lock().await;
        let batch = std::mem::take(&mut *self.queue.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() {
            return;
        }
        // Written on a task of its own: a settling future dropped midway (a cancelled
        // parent call's child) does not take the batch it took from the queue with it.
        let queue = self.clone();
        let written = tokio::spawn(async move { queue.write(&batch).await })
            .await
            .unwrap_or_else(|e| Err(e.to_string()));
        if let Err(e) = written {
            let lost = format!("receipts could not be written ({e}); no call runs until kyro is restarted");
            eprintln!("kyro: receipts not recorded: {lost}");
            *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(lost);
        }
    }

    async fn write(&self, batch: &[Queued]) -> Result<(), String> {
        let mut client = self.state.client().await?;
        let tx = client.transaction().await.map_err(failed)?;
        let mut head: String = tx
            .query_one("SELECT head FROM kyro_chain WHERE id = 1 FOR UPDATE", &[])
            .await
            .map_err(failed)?
            .get(0);
        let insert = tx
            .prepare(
                "INSERT INTO kyro_receipts (call_id, caller, tool, outcome, started_at_ms, line)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await
            .map_err(failed)?;
        for receipt in batch {
            let line = chain::link(&head, &receipt.raw);
            head = chain::line_hash(&line);
            let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).into_owned();
            tx.execute(
                &insert,
                &[
                    &receipt.call_id,
                    &receipt.caller,
                    &receipt.tool,
                    &receipt.outcome,
                    &receipt.started_at_ms,
                    &text,
                ],
            )
            .await
            .map_err(failed)?;
        }
        tx.execute("UPDATE kyro_chain SET head = $1 WHERE id = 1", &[&head])
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }
}

impl Observer for PgReceipts {
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &Outcome) {
        let outcome = serde_json::to_value(receipt.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        // The indexed columns hold what a client named (an unknown tool's name): without
        // NUL, which PostgreSQL's text cannot hold, and short enough for the index. The
        // line keeps the receipt whole.
        let column = |text: &str| text.replace('\0', "").chars().take(256).collect::<String>();
        let queued = Queued {
            call_id: column(&receipt.call_id),
            caller: column(receipt.caller.name()),
            tool: column(&receipt.tool),
            outcome,
            started_at_ms: receipt.started_at_ms as i64,
            raw: serde_json::to_vec(receipt).unwrap_or_else(|_| b"{}".to_vec()),
        };
        self.0.queue.lock().unwrap_or_else(|p| p.into_inner()).push(queued);
    }

    fn settled(&self) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        Some(Box::pin(self.0.clone().settle()))
    }

    fn ready(&self) -> Result<(), String> {
        match self.0.lost() {
            Some(lost) => Err(lost),
            None => Ok(()),
        }
    }
}
