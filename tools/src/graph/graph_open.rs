//! `graph_open`: entities by name.

use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::{Subgraph, subgraph};
use crate::state::Store;

/// Open entities by name, with their observations and the relations among them; unknown names are
/// left out.
#[tool(name = "graph_open", title = "Open graph entities", category = "graph", effect = "read", aliases = ["open_nodes"], capabilities = ["state"])]
pub struct GraphOpen {
    /// Entity names.
    #[schemars(length(min = 1, max = 100))]
    pub names: Vec<String>,
}

impl Execute for GraphOpen {
    type Output = Subgraph;

    async fn run(self, cx: &ToolContext) -> Result<Subgraph, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            return super::shared::subgraph(&pg, &self.names).await;
        }
        let store = Store::open(cx)?;
        subgraph(&store.conn, &self.names)
    }
}
