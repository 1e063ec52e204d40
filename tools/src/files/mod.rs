//! Files: read, write and list inside the workspace.

mod list_directory;
mod read_file;
mod write_file;

pub use list_directory::{DirectoryEntry, EntryKind, ListDirectory, Listing};
pub use read_file::{FileWindow, ReadFile};
pub use write_file::{WriteFile, Written};

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
