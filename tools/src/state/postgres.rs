//! kyro's shared state on PostgreSQL (`--state postgres://...`), for replicas serving one
//! team: grants, spent approval nonces and receipts, and the tools' memory, knowledge graph
//! and task list, with the same meaning as in the embedded SQLite store. Every replica reads and writes the same rows; what SQLite
//! serialized by its file lock is serialized here by transactions, unique keys and row or
//! advisory locks. Receipts form one hash chain per store, linked under a lock on its
//! head, and a call's answer waits until its receipt is committed.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use deadpool_postgres::{ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, Grant, MemoryApprovalStore, NewGrant, now_ms};
use kyro_core::review::{DecideError, Decided, NewReview, Review};

use super::pg_tls::PgTls;
use super::{pg_url, reviews};

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
    // 5: the review queue (pg_reviews.rs): calls waiting for (or decided by) an approver.
    "CREATE TABLE kyro_reviews (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        caller TEXT NOT NULL,
        tool TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        arguments TEXT NOT NULL,
        summary TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        state TEXT NOT NULL,
        approver TEXT,
        reason TEXT,
        decided_at BIGINT,
        self_review BOOLEAN NOT NULL DEFAULT false
    );
    CREATE INDEX kyro_reviews_by_call ON kyro_reviews (caller, fingerprint);
    CREATE INDEX kyro_reviews_by_state ON kyro_reviews (state, caller);
    CREATE INDEX kyro_reviews_by_expiry ON kyro_reviews (expires_at);",
    // 6: notices of reviews claimed (`[approvals.notify]`): each sent by one replica.
    "CREATE TABLE kyro_review_notices (
        id TEXT NOT NULL,
        state TEXT NOT NULL,
        claimed_at BIGINT NOT NULL,
        PRIMARY KEY (id, state)
    );
    CREATE INDEX kyro_review_notices_by_time ON kyro_review_notices (claimed_at);",
];

/// The advisory lock migrations run under, so replicas starting together migrate once.
const MIGRATION_LOCK: i64 = 0x6b79_726f;

/// Connections a process holds at most.
const POOL_SIZE: usize = 16;

/// A failure of the store, said whole: tokio-postgres says "db error" and keeps what the
/// server said (`ERROR: ...`) as its source; a cause a message already ends with (the
/// pool's and tokio-postgres' wrappers repeat theirs) is said once.
pub(super) fn failed(e: impl std::error::Error) -> String {
    let mut said = format!("the PostgreSQL state store: {e}");
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_said = cause.to_string();
        if !said.ends_with(&cause_said) {
            said.push_str(&format!(": {cause_said}"));
        }
        source = cause.source();
    }
    said
}

/// Bounds on every connection, so no statement, lock wait or forgotten transaction holds
/// a replica (or the chain's head) for long, and a server gone silent is noticed.
const SESSION_BOUNDS: &str =
    "-c statement_timeout=30000 -c lock_timeout=10000 -c idle_in_transaction_session_timeout=60000";

/// A PostgreSQL database holding kyro's shared state; cheap to clone.
#[derive(Clone)]
pub struct PgState {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// What the URL's TLS settings leave open, said at start (pg_tls.rs).
    tls_warning: Option<String>,
    /// How connections are made (`plaintext`, `TLS (sslmode=verify-full)`, ...).
    connection: &'static str,
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
    /// on first use and migrated then; over TLS as the URL's `sslmode` and `sslrootcert`
    /// say (pg_tls.rs: libpq's modes; without `sslmode`, plaintext on loopback and Unix
    /// sockets, libpq's `prefer` elsewhere). The CA file is read now.
    pub fn new(url: &str) -> Result<PgState, String> {
        let tls_failed = |e: pg_url::TlsSettingError| format!("the PostgreSQL state store: {e}");
        let (rest, asked) = pg_url::split_tls(url).map_err(tls_failed)?;
        let mut config: tokio_postgres::Config = rest.parse().map_err(failed)?;
        let tls = PgTls::new(asked, &config).map_err(tls_failed)?;
        // The URL's own options come after, so a deployment can set other bounds.
        let options = match config.get_options() {
            Some(own) => format!("{SESSION_BOUNDS} {own}"),
            None => SESSION_BOUNDS.to_owned(),
        };
        config
            .options(options)
            .ssl_mode(tls.ssl_mode())
            .connect_timeout(Duration::from_secs(10))
            .keepalives_idle(Duration::from_secs(30))
            .tcp_user_timeout(Duration::from_secs(30));
        let manager = tls.manager(
            config,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(failed)?;
        Ok(PgState {
            inner: Arc::new(Inner {
                tls_warning: tls.warning(),
                connection: tls.describe(),
                pool,
                migrated: tokio::sync::OnceCell::new(),
                own: OnceLock::new(),
            }),
        })
    }

    /// A connection of the pool, the schema migrated.
    pub(crate) async fn client(&self) -> Result<Object, String> {
        let mut client = self.inner.pool.get().await.map_err(|e| match e {
            // Why a connection could not be made, without the pool's "creating a new object".
            PoolError::Backend(e) => failed(e),
            e => failed(e),
        })?;
        self.inner.migrated.get_or_try_init(|| migrate(&mut client)).await?;
        Ok(client)
    }

    /// How the store is reached: `plaintext`, or `TLS (sslmode=MODE)`.
    pub fn connection(&self) -> &'static str {
        self.inner.connection
    }

    /// What an operator should hear about how the store is reached: a host off this
    /// machine with `sslmode=prefer` (or none), which may fall back to plaintext and does
    /// not check the server's certificate.
    pub fn tls_warning(&self) -> Option<&str> {
        self.inner.tls_warning.as_deref()
    }

    /// Connects and migrates now: a server checks its store before it takes requests.
    pub async fn reach(&self) -> Result<(), String> {
        self.client().await.map(drop)
    }

    /// Runs `work` to its end from synchronous code: on a thread of a runtime's blocking
    /// pool through its handle, elsewhere on a runtime of the store's own.
    pub(super) fn blocking<T>(&self, work: impl Future<Output = T>) -> T {
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
}

/// Applies the migrations not yet applied, in one transaction under an advisory lock.
async fn migrate(client: &mut Object) -> Result<(), String> {
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS kyro_migrations (version INT PRIMARY KEY)")
        .await
        .or_else(|e| {
            // Two replicas creating it at once: one loses the race (as a duplicate key of
            // the catalog's, or as its row type already made), and the table is there.
            use tokio_postgres::error::SqlState;
            if [
                SqlState::UNIQUE_VIOLATION,
                SqlState::DUPLICATE_OBJECT,
                SqlState::DUPLICATE_TABLE,
            ]
            .iter()
            .any(|code| e.code() == Some(code))
            {
                Ok(())
            } else {
                Err(failed(e))
            }
        })?;
    let tx = client.transaction().await.map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed)?;
    let done: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM kyro_migrations", &[])
        .await
        .map_err(failed)?
        .get(0);
    for (i, migration) in MIGRATIONS.iter().enumerate().skip(done as usize) {
        tx.batch_execute(migration).await.map_err(failed)?;
        tx.execute("INSERT INTO kyro_migrations VALUES ($1)", &[&(i as i32 + 1)])
            .await
            .map_err(failed)?;
    }
    // Dropped without a commit (an error above), the transaction rolls back.
    tx.commit().await.map_err(failed)
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

    fn request_review(&self, new: NewReview, now_ms: u64) -> Result<Review, String> {
        let (arguments, id) = (reviews::arguments_text(&new)?, kyro_core::review::new_id()?);
        self.blocking(self.review_request(&new, &arguments, &id, now_ms))?
            .read(now_ms)
    }

    fn review(&self, id: &str, now_ms: u64) -> Result<Option<Review>, String> {
        self.blocking(self.review_get(id))?
            .map(|row| row.read(now_ms))
            .transpose()
    }

    fn reviews(&self, pending_only: bool, now_ms: u64) -> Result<Vec<Review>, String> {
        let rows = self.blocking(self.review_list(pending_only, now_ms))?;
        // A row that does not read back (edited by hand) is left out, not the whole list.
        Ok(rows.into_iter().filter_map(|row| row.read(now_ms).ok()).collect())
    }

    fn decide_review(&self, id: &str, decided: Decided, now_ms: u64) -> Result<Review, DecideError> {
        let (state, reason) = (reviews::decided_state(decided.approve), decided.reason.as_deref());
        let updated = self
            .blocking(self.review_decide(id, state, &decided.approver, reason, now_ms))
            .map_err(DecideError::Store)?;
        reviews::decision(id, updated, now_ms)
    }

    fn spend_review(&self, id: &str, now_ms: u64) -> Result<bool, String> {
        self.blocking(self.review_spend(id, now_ms))
    }

    fn claim_notice(&self, id: &str, state: kyro_core::review::ReviewState, now_ms: u64) -> Result<bool, String> {
        self.blocking(self.review_claim_notice(id, state, now_ms))
    }
}
