//! Graph: the knowledge graph of the MCP memory server (entities with observations, and
//! typed relations between them) on the workspace's state database.

mod graph_add_entities;
mod graph_add_observations;
mod graph_add_relations;
mod graph_delete;
mod graph_open;
mod graph_search;
#[cfg(feature = "postgres")]
mod shared;

pub use graph_add_entities::{CreatedEntities, GraphAddEntities, NewEntity};
pub use graph_add_observations::{AddedObservations, GraphAddObservations, NewObservations};
pub use graph_add_relations::{CreatedRelations, GraphAddRelations};
pub use graph_delete::{GraphDelete, GraphDeleted, ObservationsToDelete};
pub use graph_open::GraphOpen;
pub use graph_search::GraphSearch;

use kyro_core::ToolError;
use rusqlite::{Connection, params};
use schemars::JsonSchema;
use serde::Serialize;

use crate::state::state_error;

/// An entity with its observations.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Entity {
    /// Unique name.
    pub name: String,
    /// Its type (person, project, service...).
    pub entity_type: String,
    /// Facts about it, oldest first.
    pub observations: Vec<String>,
}

/// A relation.
#[kyro_core::input]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Relation {
    /// From this entity.
    #[schemars(length(min = 1, max = 256))]
    pub source: String,
    /// To this entity.
    #[schemars(length(min = 1, max = 256))]
    pub target: String,
    /// In active voice (`works_at`, `depends_on`).
    #[schemars(length(min = 1, max = 64))]
    pub relation_type: String,
}

/// A part of the graph: entities and the relations among them.
#[kyro_core::output]
#[derive(Debug)]
pub struct Subgraph {
    /// The entities, by name.
    pub entities: Vec<Entity>,
    /// Relations whose both ends are among the entities.
    pub relations: Vec<Relation>,
}

/// Loads the named entities (unknown names are skipped) and the relations among them.
pub(crate) fn subgraph(conn: &Connection, names: &[String]) -> Result<Subgraph, ToolError> {
    let mut entities = Vec::new();
    for name in names {
        let found: Option<String> = conn
            .query_row("SELECT entity_type FROM entities WHERE name = ?1", params![name], |r| {
                r.get(0)
            })
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                other => Err(state_error(other)),
            })?;
        if let Some(entity_type) = found {
            let mut statement = conn
                .prepare("SELECT content FROM observations WHERE entity = ?1 ORDER BY position")
                .map_err(state_error)?;
            let observations = statement
                .query_map(params![name], |r| r.get(0))
                .map_err(state_error)?
                .collect::<Result<Vec<String>, _>>()
                .map_err(state_error)?;
            entities.push(Entity {
                name: name.clone(),
                entity_type,
                observations,
            });
        }
    }
    entities.sort_by(|a, b| a.name.cmp(&b.name));
    entities.dedup_by(|a, b| a.name == b.name);
    let mut relations = Vec::new();
    let mut statement = conn
        .prepare("SELECT source, target, relation_type FROM relations ORDER BY source, relation_type, target")
        .map_err(state_error)?;
    let all = statement
        .query_map([], |r| {
            Ok(Relation {
                source: r.get(0)?,
                target: r.get(1)?,
                relation_type: r.get(2)?,
            })
        })
        .map_err(state_error)?;
    for relation in all {
        let relation = relation.map_err(state_error)?;
        let has = |n: &str| entities.iter().any(|e| e.name == n);
        if has(&relation.source) && has(&relation.target) {
            relations.push(relation);
        }
    }
    Ok(Subgraph { entities, relations })
}
