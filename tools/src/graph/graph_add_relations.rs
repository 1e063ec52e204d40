//! `graph_add_relations`: relate existing entities.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::Relation;
use crate::state::{Store, state_error};

/// Add typed, directed relations between existing entities (`alice works_at acme`); existing ones are skipped.
/// A missing end adds nothing and the error names it.
#[tool(name = "graph_add_relations", title = "Add graph relations", category = "graph", effect = "state", aliases = ["create_relations"], idempotent = true)]
pub struct GraphAddRelations {
    /// The relations.
    #[schemars(length(min = 1, max = 200))]
    pub relations: Vec<Relation>,
}

/// The relations created.
#[kyro_core::output]
#[derive(Debug)]
pub struct CreatedRelations {
    /// Relations that did not exist before.
    pub created: Vec<Relation>,
}

impl Execute for GraphAddRelations {
    type Output = CreatedRelations;

    async fn run(self, cx: &ToolContext) -> Result<CreatedRelations, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            let created = super::shared::add_relations(&pg, &self.relations).await?;
            return Ok(CreatedRelations { created });
        }
        let mut store = Store::open(cx)?;
        let created = store.write(|tx| {
            let mut created = Vec::new();
            for relation in &self.relations {
                for end in [&relation.source, &relation.target] {
                    let exists: bool = tx
                        .query_row("SELECT EXISTS(SELECT 1 FROM entities WHERE name = ?1)", params![end], |r| r.get(0))
                        .map_err(state_error)?;
                    if !exists {
                        return Err(Failure::NoSuchRecord {
                            record: "entity".into(),
                            key: end.clone(),
                        }.into());
                    }
                }
                let inserted = tx
                    .execute(
                        "INSERT INTO relations (source, target, relation_type) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                        params![relation.source, relation.target, relation.relation_type],
                    )
                    .map_err(state_error)?;
                if inserted > 0 {
                    created.push(relation.clone());
                }
            }
            Ok(created)
        })?;
        Ok(CreatedRelations { created })
    }
}
