//! `graph_add_observations`: add facts to existing entities.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;
use serde::Serialize;

use crate::state::{Store, state_error};

/// Add observations (facts) to existing entities; ones already there are skipped.
/// Every entity must exist, or nothing is added and the error names it.
#[tool(name = "graph_add_observations", title = "Add graph observations", category = "graph", effect = "state", aliases = ["add_observations"], idempotent = true)]
pub struct GraphAddObservations {
    /// Facts per entity.
    #[schemars(length(min = 1, max = 100))]
    pub observations: Vec<NewObservations>,
}

/// One entity's facts.
#[kyro_core::input]
#[derive(Debug, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NewObservations {
    /// Entity name.
    #[schemars(length(min = 1, max = 256))]
    pub entity: String,
    /// The facts.
    #[schemars(length(min = 1, max = 100))]
    pub contents: Vec<String>,
}

/// What was added.
#[kyro_core::output]
#[derive(Debug)]
pub struct AddedObservations {
    /// Per entity, the facts that were new.
    pub added: Vec<NewObservations>,
}

impl Execute for GraphAddObservations {
    type Output = AddedObservations;

    async fn run(self, cx: &ToolContext) -> Result<AddedObservations, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let added = shared::add_observations(&pg, &self.observations).await?;
            return Ok(AddedObservations { added });
        }
        let mut store = Store::open(cx)?;
        let added = store.write(|tx| {
            let mut added = Vec::new();
            for group in &self.observations {
                let exists: bool = tx
                    .query_row("SELECT EXISTS(SELECT 1 FROM entities WHERE name = ?1)", params![group.entity], |r| r.get(0))
                    .map_err(state_error)?;
                if !exists {
                    return Err(Failure::NoSuchRecord {
                        record: "entity".into(),
                        key: group.entity.clone(),
                    }.into());
                }
                let mut contents = Vec::new();
                for content in &group.contents {
                    let inserted = tx
                        .execute(
                            "INSERT INTO observations (entity, content, position)
                             VALUES (?1, ?2, (SELECT COALESCE(MAX(position), -1) + 1 FROM observations WHERE entity = ?1))
                             ON CONFLICT DO NOTHING",
                            params![group.entity, content],
                        )
                        .map_err(state_error)?;
                    if inserted > 0 {
                        contents.push(content.clone());
                    }
                }
                added.push(NewObservations {
                    entity: group.entity.clone(),
                    contents,
                });
            }
            Ok(added)
        })?;
        Ok(AddedObservations { added })
    }
}

/// On the shared state (`--state`).
#[cfg(feature = "postgres")]
mod shared {
    use kyro_core::ToolError;

    use super::NewObservations;
    use crate::graph::shared::lock_entity;
    use crate::state::{PgState, pg_error};

    /// Adds observations to existing entities; those new to each.
    pub(super) async fn add_observations(
        pg: &PgState,
        groups: &[NewObservations],
    ) -> Result<Vec<NewObservations>, ToolError> {
        let mut client = pg.client().await.map_err(pg_error)?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let mut added = Vec::new();
        for group in groups {
            lock_entity(&tx, &group.entity, true).await?;
            let mut contents = Vec::new();
            for content in &group.contents {
                let inserted = tx
                    .execute(
                        "INSERT INTO kyro_observations (entity, content, position)
                     VALUES ($1, $2, (SELECT coalesce(max(position), -1) + 1 FROM kyro_observations WHERE entity = $1))
                     ON CONFLICT DO NOTHING",
                        &[&group.entity, content],
                    )
                    .await
                    .map_err(pg_error)?;
                if inserted > 0 {
                    contents.push(content.clone());
                }
            }
            added.push(NewObservations {
                entity: group.entity.clone(),
                contents,
            });
        }
        tx.commit().await.map_err(pg_error)?;
        Ok(added)
    }
}
