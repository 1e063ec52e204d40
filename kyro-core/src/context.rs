//! What an executor gets besides its arguments: the workspace and the catalog it runs in.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::confined::ConfinedPath;
use crate::error::ToolError;
use crate::policy::{Access, Scope};
use crate::receipt::EffectLog;
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

/// The workspace: the directory relative paths and policy roots are resolved against.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    resources: Arc<Resources>,
}

/// Long-lived resources tools keep per workspace (a browser session), one per type,
/// dropped with the last runtime over the workspace.
#[derive(Default)]
struct Resources(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resources")
    }
}

impl Workspace {
    /// A workspace rooted at `root`, which must exist; it is canonicalized once here.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Workspace> {
        Ok(Workspace {
            root: root.as_ref().canonicalize()?,
            resources: Arc::default(),
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace's resource of type `T`, made by `init` on first use. Callers asking at
    /// the same time wait for one `init`; a failed `init` leaves nothing behind.
    pub fn resource<T: Any + Send + Sync, E>(&self, init: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E> {
        let mut map = self.resources.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = map.get(&TypeId::of::<T>())
            && let Ok(existing) = existing.clone().downcast::<T>()
        {
            return Ok(existing);
        }
        let made = Arc::new(init()?);
        map.insert(TypeId::of::<T>(), made.clone());
        Ok(made)
    }

    /// Drops the workspace's resource of type `T` (a browser that died), if it is `current`;
    /// the next [`Workspace::resource`] makes a new one.
    pub fn forget_resource<T: Any + Send + Sync>(&self, current: &Arc<T>) {
        let mut map = self.resources.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = map.get(&TypeId::of::<T>())
            && let Ok(existing) = existing.clone().downcast::<T>()
            && Arc::ptr_eq(&existing, current)
        {
            map.remove(&TypeId::of::<T>());
        }
    }
}

/// Receives a long tool's progress reports (MCP `notifications/progress` when the client
/// sent a progress token).
pub trait Progress: Send + Sync {
    /// `done` grows with every report; `total` when known.
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>);
}

/// A shareable progress receiver; compared by identity.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Progress>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

impl PartialEq for ProgressSink {
    fn eq(&self, other: &ProgressSink) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The context of one call: its scope, the catalog snapshot and where effects are recorded.
#[derive(Debug, Clone)]
pub struct ToolContext {
    scope: Scope,
    catalog: Arc<Snapshot>,
    access: Access,
    effects: Arc<EffectLog>,
    call_id: String,
    progress: Option<ProgressSink>,
    runtime: crate::runtime::Runtime,
}

impl ToolContext {
    pub(crate) fn new(
        scope: Scope,
        catalog: Arc<Snapshot>,
        access: Access,
        effects: Arc<EffectLog>,
        call_id: String,
        progress: Option<ProgressSink>,
        runtime: crate::runtime::Runtime,
    ) -> ToolContext {
        ToolContext {
            scope,
            catalog,
            access,
            effects,
            call_id,
            progress,
            runtime,
        }
    }

    /// The runtime the call runs in, for orchestration tools that make calls of their own
    /// (always through `execute_in`, under this call's scope or a narrower one).
    pub fn runtime(&self) -> &crate::runtime::Runtime {
        &self.runtime
    }

    /// Where runtime-owned state lives: `.kyro/` under the workspace (memory, graph, tasks),
    /// created when missing. Tools cannot write here through paths; only the state store
    /// does. A `.kyro` that is a symlink or not a directory is refused, so kyro's own files
    /// never land outside the workspace.
    pub fn state_dir(&self) -> Result<PathBuf, ToolError> {
        crate::receipt::state_dir(self.runtime.workspace().root())
            .map_err(|e| ToolError::io("open kyro's state directory in", ".kyro", &e))
    }

    /// Reports progress to the caller, when the caller asked for it; otherwise nothing.
    pub fn report_progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.progress {
            sink.0.report(done, total, message);
        }
    }

    /// Confines a path argument for this call: the only way a tool reaches the filesystem.
    ///
    /// Write tools get read-write access, every other tool read access; writes through the
    /// returned handle are recorded in the call's receipt.
    pub fn path(&self, path: &WorkspacePath) -> Result<ConfinedPath, ToolError> {
        self.scope
            .confine(path.as_str(), self.access)
            .map(|confined| confined.recording(self.effects.clone()))
            .map_err(|reason| ToolError::Denied {
                reason: crate::receipt::Denial::Path {
                    pointer: String::new(),
                    path: path.as_str().to_owned(),
                    reason,
                },
            })
    }

    /// The registry snapshot the call runs against (for discovery tools).
    pub fn catalog(&self) -> &Snapshot {
        &self.catalog
    }

    /// The scope the call runs in.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Where a tool records effects it causes outside the confined filesystem (processes,
    /// requests).
    pub fn effects(&self) -> &EffectLog {
        &self.effects
    }

    /// The id of this call, for linking child calls.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
}
