//! Memory: notes stored under a key, searched by full text, kept across restarts.

mod memory_forget;
mod memory_get;
mod memory_search;
mod memory_store;
#[cfg(feature = "postgres")]
mod shared;

pub use memory_forget::{Forgotten, MemoryForget};
pub use memory_get::{Memory, MemoryGet};
pub use memory_search::{MemoryHit, MemorySearch, MemorySearchResults};
pub use memory_store::{MemoryStore, Stored};

/// The namespace used when none is given.
pub(crate) const DEFAULT_NAMESPACE: &str = "default";

/// Tags are stored as one space-separated column so the full-text index sees them.
pub(crate) fn tags_column(tags: &[String]) -> String {
    tags.join(" ")
}

pub(crate) fn tags_from_column(column: &str) -> Vec<String> {
    column.split_whitespace().map(str::to_owned).collect()
}
