//! What an executor gets besides its arguments: the workspace and the catalog it runs in.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::caller::Caller;
use crate::confined::ConfinedPath;
use crate::denial::{Access, Denial, ScopeError};
use crate::descriptor::Catalog;
use crate::effect::Effect;
use crate::error::ToolError;
use crate::observed::EffectLog;
use crate::outcome::{Call, ProgressSink};
use crate::policy::{ApprovalToken, Scope, ScopeRequest};
use crate::receipt::Execution;
use crate::stop::StopSignal;

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

impl crate::check::Check for WorkspacePath {
    /// A path is never empty, as its schema says (`minLength: 1`).
    fn check(value: &serde_json::Value, rules: &crate::check::Rules, c: &mut crate::check::Checker) {
        let least = Some(rules.min_length.map_or(1, |min| min.max(1)));
        crate::check::string(
            value,
            &crate::check::Rules {
                min_length: least,
                ..*rules
            },
            c,
        );
    }
    fn take(value: &serde_json::Value, rules: &crate::check::Rules, c: &mut crate::check::Checker) -> Option<Self> {
        Self::check(value, rules, c);
        value.as_str().map(WorkspacePath::new)
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

/// What a tool may ask of the runtime it runs in: child calls and its workspace. The
/// runtime implements it; a tool never holds the runtime itself, so it cannot run a call
/// outside its own scope or approve one.
pub(crate) trait Dispatch: Send + Sync {
    /// Runs `call` in `scope`, its receipt linked to `parent`'s call, stopped with it.
    fn execute<'a>(
        &'a self,
        call: Call,
        scope: &'a Scope,
        parent: (&'a str, &'a StopSignal),
    ) -> std::pin::Pin<Box<dyn Future<Output = Execution> + Send + 'a>>;
    /// The fingerprint an approval of `tool` with `arguments` in `scope` is bound to.
    fn fingerprint(&self, tool: &str, arguments: &serde_json::Value, scope: &Scope) -> String;
    /// The workspace.
    fn workspace(&self) -> &Workspace;
}

/// A scope narrowed from a call's own by [`ToolContext::narrow`]: the only scope other
/// than its own a tool can run calls in.
#[derive(Debug, Clone)]
pub struct Narrowed(Scope);

impl Narrowed {
    /// The narrowed scope.
    pub fn scope(&self) -> &Scope {
        &self.0
    }
}

/// The context of one call: its scope, the catalog snapshot, the paths authorization
/// confined, and where effects are recorded.
#[derive(Clone)]
pub struct ToolContext {
    scope: Scope,
    catalog: Arc<dyn Catalog>,
    access: Access,
    effect: Effect,
    effects: Arc<EffectLog>,
    call_id: String,
    caller: Caller,
    progress: Option<ProgressSink>,
    confined: Arc<HashMap<String, ConfinedPath>>,
    forwarded: Arc<AtomicBool>,
    /// Let through by a person's approval of exactly these arguments: the only
    /// authorization its forwarded call carries. A rule, a grant or a standing approval
    /// of this tool let it through without anyone seeing these arguments (a grant of
    /// `mcp_call` is not a grant of every upstream tool).
    approved_exactly: bool,
    stop: StopSignal,
    output_limit: u64,
    /// The result's text, from the tool's `Execute::text`.
    text: Arc<Mutex<Option<String>>>,
    dispatch: Arc<dyn Dispatch>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("scope", &self.scope)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

/// What the runtime hands a call's context.
pub(crate) struct CallParts {
    pub scope: Scope,
    pub catalog: Arc<dyn Catalog>,
    pub effect: Effect,
    pub access: Access,
    pub effects: Arc<EffectLog>,
    pub call_id: String,
    pub caller: Caller,
    pub progress: Option<ProgressSink>,
    pub confined: HashMap<String, ConfinedPath>,
    pub approved_exactly: bool,
    pub stop: StopSignal,
    pub output_limit: u64,
    pub text: Arc<Mutex<Option<String>>>,
}

impl ToolContext {
    pub(crate) fn new(parts: CallParts, dispatch: Arc<dyn Dispatch>) -> ToolContext {
        ToolContext {
            scope: parts.scope,
            catalog: parts.catalog,
            access: parts.access,
            effect: parts.effect,
            effects: parts.effects,
            call_id: parts.call_id,
            caller: parts.caller,
            progress: parts.progress,
            confined: Arc::new(parts.confined),
            forwarded: Arc::default(),
            approved_exactly: parts.approved_exactly,
            stop: parts.stop,
            output_limit: parts.output_limit,
            text: parts.text,
            dispatch,
        }
    }

    /// Who is asking: the local user, or the caller an HTTP token or OAuth subject names.
    /// Established where the call came in, never from its arguments.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The workspace the call runs in (for resources a tool keeps per workspace).
    pub fn workspace(&self) -> &Workspace {
        self.dispatch.workspace()
    }

    /// Runs a call of another tool under this call's scope, its receipt linked to this
    /// call's. It goes through the whole boundary (validation, capabilities, paths,
    /// approvals) and carries no approval: a tool cannot approve its own calls, so a call
    /// that needs one comes back `approval_required`.
    pub async fn call(&self, call: Call) -> Execution {
        self.dispatch
            .execute(
                call.unapproved().by(self.caller.clone()),
                &self.scope,
                (&self.call_id, &self.stop),
            )
            .await
    }

    /// Like [`ToolContext::call`], in a scope narrowed from this call's own
    /// ([`ToolContext::narrow`]).
    pub async fn call_in(&self, call: Call, scope: &Narrowed) -> Execution {
        self.dispatch
            .execute(
                call.unapproved().by(self.caller.clone()),
                &scope.0,
                (&self.call_id, &self.stop),
            )
            .await
    }

    /// A child of this call's scope (fewer capabilities, narrower roots, one level deeper).
    pub fn narrow(&self, request: &ScopeRequest) -> Result<Narrowed, ScopeError> {
        self.scope.child(request).map(Narrowed)
    }

    /// Runs the one call this call stands for (an aggregating tool forwarding its call to
    /// the tool that does the work). It goes through the whole boundary and is decided by
    /// the forwarded tool's own rules, capabilities and grants; it carries this call's
    /// authorization only when a person approved this call's exact arguments, which cover
    /// the forwarded call's too, and the forwarded tool has this tool's effect. A call let
    /// through by a rule, a grant or a standing approval (a session's) carries none. Once
    /// per call; a second forward, or one to a tool of another effect, carries no approval.
    pub async fn forward(&self, tool: &str, arguments: serde_json::Value) -> Execution {
        let same_effect = self.catalog.describe(tool).is_some_and(|d| d.effect == self.effect);
        let first = !self.forwarded.swap(true, Ordering::SeqCst);
        let mut call = Call::new(tool, arguments).by(self.caller.clone());
        if same_effect && first && self.approved_exactly {
            let fingerprint = self.dispatch.fingerprint(tool, &call.arguments, &self.scope);
            call = call.approved(ApprovalToken::for_fingerprint(&fingerprint));
        }
        self.dispatch
            .execute(call, &self.scope, (&self.call_id, &self.stop))
            .await
    }

    /// Where runtime-owned state lives: `.kyro/` under the workspace (memory, graph, tasks),
    /// created when missing. Tools cannot write here through paths; only the state store
    /// does. A `.kyro` that is a symlink or not a directory is refused, so kyro's own files
    /// never land outside the workspace.
    pub fn state_dir(&self) -> Result<PathBuf, ToolError> {
        crate::receipt::state_dir(self.workspace().root())
            .map_err(|e| ToolError::io("open kyro's state directory in", ".kyro", &e))
    }

    /// Reports progress to the caller, when the caller asked for it; otherwise nothing.
    pub fn report_progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.progress {
            sink.0.report(done, total, message);
        }
    }

    /// Confines a path for this call: the only way a tool reaches the filesystem.
    ///
    /// A path argument comes back as authorization confined it before the call ran (the
    /// same handle, not a second resolution); a path the tool found while running (inside
    /// a patch, say) is confined now, and a refusal is the call's `denied` outcome. Write
    /// tools get read-write access, every other tool read access; writes through the
    /// returned handle are recorded in the call's receipt.
    pub fn path(&self, path: &WorkspacePath) -> Result<ConfinedPath, ToolError> {
        if let Some(confined) = self.confined.get(path.as_str()) {
            return Ok(confined.clone().recording(self.effects.clone()));
        }
        self.scope
            .confine(path.as_str(), self.access)
            .map(|confined| confined.recording(self.effects.clone()))
            .map_err(|reason| ToolError::Denied {
                reason: Denial::Path {
                    pointer: String::new(),
                    path: path.as_str().to_owned(),
                    reason,
                },
            })
    }

    /// The tools of the registry snapshot the call runs against (for discovery tools, and
    /// to check a tool before calling it).
    pub fn catalog(&self) -> &dyn Catalog {
        &*self.catalog
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

    /// The call's stop signal: set when its caller gives up (time limit, cancellation).
    /// Blocking work checks it or registers what ends it; async work needs nothing.
    pub fn stop(&self) -> &StopSignal {
        &self.stop
    }

    /// The most bytes the call's serialized result may hold (the policy's
    /// `max_output_bytes`): a tool that builds a large result stops adding to it here and
    /// says it was cut, rather than building what the runtime would refuse.
    pub fn output_limit(&self) -> u64 {
        self.output_limit
    }

    /// Keeps the result's text for the runtime (the generated glue calls this).
    pub(crate) fn keep_text(&self, text: Option<String>) {
        *self.text.lock().unwrap_or_else(|e| e.into_inner()) = text;
    }

    /// The id of this call, for linking child calls.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
}
