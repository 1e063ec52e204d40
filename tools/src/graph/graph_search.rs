//! `graph_search`: find entities by words.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::{Subgraph, subgraph};
use crate::state::{Store, state_error};

/// Search the knowledge graph: entities whose name, type or observations contain the query (any
/// case), with the relations among them.
#[tool(name = "graph_search", title = "Search the graph", category = "graph", effect = "read", aliases = ["search_nodes"], capabilities = ["state"])]
pub struct GraphSearch {
    /// Text to find.
    #[schemars(length(min = 1, max = 512))]
    pub query: String,
    /// Most entities; default 20.
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
}

impl Execute for GraphSearch {
    type Output = Subgraph;

    async fn run(self, cx: &ToolContext) -> Result<Subgraph, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let names = super::shared::search(&pg, &self.query, self.limit.unwrap_or(20)).await?;
            return super::shared::subgraph(&pg, &names).await;
        }
        let store = Store::open(cx)?;
        let pattern = format!(
            "%{}%",
            self.query.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
        );
        let mut statement = store
            .conn
            .prepare(
                "SELECT name FROM entities e
                 WHERE e.name LIKE ?1 ESCAPE '\\' OR e.entity_type LIKE ?1 ESCAPE '\\'
                    OR EXISTS (SELECT 1 FROM observations o WHERE o.entity = e.name AND o.content LIKE ?1 ESCAPE '\\')
                 ORDER BY name LIMIT ?2",
            )
            .map_err(state_error)?;
        let names = statement
            .query_map(params![pattern, self.limit.unwrap_or(20)], |r| r.get(0))
            .map_err(state_error)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(state_error)?;
        subgraph(&store.conn, &names)
    }
}
