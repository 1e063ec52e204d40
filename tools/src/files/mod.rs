//! Files: read, write and list inside the workspace.

mod list_directory;
mod read_file;
mod write_file;

pub use list_directory::{DirectoryEntry, EntryKind, ListDirectory, Listing};
pub use read_file::{FileWindow, ReadFile};
pub use write_file::{WriteFile, Written};
