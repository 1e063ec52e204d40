//! The embedded state store: one SQLite file per workspace (`.kyro/state.db`), created on
//! first use and migrated forward, shared safely by several processes (WAL, busy timeout).

mod approvals;
#[cfg(feature = "postgres")]
mod postgres;
mod store;

pub use approvals::SqliteApprovalStore;
#[cfg(feature = "postgres")]
pub use postgres::{PgReceipts, PgState, ReceiptFilter};

pub(crate) use store::{Store, now, state_error};
