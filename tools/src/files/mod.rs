//! Files: read, write, edit, patch, search and manage files inside the workspace.

mod apply_patch;
mod codex_patch;
mod copy_path;
mod delete_path;
mod directory_tree;
mod edit_file;
mod file_info;
mod glob;
mod grep;
mod list_allowed_directories;
mod list_directory;
mod make_directory;
mod move_path;
mod multi_edit;
mod read_file;
mod read_many_files;
mod read_media_file;
mod search_file;
mod search_tree;
mod settled;
mod text_file;
mod walk;
mod whole;
mod write_file;

pub use apply_patch::{ApplyPatch, ExpectedHash, PatchOperation, Patched, PatchedFile};
pub use copy_path::{Copied, CopyPath};
pub use delete_path::{DeletePath, Deleted};
pub use directory_tree::{DirectoryTree, Tree, TreeEntry};
pub use edit_file::{EditFile, Edited};
pub use file_info::{FileInfo, PathInfo};
pub use glob::{Glob, GlobMatches};
pub use grep::{Case, Grep, GrepMatches};
pub use list_allowed_directories::{AllowedDirectories, AllowedDirectory, ListAllowedDirectories};
pub use list_directory::{DirectoryEntry, EntryKind, ListDirectory, Listing};
pub use make_directory::{MadeDirectory, MakeDirectory};
pub use move_path::{MovePath, Moved};
pub use multi_edit::{MultiEdit, Replacement};
pub use read_file::{FileWindow, ReadFile};
pub use read_many_files::{ManyFiles, OneFile, ReadManyFiles};
pub use read_media_file::{MediaFile, ReadMediaFile};
pub use search_file::LineMatch;
pub use write_file::{WriteFile, Written};

/// The default of boolean arguments that are on unless turned off.
pub(crate) fn yes() -> bool {
    true
}
