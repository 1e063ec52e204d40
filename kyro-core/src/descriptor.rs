//! The descriptor: everything a client, a provider or the inventory doc learns about a tool.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::effect::{Approval, Capability, Effect};
use crate::schema_text::Schema;

/// The public description of a registered tool, served unchanged by every surface.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    /// Canonical name.
    pub name: String,
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Other names the tool answers to.
    pub aliases: Vec<String>,
    /// Catalog category.
    pub category: String,
    /// Side-effect class.
    pub effect: Effect,
    /// What the tool does, for a model choosing a tool.
    pub description: String,
    /// The canonical input schema.
    pub input_schema: Schema,
    /// The canonical output schema.
    pub output_schema: Schema,
    /// MCP annotations, derived from the effect.
    pub annotations: Annotations,
    /// Capabilities a caller's scope must grant.
    pub capabilities: Vec<Capability>,
    /// An explicit approval rule, when the tool overrides the policy for its effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// Other keys accepted for arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub argument_aliases: Vec<ArgumentAlias>,
    /// Arguments holding workspace paths, confined before the tool runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path_arguments: Vec<String>,
    /// True for legacy text executors registered through the compatibility adapter.
    pub compatibility_only: bool,
    /// Whether a call may run as a task (MCP tasks extension): long work a client polls
    /// for instead of waiting on one request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task: bool,
}

/// An argument alias as served in descriptors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ArgumentAlias {
    /// The alias key.
    pub alias: String,
    /// The canonical key it stands for.
    pub field: String,
}

/// MCP tool annotations. Hints for clients; kyro's own policy never reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool does not change its environment.
    pub read_only_hint: bool,
    /// A change may destroy or overwrite data.
    pub destructive_hint: bool,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent_hint: bool,
    /// The tool reaches beyond the local machine.
    pub open_world_hint: bool,
}

impl Annotations {
    /// The annotations implied by an effect.
    pub const fn for_effect(effect: Effect) -> Annotations {
        let (read_only, destructive, idempotent, open_world) = match effect {
            Effect::Read | Effect::None => (true, false, true, false),
            Effect::Write => (false, true, false, false),
            Effect::Exec => (false, true, false, true),
            Effect::Network => (false, false, false, true),
            Effect::State => (false, false, false, false),
        };
        Annotations {
            read_only_hint: read_only,
            destructive_hint: destructive,
            idempotent_hint: idempotent,
            open_world_hint: open_world,
        }
    }

    /// The effect's annotations with the hints a tool states put over them. A tool stated
    /// read-only is never destructive.
    pub fn stated(effect: Effect, hints: Hints) -> Annotations {
        let base = Annotations::for_effect(effect);
        let pick = |stated: Option<bool>, default: bool| match stated {
            Some(value) => value,
            None => default,
        };
        let read_only = pick(hints.read_only, base.read_only_hint);
        Annotations {
            read_only_hint: read_only,
            destructive_hint: !read_only && pick(hints.destructive, base.destructive_hint),
            idempotent_hint: pick(hints.idempotent, base.idempotent_hint),
            open_world_hint: pick(hints.open_world, base.open_world_hint),
        }
    }
}

/// The tools a call can see, by descriptor: what discovery tools search and what a tool
/// checks before it makes a child call. A registry snapshot is one.
pub trait Catalog: Send + Sync {
    /// The descriptor of the tool named `name` (its canonical name or an alias).
    fn describe(&self, name: &str) -> Option<&ToolDescriptor>;
    /// Every tool's descriptor, by name.
    fn descriptors(&self) -> Box<dyn Iterator<Item = &ToolDescriptor> + '_>;
}

impl ToolDescriptor {
    /// The path arguments of a validated call, with their JSON pointers.
    pub(crate) fn paths_in<'a>(&self, arguments: &'a Value) -> Vec<(String, &'a str)> {
        let mut out = Vec::new();
        for key in &self.path_arguments {
            match arguments.get(key) {
                Some(Value::String(path)) => out.push((format!("/{key}"), path.as_str())),
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(path) = item.as_str() {
                            out.push((format!("/{key}/{i}"), path));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The MCP annotation hints a `#[tool(...)]` states (`read_only`, `destructive`,
/// `idempotent`, `open_world`); `None` takes the effect's default
/// ([`crate::Annotations::for_effect`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// Changes nothing.
    pub read_only: Option<bool>,
    /// May destroy or overwrite data.
    pub destructive: Option<bool>,
    /// A repeat with the same arguments changes nothing more.
    pub idempotent: Option<bool>,
    /// Reaches outside the workspace and the machine.
    pub open_world: Option<bool>,
}

/// Whether `name` can name a tool: lowercase ASCII letters, digits, `_` and `.`, starting
/// with a letter, at most 64 bytes.
pub(crate) fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'.')
}
