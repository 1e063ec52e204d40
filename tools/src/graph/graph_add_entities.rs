//! `graph_add_entities`: create entities; existing names are left as they are.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use crate::state::{Store, state_error};

/// Add entities to the knowledge graph, with a type and initial observations.
/// An existing name is skipped, not changed; only names created are returned.
#[tool(name = "graph_add_entities", title = "Add graph entities", category = "graph", effect = "state", aliases = ["create_entities"], idempotent = true)]
pub struct GraphAddEntities {
    /// The entities.
    #[schemars(length(min = 1, max = 100))]
    pub entities: Vec<NewEntity>,
}

/// An entity.
#[kyro_core::input]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct NewEntity {
    /// Unique name.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// Its type (person, project, service...).
    #[schemars(length(min = 1, max = 64))]
    pub entity_type: String,
    /// Initial facts.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub observations: Vec<String>,
}

/// The names created.
#[kyro_core::output]
#[derive(Debug)]
pub struct CreatedEntities {
    /// Entities that did not exist before.
    pub created: Vec<String>,
}

impl Execute for GraphAddEntities {
    type Output = CreatedEntities;

    async fn run(self, cx: &ToolContext) -> Result<CreatedEntities, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let created = shared::add_entities(&pg, &self.entities).await?;
            return Ok(CreatedEntities { created });
        }
        let mut store = Store::open(cx)?;
        let created = store.write(|tx| {
            let mut created = Vec::new();
            for entity in &self.entities {
                let inserted = tx
                    .execute(
                        "INSERT INTO entities (name, entity_type) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING",
                        params![entity.name, entity.entity_type],
                    )
                    .map_err(state_error)?;
                if inserted == 0 {
                    continue;
                }
                for (i, observation) in entity.observations.iter().enumerate() {
                    tx.execute(
                        "INSERT INTO observations (entity, content, position) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                        params![entity.name, observation, i as i64],
                    )
                    .map_err(state_error)?;
                }
                created.push(entity.name.clone());
            }
            Ok(created)
        })?;
        Ok(CreatedEntities { created })
    }
}

/// On the shared state (`--state`).
#[cfg(feature = "postgres")]
mod shared {
    use kyro_core::ToolError;

    use super::NewEntity;
    use crate::state::{PgState, pg_error};

    /// Creates the entities not there yet (with their observations); the names created.
    pub(super) async fn add_entities(pg: &PgState, entities: &[NewEntity]) -> Result<Vec<String>, ToolError> {
        let mut client = pg.client().await.map_err(pg_error)?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let mut created = Vec::new();
        for entity in entities {
            let inserted = tx
                .execute(
                    "INSERT INTO kyro_entities (name, entity_type) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                    &[&entity.name, &entity.entity_type],
                )
                .await
                .map_err(pg_error)?;
            if inserted == 0 {
                continue;
            }
            for (i, observation) in entity.observations.iter().enumerate() {
                tx.execute(
                "INSERT INTO kyro_observations (entity, content, position) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&entity.name, observation, &(i as i64)],
            )
            .await
            .map_err(pg_error)?;
            }
            created.push(entity.name.clone());
        }
        tx.commit().await.map_err(pg_error)?;
        Ok(created)
    }
}
