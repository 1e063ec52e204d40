//! The call boundary: every surface calls [`Runtime::execute_call`], and nothing else runs
//! a tool.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::arguments::{json_type, rewrite_aliases};
use crate::context::{ToolContext, Workspace};
use crate::error::ToolError;
use crate::registry::Registry;
use crate::schema::Violation;

/// A call as every surface hands it over: a tool name and a JSON arguments value.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Canonical name or alias.
    pub tool: String,
    /// The arguments exactly as the caller sent them; must be an object.
    pub arguments: Value,
}

impl Call {
    /// A call of `tool` with `arguments`.
    pub fn new(tool: impl Into<String>, arguments: Value) -> Call {
        Call {
            tool: tool.into(),
            arguments,
        }
    }
}

/// The kind of an outcome, as a stable snake_case word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The tool ran and returned a result.
    Ok,
    /// The arguments were refused before anything ran.
    InvalidArguments,
    /// No tool has that name or alias.
    UnknownTool,
    /// The tool ran and failed.
    ExecutionFailed,
}

/// The typed result of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool's result, valid against its output schema.
    Ok {
        /// Canonical tool name.
        tool: String,
        /// The result object.
        result: Value,
    },
    /// Every reason the arguments were refused.
    InvalidArguments {
        /// Canonical tool name.
        tool: String,
        /// Violations, sorted by pointer.
        violations: Vec<Violation>,
    },
    /// No such tool.
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Names that look close, best first.
        suggestions: Vec<String>,
    },
    /// The executor failed.
    ExecutionFailed {
        /// Canonical tool name.
        tool: String,
        /// What went wrong.
        error: ToolError,
    },
}

impl Outcome {
    /// The outcome's kind.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Ok { .. } => OutcomeKind::Ok,
            Outcome::InvalidArguments { .. } => OutcomeKind::InvalidArguments,
            Outcome::UnknownTool { .. } => OutcomeKind::UnknownTool,
            Outcome::ExecutionFailed { .. } => OutcomeKind::ExecutionFailed,
        }
    }

    /// The wire form: `{"outcome": kind, "tool"?, "result"?, "error"?}`.
    pub fn to_json(&self) -> Value {
        match self {
            Outcome::Ok { tool, result } => {
                json!({"outcome": self.kind(), "tool": tool, "result": result})
            }
            Outcome::InvalidArguments { tool, violations } => json!({
                "outcome": self.kind(),
                "tool": tool,
                "error": {"message": invalid_message(violations), "violations": violations},
            }),
            Outcome::UnknownTool { name, suggestions } => json!({
                "outcome": self.kind(),
                "error": {"message": format!("no tool is named `{name}`"), "name": name, "suggestions": suggestions},
            }),
            Outcome::ExecutionFailed { tool, error } => json!({
                "outcome": self.kind(),
                "tool": tool,
                "error": error.to_json(),
            }),
        }
    }
}

fn invalid_message(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "arguments"
            } else {
                &v.pointer
            };
            format!("{at}: {}", v.message)
        })
        .collect();
    format!("invalid arguments: {}", parts.join("; "))
}

/// The runtime: a registry and the workspace calls run in.
#[derive(Debug, Clone)]
pub struct Runtime {
    registry: Arc<Registry>,
    workspace: Workspace,
}

impl Runtime {
    /// A runtime over `registry` in `workspace`.
    pub fn new(registry: Arc<Registry>, workspace: Workspace) -> Runtime {
        Runtime {
            registry,
            workspace,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Runs one call: resolve, rewrite aliases, validate, deserialize, execute, check the
    /// result. Nothing executes unless every step before it passed.
    pub async fn execute_call(&self, call: Call) -> Outcome {
        let snapshot = self.registry.snapshot();
        let Some(tool) = snapshot.get(&call.tool).cloned() else {
            return Outcome::UnknownTool {
                suggestions: suggest(&call.tool, snapshot.descriptors().map(|d| d.name.as_str())),
                name: call.tool,
            };
        };
        let name = tool.descriptor().name.clone();
        let mut arguments: Map<String, Value> = match call.arguments {
            Value::Object(map) => map,
            other => {
                return Outcome::InvalidArguments {
                    tool: name,
                    violations: vec![Violation::new(
                        "",
                        format!(
                            "arguments must be a JSON object, found {}",
                            json_type(&other)
                        ),
                    )],
                };
            }
        };
        let mut violations = rewrite_aliases(&mut arguments, &tool.descriptor().argument_aliases);
        let arguments = Value::Object(arguments);
        if violations.is_empty() {
            violations = tool.input().violations(&arguments);
        }
        if !violations.is_empty() {
            return Outcome::InvalidArguments {
                tool: name,
                violations,
            };
        }
        let cx = ToolContext::new(self.workspace.clone(), snapshot.clone());
        match tool.executor().run(arguments, &cx).await {
            Ok(result) => {
                if let Some(first) = tool.output().violations(&result).into_iter().next() {
                    return Outcome::ExecutionFailed {
                        tool: name,
                        error: ToolError::Output {
                            message: format!("{}: {}", first.pointer, first.message),
                        },
                    };
                }
                Outcome::Ok { tool: name, result }
            }
            Err(error) => Outcome::ExecutionFailed { tool: name, error },
        }
    }
}

/// Names within a small edit distance of `wanted`, closest first.
fn suggest<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = names
        .map(|n| (edit_distance(wanted, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3) || n.contains(wanted))
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(3)
        .map(|(_, n)| n.to_owned())
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}
