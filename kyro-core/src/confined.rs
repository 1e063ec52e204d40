//! A path confined beneath a root handle. Every filesystem operation a tool performs goes
//! through here, so a symlink swapped in after authorization still cannot lead outside
//! (cap-std resolves beneath the handle, with `openat2(RESOLVE_BENEATH)` on Linux), and
//! every change is recorded as an observed effect with before/after hashes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

/// Opening flags that never block on a FIFO and never follow a final symlink.
const NONBLOCK_NOFOLLOW: i32 = libc::O_NONBLOCK | libc::O_NOFOLLOW;
use sha2::{Digest, Sha256};

use crate::error::ToolError;
use crate::observed::{EffectLog, ObservedEffect};

/// A path argument after confinement: a root handle and a path relative to it.
#[derive(Debug, Clone)]
pub struct ConfinedPath {
    dir: Arc<Dir>,
    root: PathBuf,
    /// The entry itself (a final symlink stays a symlink).
    relative: PathBuf,
    /// Where its content lives (a final symlink's target).
    content: PathBuf,
    given: String,
    effects: Option<Arc<EffectLog>>,
}

/// The kind of a filesystem entry, symlinks not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// Anything else.
    Other,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// File name (lossy UTF-8).
    pub name: String,
    /// What it is, symlinks not followed.
    pub kind: EntryType,
    /// Size in bytes, for regular files.
    pub size: Option<u64>,
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

impl ConfinedPath {
    pub(crate) fn new(
        dir: Arc<Dir>,
        root: PathBuf,
        relative: PathBuf,
        content: PathBuf,
        given: String,
    ) -> ConfinedPath {
        ConfinedPath {
            dir,
            root,
            relative,
            content,
            given,
            effects: None,
        }
    }

    /// Where the content lives, relative to the root: the entry, or a final symlink's target.
    pub fn content(&self) -> &Path {
        &self.content
    }

    fn content_target(&self) -> &Path {
        if self.content.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.content
        }
    }

    pub(crate) fn recording(mut self, effects: Arc<EffectLog>) -> ConfinedPath {
        self.effects = Some(effects);
        self
    }

    /// The path as the caller wrote it.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// The resolved path relative to its root (empty for the root itself).
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    /// The path relative to its root with `/` separators, `.` for the root.
    pub fn display(&self) -> String {
        if self.relative.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            self.relative.to_string_lossy().into_owned()
        }
    }

    /// The host path, for messages and receipts only (never for opening).
    pub fn host_path(&self) -> PathBuf {
        self.root.join(&self.relative)
    }

    /// The host path of the content (a final symlink's target), for handing to a child
    /// process as its working directory.
    pub fn host_content_path(&self) -> PathBuf {
        self.root.join(&self.content)
    }

    fn target(&self) -> &Path {
        if self.relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.relative
        }
    }

    fn err(&self, operation: &str, e: &std::io::Error) -> ToolError {
        match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotFound {
                path: self.given.clone(),
            },
            std::io::ErrorKind::PermissionDenied if e.to_string().contains("outside") => ToolError::OutsideWorkspace {
                path: self.given.clone(),
            },
            _ => ToolError::io(operation, &self.given, e),
        }
    }

    /// The kind of what is there, symlinks not followed; `None` when nothing is.
    pub fn entry_type(&self) -> Result<Option<EntryType>, ToolError> {
        match self.dir.symlink_metadata(self.target()) {
            Ok(meta) => Ok(Some(kind_of(&meta.file_type()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.err("inspect", &e)),
        }
    }

    /// Reads a regular file.
    pub fn read(&self) -> Result<Vec<u8>, ToolError> {
        let meta = self
            .dir
            .metadata(self.content_target())
            .map_err(|e| self.err("read", &e))?;
        if !meta.is_file() {
            return Err(ToolError::NotAFile {
                path: self.given.clone(),
            });
        }
        self.dir.read(self.content_target()).map_err(|e| self.err("read", &e))
    }

    /// Lists a directory, sorted by name.
    pub fn read_dir(&self) -> Result<Vec<Entry>, ToolError> {
        let meta = self
            .dir
            .metadata(self.content_target())
            .map_err(|e| self.err("list", &e))?;
        if !meta.is_dir() {
            return Err(ToolError::NotADirectory {
                path: self.given.clone(),
            });
        }
        let mut entries = Vec::new();
        for entry in self
            .dir
            .read_dir(self.content_target())
            .map_err(|e| self.err("list", &e))?
        {
            let entry = entry.map_err(|e| self.err("list", &e))?;
            let kind = kind_of(&entry.file_type().map_err(|e| self.err("inspect", &e))?);
            let size = match kind {
                EntryType::File => entry.metadata().ok().map(|m| m.len()),
                _ => None,
            };
            entries.push(Entry {
                name: entry.file_name().to_string_lossy().into_owned(),
                kind,
                size,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Creates missing parent directories.
    pub fn create_parents(&self) -> Result<(), ToolError> {
        if let Some(parent) = self.content.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.dir
                .create_dir_all(parent)
                .map_err(|e| self.err("create directories for", &e))?;
        }
        Ok(())
    }

    /// Whether the parent directory exists.
    pub fn parent_exists(&self) -> bool {
        match self.content.parent().filter(|p| !p.as_os_str().is_empty()) {
            None => true,
            Some(parent) => self.dir.metadata(parent).is_ok_and(|m| m.is_dir()),
        }
    }

    /// The parent, relative to the root, for messages.
    pub fn parent_display(&self) -> String {
        match self.relative.parent().filter(|p| !p.as_os_str().is_empty()) {
            None => ".".to_owned(),
            Some(parent) => parent.to_string_lossy().into_owned(),
        }
    }

    /// Replaces the file's content atomically (temporary sibling, then rename) and records
    /// the change with the hashes before and after.
    pub fn write_atomic(&self, bytes: &[u8], before: Option<&[u8]>) -> Result<(), ToolError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = self
            .content
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| ToolError::NotAFile {
                path: self.given.clone(),
            })?;
        let temp = self.content.with_file_name(format!(
            ".{name}.kyro-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = self
                .dir
                .open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
            if let Ok(meta) = self.dir.metadata(&self.content) {
                file.set_permissions(meta.permissions())?;
            }
            file.write_all(bytes)?;
            file.sync_all()?;
            self.dir.rename(&temp, &self.dir, &self.content)
        })();
        if result.is_err() {
            let _ = self.dir.remove_file(&temp);
        }
        result.map_err(|e| self.err("write", &e))?;
        if let Some(effects) = &self.effects {
            effects.push(ObservedEffect::File {
                path: self.display(),
                before_sha256: before.map(sha256_hex),
                after_sha256: Some(sha256_hex(bytes)),
            });
        }
        Ok(())
    }
}

/// Metadata of an entry, symlinks followed or not as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// What it is.
    pub kind: EntryType,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, seconds since the Unix epoch.
    pub modified: Option<i64>,
    /// Unix permission bits.
    pub mode: u32,
    /// Whether the owner cannot write it.
    pub readonly: bool,
}

impl ConfinedPath {
    /// A path below this one (lexically joined; every operation still resolves beneath the
    /// root handle).
    pub fn join(&self, relative: impl AsRef<Path>) -> ConfinedPath {
        let mut joined = self.clone();
        joined.relative = self.content.join(relative.as_ref());
        joined.content = joined.relative.clone();
        joined.given = if self.relative.as_os_str().is_empty() {
            relative.as_ref().to_string_lossy().into_owned()
        } else {
            format!(
                "{}/{}",
                self.given.trim_end_matches('/'),
                relative.as_ref().to_string_lossy()
            )
        };
        joined
    }

    /// Metadata; `follow` decides whether a final symlink is followed.
    pub fn info(&self, follow: bool) -> Result<Info, ToolError> {
        use cap_std::fs::PermissionsExt;
        let meta = if follow {
            self.dir.metadata(self.content_target())
        } else {
            self.dir.symlink_metadata(self.target())
        }
        .map_err(|e| self.err("inspect", &e))?;
        let modified = meta
            .modified()
            .ok()
            .map(|t| t.into_std())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs() as i64);
        Ok(Info {
            kind: kind_of(&meta.file_type()),
            size: meta.len(),
            modified,
            mode: meta.permissions().mode(),
            readonly: meta.permissions().readonly(),
        })
    }

    /// The target of a symlink.
    pub fn read_link(&self) -> Result<PathBuf, ToolError> {
        self.dir
            .read_link_contents(self.target())
            .map_err(|e| self.err("read link", &e))
    }

    /// Opens a regular file for reading, as a std file (for searchers).
    pub fn open(&self) -> Result<std::fs::File, ToolError> {
        let file = self.dir.open(self.content_target()).map_err(|e| self.err("open", &e))?;
        Ok(file.into_std())
    }

    /// Creates one directory (`parents`: and any missing ancestors); `false` when it
    /// already existed.
    pub fn create_dir(&self, parents: bool) -> Result<bool, ToolError> {
        if self.entry_type()? == Some(EntryType::Directory) {
            return Ok(false);
        }
        let made = if parents {
            self.dir.create_dir_all(self.content_target())
        } else {
            self.dir.create_dir(self.content_target())
        };
        made.map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => ToolError::AlreadyExists {
                path: self.given.clone(),
            },
            _ => self.err("create directory", &e),
        })?;
        Ok(true)
    }

    /// The SHA-256 of the entry when it is a regular file (symlinks not followed), read
    /// in chunks; `None` for anything else, so a FIFO or a device is never opened.
    fn regular_file_hash(&self) -> Option<String> {
        use std::io::Read;
        if !self.dir.symlink_metadata(self.target()).ok()?.is_file() {
            return None;
        }
        let mut file = self
            .dir
            .open_with(
                self.target(),
                OpenOptions::new().read(true).custom_flags(NONBLOCK_NOFOLLOW),
            )
            .ok()?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match file.read(&mut buffer) {
                Ok(0) => return Some(hex(&hasher.finalize())),
                Ok(n) => hasher.update(&buffer[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
    }

    /// Removes a file or symlink, recording its hash.
    pub fn remove_file(&self) -> Result<(), ToolError> {
        let before = self.regular_file_hash();
        self.dir
            .remove_file(self.target())
            .map_err(|e| self.err("delete", &e))?;
        self.record_hashes(before, None);
        Ok(())
    }

    /// Removes a directory and everything below it (never the root itself), returning how
    /// many entries went. Symlinks inside are removed, not followed.
    pub fn remove_dir_all(&self) -> Result<u64, ToolError> {
        if self.relative.as_os_str().is_empty() {
            return Err(ToolError::io(
                "delete",
                &self.given,
                &std::io::Error::other("the workspace root itself cannot be deleted"),
            ));
        }
        let count = self.count_entries()?;
        self.dir
            .remove_dir_all(self.target())
            .map_err(|e| self.err("delete", &e))?;
        if let Some(effects) = &self.effects {
            effects.push(ObservedEffect::File {
                path: self.display(),
                before_sha256: None,
                after_sha256: None,
            });
        }
        Ok(count)
    }

    fn count_entries(&self) -> Result<u64, ToolError> {
        let mut count = 1;
        for entry in self.dir.read_dir(self.target()).map_err(|e| self.err("list", &e))? {
            let entry = entry.map_err(|e| self.err("list", &e))?;
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                count += self.join(entry.file_name()).count_entries()?;
            } else {
                count += 1;
            }
        }
        Ok(count)
    }

    /// Renames within or across roots; refuses to replace an existing target unless asked.
    pub fn rename_to(&self, destination: &ConfinedPath, overwrite: bool) -> Result<bool, ToolError> {
        let replaced = destination.entry_type()?.is_some();
        if replaced && !overwrite {
            return Err(ToolError::AlreadyExists {
                path: destination.given.clone(),
            });
        }
        let moved = self.regular_file_hash();
        self.dir
            .rename(self.target(), &destination.dir, destination.target())
            .map_err(|e| self.err("move", &e))?;
        self.record_hashes(moved.clone(), None);
        destination.record_hashes(None, moved);
        Ok(replaced)
    }

    /// Copies a regular file, returning the bytes copied.
    pub fn copy_file_to(&self, destination: &ConfinedPath) -> Result<u64, ToolError> {
        let bytes = self.read()?;
        let before = destination.dir.read(destination.content_target()).ok();
        destination.write_atomic(&bytes, before.as_deref())?;
        Ok(bytes.len() as u64)
    }

    fn record_hashes(&self, before_sha256: Option<String>, after_sha256: Option<String>) {
        if let Some(effects) = &self.effects {
            effects.push(ObservedEffect::File {
                path: self.display(),
                before_sha256,
                after_sha256,
            });
        }
    }
}

fn kind_of(t: &cap_std::fs::FileType) -> EntryType {
    if t.is_symlink() {
        EntryType::Symlink
    } else if t.is_dir() {
        EntryType::Directory
    } else if t.is_file() {
        EntryType::File
    } else {
        EntryType::Other
    }
}
