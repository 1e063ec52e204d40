//! The traits a tool implements and the constant entry the catalog holds for it.

use std::future::Future;
use std::pin::Pin;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::check::{Check, Checker, Rules};
use crate::context::ToolContext;
use crate::descriptor::Hints;
use crate::effect::{Approval, Capability, Effect};
use crate::error::ToolError;
use crate::schema;

/// A boxed, sendable future, the return type of type-erased executors.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The executor of a tool: receives the validated, deserialized arguments.
///
/// ```ignore
/// impl Execute for ReadFile {
///     type Output = FileWindow;
///     async fn run(self, cx: &ToolContext) -> Result<FileWindow, ToolError> { /* ... */ }
/// }
/// ```
pub trait Execute: Sized + Send {
    /// The result; its schema becomes the tool's `outputSchema`. It must be an object
    /// (MCP's `structuredContent` is one): a struct carrying `#[output]`, or a
    /// `serde_json::Map`.
    type Output: Serialize + JsonSchema + Send + ObjectOutput;

    /// Runs the call. Nothing reaches here before the runtime validated and authorized it.
    fn run(self, cx: &ToolContext) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// What the call will do, shown under its arguments to the person asked to approve it
    /// (the diff a write will make, the command line a process will run). Called only when
    /// an approval is needed, with a context that may read and never write; `None` (the
    /// default) shows the arguments alone. Keep it bounded: a few hundred lines at most.
    fn preview(&self, cx: &ToolContext) -> Option<String> {
        let _ = cx;
        None
    }

    /// The decision the policy's own rules for this tool give this call, in place of its
    /// effect's rule (a shell command matching a `[[tools.shell.rules]]` argv prefix, say).
    /// Read from `scope`'s policy tables (the person who wrote the policy decides, the
    /// tool only matches), or `Ask` for a call the tool knows loses data (`git_stash`
    /// drop). A rule the policy gives the tool by name still wins over a laxer one here,
    /// and a deny is never lifted. `None` (the default): the effect's rule applies.
    fn rule(&self, scope: &crate::policy::Scope) -> Option<crate::policy::MatchedRule> {
        let _ = scope;
        None
    }

    /// The result as text meant for reading (a model that is handed only the text block
    /// reads this instead of escaped JSON): file lines, `path:line: text`, a diff. `None`
    /// (the default) leaves it to the server's default rendering. Keep what the result holds;
    /// the typed result still goes out as `structuredContent`.
    fn text(output: &Self::Output) -> Option<String> {
        let _ = output;
        None
    }

    /// The policy tables (`[tools.<name>]`) this tool reads through
    /// [`Scope::settings`](crate::policy::Scope::settings): each is checked against its type
    /// when the policy loads, and a table no registered tool declares is refused.
    const SETTINGS: &'static [crate::policy::SettingsTable] = &[];
}

/// A type that serializes to a JSON object, as every tool result must: `#[output]` marks
/// a struct with named fields; a `serde_json::Map` is one. A non-object output (a string, a
/// list, `()`) is refused at compile time here, not when the catalog registers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output: a tool returns a JSON object",
    label = "not marked as an object",
    note = "return a struct with named fields carrying `#[output]` (or a `serde_json::Map<String, Value>`); wrap a list or a scalar in a field"
)]
pub trait ObjectOutput {}

impl ObjectOutput for serde_json::Map<String, Value> {}

/// Implemented by `#[tool]`: the static facts about a tool. Requires [`Execute`], so a
/// `#[tool]` struct without an executor does not compile.
pub trait Tool: Execute + DeserializeOwned + JsonSchema + 'static {
    /// Name, aliases, effect, description and the rest, as written in the attribute.
    const SPEC: ToolSpec;
    /// The arguments' check `#[tool]` generates ([`crate::check`]): every violation with
    /// its pointer, in one pass, without interpreting the schema. `None`: the schema's
    /// validator checks them.
    const CHECK: Option<crate::check::CheckFn> = None;
}

/// The attribute's facts about a tool, as constants.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Canonical name, `^[a-z][a-z0-9_]{0,63}$`.
    pub name: &'static str,
    /// Human-readable title, if given.
    pub title: Option<&'static str>,
    /// Other names the tool answers to.
    pub aliases: &'static [&'static str],
    /// Catalog category (files, shell, ...).
    pub category: &'static str,
    /// The side effect class.
    pub effect: Effect,
    /// An explicit approval rule; `None` leaves it to the policy for the effect.
    pub approval: Option<Approval>,
    /// Whether a call may run as a task (`#[tool(task = "optional")]`): a client that
    /// declared the MCP tasks extension gets a task id at once and polls for the result.
    pub task: bool,
    /// Whether the executor never blocks (`#[tool(inline = true)]`): it then runs on the
    /// task serving the call instead of the blocking pool.
    pub inline: bool,
    /// Capabilities required; `None` means the effect's default.
    pub capabilities: Option<&'static [Capability]>,
    /// The struct's doc comment.
    pub description: &'static str,
    /// Argument aliases: another key accepted for a field.
    pub arg_aliases: &'static [ArgAlias],
    /// Fields typed `WorkspacePath` (or a list of them): confined at authorization.
    pub path_args: &'static [&'static str],
    /// Annotation hints stated in the attribute; the rest follow from the effect.
    pub hints: Hints,
    /// The crate that declared the tool: a server of an author's catalog goes by its name.
    pub package: Package,
}

/// A crate's name, version and description, as Cargo gave them when it was compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    /// `CARGO_PKG_NAME`.
    pub name: &'static str,
    /// `CARGO_PKG_VERSION`.
    pub version: &'static str,
    /// `CARGO_PKG_DESCRIPTION` (empty when the manifest has none).
    pub description: &'static str,
}

/// Another key accepted for an argument, rewritten to the field's key before validation.
#[derive(Debug, Clone, Copy)]
pub struct ArgAlias {
    /// The alias key.
    pub alias: &'static str,
    /// The canonical field key.
    pub field: &'static str,
}

/// A call's arguments deserialized once into the tool's own type, after its check passed:
/// the policy's rule, the approver's preview and the executor all take this one value.
pub struct Typed(Box<dyn std::any::Any + Send>);

impl std::fmt::Debug for Typed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Typed(..)")
    }
}

impl Typed {
    pub(crate) fn new<T: Tool>(typed: T) -> Typed {
        Typed(Box::new(typed))
    }

    fn of<T: Tool>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

/// A type-erased deserialization: the checked JSON arguments in, the tool's type out (or
/// serde's error, which the catalog tests rule out once the check passed).
pub type PrepareFn = fn(&Value) -> Result<Typed, String>;

/// A type-erased executor: the typed arguments in, the JSON result out.
pub type NativeFn = for<'a> fn(Typed, &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>>;

/// A type-erased preview: the typed arguments in, text for the approver out.
pub type PreviewFn = for<'a> fn(&'a Typed, &'a ToolContext) -> Option<String>;

/// A type-erased rule lookup: the typed arguments in, the policy rule's decision out.
pub type RuleFn = for<'a> fn(&'a Typed, &'a crate::policy::Scope) -> Option<crate::policy::MatchedRule>;

/// One row of a catalog: the spec plus the functions derived from the Rust types.
#[derive(Clone, Copy)]
pub struct ToolEntry {
    /// The attribute's facts.
    pub spec: ToolSpec,
    /// Generates the raw input schema from the argument struct.
    pub input_schema: fn() -> Value,
    /// Generates the raw output schema from `Execute::Output`.
    pub output_schema: fn() -> Value,
    /// Deserializes the checked arguments, once per call.
    pub prepare: PrepareFn,
    /// Runs.
    pub execute: NativeFn,
    /// Previews, for approvals.
    pub preview: PreviewFn,
    /// Matches the policy's rules for the tool, for authorization.
    pub rule: RuleFn,
    /// Deserializes only, reporting serde's error: lets tests prove that whatever the
    /// validator accepts, serde accepts too.
    pub deserializes: fn(&Value) -> Result<(), String>,
    /// The policy tables the tool reads ([`Execute::SETTINGS`]).
    pub settings: &'static [crate::policy::SettingsTable],
    /// The generated check of its arguments ([`Tool::CHECK`]).
    pub check: Option<crate::check::CheckFn>,
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// The entry of a `#[tool]` type.
    pub const fn of<T: Tool>() -> ToolEntry {
        ToolEntry {
            spec: T::SPEC,
            input_schema: schema::generate_input::<T>,
            output_schema: schema::generate_output::<T::Output>,
            prepare: prepare_native::<T>,
            execute: execute_native::<T>,
            preview: preview_native::<T>,
            rule: rule_native::<T>,
            deserializes: deserializes::<T>,
            settings: <T as Execute>::SETTINGS,
            check: T::CHECK,
        }
    }
}

fn prepare_native<T: Tool>(arguments: &Value) -> Result<Typed, String> {
    T::deserialize(arguments)
        .map(|typed| Typed(Box::new(typed)))
        .map_err(|e| e.to_string())
}

fn execute_native<T: Tool>(typed: Typed, cx: &ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
    Box::pin(async move {
        let typed: T = *typed.0.downcast::<T>().map_err(|_| ToolError::ArgumentsDisagree {
            message: "the arguments were prepared for another tool".into(),
        })?;
        let output = typed.run(cx).await?;
        cx.keep_text(T::text(&output));
        serde_json::to_value(&output).map_err(|e| ToolError::Output { message: e.to_string() })
    })
}

fn preview_native<T: Tool>(typed: &Typed, cx: &ToolContext) -> Option<String> {
    typed.of::<T>()?.preview(cx)
}

fn rule_native<T: Tool>(typed: &Typed, scope: &crate::policy::Scope) -> Option<crate::policy::MatchedRule> {
    typed.of::<T>()?.rule(scope)
}

fn deserializes<T: Tool>(arguments: &Value) -> Result<(), String> {
    T::deserialize(arguments).map(drop).map_err(|e| e.to_string())
}

/// A tool's generated check ([`crate::Tool::CHECK`]): its arguments typed in the one pass
/// that checked them, or every violation; `None` when its check is incomplete and its
/// schema's validator (or serde) decides.
pub type CheckFn = fn(&Value) -> Option<Result<Typed, Vec<crate::schema::Violation>>>;

/// The check of a tool's whole arguments object, and the arguments typed in the same pass
/// (serde reads them when a part cannot be taken; it agrees with the check, which the
/// catalog tests hold).
pub fn tool_arguments<T: Tool + Check>(value: &Value) -> Result<Typed, Vec<crate::schema::Violation>> {
    let mut c = Checker::new();
    let taken = T::take(value, &Rules::NONE, &mut c);
    if c.found() > 0 {
        return Err(c.into_violations());
    }
    match taken {
        Some(typed) => Ok(Typed::new(typed)),
        None => T::deserialize(value)
            .map(Typed::new)
            .map_err(|e| vec![crate::schema::Violation::new("", e.to_string())]),
    }
}
