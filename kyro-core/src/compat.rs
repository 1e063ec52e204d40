//! The compatibility edge for legacy text executors (`fn(String) -> String`).
//!
//! A legacy executor is wrapped here into a tool whose input is `{"input": string}` and
//! whose output is `{"output": string}`, and is marked compatibility-only in its descriptor.
//! The registry has no other way in for text executors, and the native path never calls
//! this module.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::descriptor::{Annotations, ToolDescriptor};
use crate::effect::Effect;
use crate::executor::Executor;
use crate::registry::{RegistryError, ToolDefinition};

static ADAPTER_CALLS: AtomicU64 = AtomicU64::new(0);

/// How many times any legacy adapter translated a call, process-wide. Tests use it to prove
/// the native path never goes through an adapter.
pub fn adapter_calls() -> u64 {
    ADAPTER_CALLS.load(Ordering::SeqCst)
}

/// A legacy tool: a name, a description and a text function.
pub struct LegacyTextTool {
    name: String,
    description: String,
    effect: Effect,
    run: Arc<dyn Fn(String) -> String + Send + Sync>,
}

impl LegacyTextTool {
    /// Wraps `run`; its effect is `exec` unless [`LegacyTextTool::effect`] says otherwise,
    /// since nothing is known about what a text function does.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        run: impl Fn(String) -> String + Send + Sync + 'static,
    ) -> LegacyTextTool {
        LegacyTextTool {
            name: name.into(),
            description: description.into(),
            effect: Effect::Exec,
            run: Arc::new(run),
        }
    }

    /// Declares the effect of the wrapped function.
    pub fn effect(mut self, effect: Effect) -> LegacyTextTool {
        self.effect = effect;
        self
    }

    /// The definition to register.
    pub fn into_definition(self) -> Result<ToolDefinition, RegistryError> {
        let descriptor = ToolDescriptor {
            name: self.name,
            title: None,
            aliases: Vec::new(),
            category: "compatibility".into(),
            effect: self.effect,
            description: format!("[compatibility-only] {}", self.description),
            input_schema: json!({
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The text passed to the legacy executor."}},
                "required": ["input"],
                "additionalProperties": false
            })
            .into(),
            output_schema: json!({
                "type": "object",
                "properties": {"output": {"type": "string", "description": "The text the legacy executor returned."}},
                "required": ["output"],
                "additionalProperties": false
            })
            .into(),
            annotations: Annotations::for_effect(self.effect),
            capabilities: self.effect.default_capabilities().to_vec(),
            approval: None,
            argument_aliases: Vec::new(),
            path_arguments: Vec::new(),
            compatibility_only: true,
            task: false,
        };
        let adapter = TextAdapter { run: self.run };
        let executor = Executor::Custom(Arc::new(move |arguments, _cx| {
            let result = adapter.call(&arguments);
            Box::pin(async move { Ok(result) })
        }));
        ToolDefinition::from_parts(descriptor, executor)
    }
}

/// Translates a validated `{"input": ...}` object to the text function and back.
#[derive(Clone)]
pub(crate) struct TextAdapter {
    run: Arc<dyn Fn(String) -> String + Send + Sync>,
}

impl TextAdapter {
    pub(crate) fn call(&self, arguments: &Value) -> Value {
        ADAPTER_CALLS.fetch_add(1, Ordering::SeqCst);
        let input = arguments.get("input").and_then(Value::as_str).unwrap_or_default();
        json!({ "output": (self.run)(input.to_owned()) })
    }
}

impl std::fmt::Debug for TextAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextAdapter")
    }
}
