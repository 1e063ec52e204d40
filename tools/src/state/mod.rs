//! The state store: by default one SQLite file per workspace (`.kyro/state.db`), created on
//! first use and migrated forward, shared safely by several processes (WAL, busy timeout);
//! with `--state`, a PostgreSQL database every replica shares (feature `postgres`).

mod approvals;
#[cfg(feature = "postgres")]
mod pg_receipts;
#[cfg(feature = "postgres")]
mod pg_reviews;
#[cfg(feature = "postgres")]
mod pg_sessions;
#[cfg(feature = "postgres")]
mod pg_tasks;
#[cfg(feature = "postgres")]
mod pg_tls;
#[cfg(feature = "postgres")]
mod pg_url;
#[cfg(feature = "postgres")]
mod postgres;
mod reviews;
mod store;

pub use approvals::SqliteApprovalStore;
#[cfg(feature = "postgres")]
pub use pg_receipts::{PgReceipts, ReceiptFilter};
#[cfg(feature = "postgres")]
pub use pg_tasks::StoredTask;
#[cfg(feature = "postgres")]
pub use postgres::PgState;

pub(crate) use store::{Store, now, state_error};

/// The PostgreSQL state the server shares with its replicas (`--state`), when it was given
/// one: the tools keep memory, the graph and the task list there instead of the
/// workspace's SQLite file.
#[cfg(feature = "postgres")]
pub(crate) fn shared(cx: &kyro_core::ToolContext) -> Option<std::sync::Arc<PgState>> {
    cx.workspace().resource::<PgState, ()>(|| Err(())).ok()
}

/// Maps a PostgreSQL failure to the tool error.
#[cfg(feature = "postgres")]
pub(crate) fn pg_error(e: impl std::fmt::Display) -> kyro_core::ToolError {
    crate::Failure::State { message: e.to_string() }.into()
}
