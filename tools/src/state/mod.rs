//! The embedded state store: one SQLite file per workspace (`.kyro/state.db`), created on
//! first use and migrated forward, shared safely by several processes (WAL, busy timeout).

mod approvals;
mod store;

pub use approvals::SqliteApprovalStore;

pub(crate) use store::{Store, now, state_error};
