//! An executor as the registry keeps it: a catalog tool's generated glue (its check, its
//! one deserialization, its rule, preview and run), or a handler of JSON defined at run time.

use std::sync::Arc;

use serde_json::Value;

use crate::check::CheckFn;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::policy::{MatchedRule, Scope};
use crate::schema::Violation;
use crate::tool::{BoxFuture, NativeFn, PrepareFn, PreviewFn, RuleFn, Typed};

/// An executor as the registry keeps it.
#[derive(Clone)]
pub(crate) enum Executor {
    /// A catalog tool, through its generated glue.
    Builtin(Native),
    /// A custom native tool registered at run time (and a legacy text function behind its
    /// adapter, which is one); made only with the `interpreter` feature.
    #[cfg_attr(not(feature = "interpreter"), allow(dead_code))]
    Custom(Arc<CustomFn>),
}

/// A catalog tool's generated functions.
#[derive(Clone, Copy)]
pub(crate) struct Native {
    pub(crate) prepare: PrepareFn,
    pub(crate) run: NativeFn,
    pub(crate) preview: PreviewFn,
    pub(crate) rule: RuleFn,
    pub(crate) check: Option<CheckFn>,
    /// Runs on the task serving the call, not the blocking pool.
    pub(crate) inline: bool,
}

pub(crate) type CustomFn =
    dyn for<'a> Fn(Value, &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>> + Send + Sync;

/// A call's arguments as its executor takes them: a catalog tool's typed once; a custom
/// tool takes the checked JSON object itself, handed to [`Executor::run`] (never copied).
#[derive(Debug)]
pub(crate) enum Prepared {
    /// Deserialized into the tool's type.
    Typed(Typed),
    /// The checked JSON object, as it is.
    Json,
}

impl Executor {
    /// Whether the executor never blocks and runs where the call is served.
    pub(crate) fn inline(&self) -> bool {
        matches!(self, Executor::Builtin(Native { inline: true, .. }))
    }

    /// The generated check, when the tool has a complete one: the typed arguments, or every
    /// violation.
    pub(crate) fn check(&self, arguments: &Value) -> Option<Result<Typed, Vec<Violation>>> {
        match self {
            Executor::Builtin(Native { check: Some(check), .. }) => check(arguments),
            _ => None,
        }
    }

    /// The checked arguments as the executor takes them, when the check did not type them:
    /// deserialized once, here.
    pub(crate) fn prepare(&self, arguments: &Value) -> Result<Prepared, ToolError> {
        match self {
            Executor::Builtin(native) => match (native.prepare)(arguments) {
                Ok(typed) => Ok(Prepared::Typed(typed)),
                Err(message) => Err(ToolError::ArgumentsDisagree { message }),
            },
            Executor::Custom(_) => Ok(Prepared::Json),
        }
    }

    /// What the call will change, for the person asked to approve it.
    pub(crate) fn preview(&self, prepared: &Prepared, cx: &ToolContext) -> Option<String> {
        match (self, prepared) {
            (Executor::Builtin(native), Prepared::Typed(typed)) => (native.preview)(typed, cx),
            _ => None,
        }
    }

    /// The decision the policy's rules for the tool give this call, if one matches.
    pub(crate) fn rule(&self, prepared: &Prepared, scope: &Scope) -> Option<MatchedRule> {
        match (self, prepared) {
            (Executor::Builtin(native), Prepared::Typed(typed)) => (native.rule)(typed, scope),
            _ => None,
        }
    }

    pub(crate) fn run<'a>(
        &'a self,
        prepared: Prepared,
        arguments: Value,
        cx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        match (self, prepared) {
            (Executor::Builtin(native), Prepared::Typed(typed)) => (native.run)(typed, cx),
            (Executor::Custom(f), Prepared::Json) => f(arguments, cx),
            _ => Box::pin(async {
                Err(ToolError::ArgumentsDisagree {
                    message: "the arguments were prepared for another executor".into(),
                })
            }),
        }
    }
}
