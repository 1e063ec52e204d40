//! What an executor gets besides its arguments: the workspace and the catalog it runs in.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::registry::Snapshot;

/// A path argument, relative to the workspace root. Resolved only through [`Workspace`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// Wraps a path string as given by a caller.
    pub fn new(path: impl Into<String>) -> Self {
        WorkspacePath(path.into())
    }

    /// The path as the caller wrote it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl JsonSchema for WorkspacePath {
    fn schema_name() -> Cow<'static, str> {
        "WorkspacePath".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "minLength": 1 })
    }
}

/// The directory tree a call may touch.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// A workspace rooted at `root`, which must exist; it is canonicalized once here.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Workspace> {
        Ok(Workspace {
            root: root.as_ref().canonicalize()?,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a workspace path to a host path inside the root.
    ///
    /// Refuses absolute paths outside the root, `..` that climbs above it, and symlinks
    /// (anywhere along the existing prefix) that point out of it. Containment is checked
    /// component by component, so `/w/root-evil` is not inside `/w/root`.
    pub fn resolve(&self, path: &WorkspacePath) -> Result<PathBuf, ToolError> {
        let outside = || ToolError::OutsideWorkspace {
            path: path.as_str().to_owned(),
        };
        let given = Path::new(path.as_str());
        let relative = if given.is_absolute() {
            given.strip_prefix(&self.root).map_err(|_| outside())?
        } else {
            given
        };
        let mut lexical = self.root.clone();
        for component in relative.components() {
            match component {
                Component::Normal(part) => lexical.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if lexical == self.root {
                        return Err(outside());
                    }
                    lexical.pop();
                }
                Component::RootDir | Component::Prefix(_) => return Err(outside()),
            }
        }
        // Follow symlinks on the part that exists and check it stays inside.
        let mut existing = lexical.as_path();
        let mut rest = Vec::new();
        loop {
            match existing.canonicalize() {
                Ok(real) => {
                    if !real.starts_with(&self.root) {
                        return Err(outside());
                    }
                    let mut resolved = real;
                    for part in rest.iter().rev() {
                        resolved.push(part);
                    }
                    return Ok(resolved);
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    // A dangling symlink is not "missing": refuse to write through it.
                    if existing.symlink_metadata().is_ok() {
                        return Err(outside());
                    }
                    match (existing.parent(), existing.file_name()) {
                        (Some(parent), Some(name)) => {
                            rest.push(name.to_owned());
                            existing = parent;
                        }
                        _ => return Err(outside()),
                    }
                }
                Err(err) => return Err(ToolError::io("resolve", path.as_str(), &err)),
            }
        }
    }

    /// The path of `host` relative to the root, with `/` separators, for results.
    pub fn display(&self, host: &Path) -> String {
        match host.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
            Err(_) => host.to_string_lossy().into_owned(),
        }
    }
}

/// The context of one call.
#[derive(Debug, Clone)]
pub struct ToolContext {
    workspace: Workspace,
    catalog: Arc<Snapshot>,
}

impl ToolContext {
    /// A context for a call against `catalog` inside `workspace`.
    pub fn new(workspace: Workspace, catalog: Arc<Snapshot>) -> ToolContext {
        ToolContext { workspace, catalog }
    }

    /// The workspace of the call.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The registry snapshot the call runs against (for discovery tools).
    pub fn catalog(&self) -> &Snapshot {
        &self.catalog
    }
}
