//! Compatibility adapters at the edges: legacy text tools (from `kyro_core::compat`) and
//! the flat list of tool names older agents expect. Nothing on the native path calls them.

pub use kyro_core::compat::*;

/// The flat list of canonical tool names a snapshot serves, sorted (the seed's
/// `AVAILABLE_TOOLS`): for agents that want names only; schemas come from `tools/list`.
pub fn available_tools(snapshot: &kyro_core::Snapshot) -> Vec<String> {
    snapshot.descriptors().map(|d| d.name.clone()).collect()
}
