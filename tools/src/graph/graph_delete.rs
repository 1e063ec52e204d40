//! `graph_delete`: delete entities (with their observations and relations), observations,
//! or relations.

use kyro_core::{Execute, ToolContext, ToolError, tool};
use rusqlite::params;

use super::Relation;
use crate::state::{Store, state_error};

/// Delete entities (with their observations and relations), observations or relations from the
/// knowledge graph; what does not exist is skipped.
#[tool(name = "graph_delete", title = "Delete from the graph", category = "graph", effect = "state", aliases = ["delete_entities"], destructive = true, idempotent = true)]
pub struct GraphDelete {
    /// Entity names.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub entities: Vec<String>,
    /// Observations per entity.
    #[serde(default)]
    #[schemars(length(max = 100))]
    pub observations: Vec<ObservationsToDelete>,
    /// Relations.
    #[serde(default)]
    #[schemars(length(max = 200))]
    pub relations: Vec<Relation>,
}

/// One entity's observations.
#[kyro_core::input]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct ObservationsToDelete {
    /// Entity name.
    #[schemars(length(min = 1, max = 256))]
    pub entity: String,
    /// Facts to delete.
    #[schemars(length(min = 1, max = 100))]
    pub contents: Vec<String>,
}

/// How much went.
#[kyro_core::output]
#[derive(Debug)]
pub struct GraphDeleted {
    /// Entities deleted.
    pub entities: u64,
    /// Observations deleted, those of deleted entities included.
    pub observations: u64,
    /// Relations deleted, those of deleted entities included.
    pub relations: u64,
}

fn count(tx: &rusqlite::Transaction, table: &str) -> Result<u64, ToolError> {
    tx.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
        .map_err(state_error)
}

impl Execute for GraphDelete {
    type Output = GraphDeleted;

    async fn run(self, cx: &ToolContext) -> Result<GraphDeleted, ToolError> {
        #[cfg(feature = "postgres")]
        if let Some(pg) = crate::state::shared(cx) {
            return shared::delete(&pg, &self.relations, &self.observations, &self.entities).await;
        }
        let mut store = Store::open(cx)?;
        store.write(|tx| {
            let before = (
                count(tx, "entities")?,
                count(tx, "observations")?,
                count(tx, "relations")?,
            );
            for relation in &self.relations {
                tx.execute(
                    "DELETE FROM relations WHERE source = ?1 AND target = ?2 AND relation_type = ?3",
                    params![relation.source, relation.target, relation.relation_type],
                )
                .map_err(state_error)?;
            }
            for group in &self.observations {
                for content in &group.contents {
                    tx.execute(
                        "DELETE FROM observations WHERE entity = ?1 AND content = ?2",
                        params![group.entity, content],
                    )
                    .map_err(state_error)?;
                }
            }
            for name in &self.entities {
                tx.execute("DELETE FROM entities WHERE name = ?1", params![name])
                    .map_err(state_error)?;
            }
            let after = (
                count(tx, "entities")?,
                count(tx, "observations")?,
                count(tx, "relations")?,
            );
            Ok(GraphDeleted {
                entities: before.0 - after.0,
                observations: before.1 - after.1,
                relations: before.2 - after.2,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn build_search_open_and_delete_with_cascade() {
        let ws = workspace();
        let created = ok(call(
            ws.path(),
            "graph_add_entities",
            json!({"entities": [
                {"name": "alice", "entity_type": "person", "observations": ["likes | pipes", "café"]},
                {"name": "acme", "entity_type": "company"},
                {"name": "bob", "entity_type": "person"}
            ]}),
        ));
        assert_eq!(created["created"], json!(["alice", "acme", "bob"]));
        let again = ok(call(
            ws.path(),
            "create_entities",
            json!({"entities": [{"name": "alice", "entity_type": "robot"}]}),
        ));
        assert_eq!(again["created"], json!([]), "adding is idempotent");
        let relations = json!({"relations": [
            {"source": "alice", "target": "acme", "relation_type": "works_at"},
            {"source": "bob", "target": "alice", "relation_type": "knows"}
        ]});
        assert_eq!(
            ok(call(ws.path(), "graph_add_relations", relations.clone()))["created"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            ok(call(ws.path(), "graph_add_relations", relations))["created"],
            json!([])
        );
        assert_eq!(
            failed(call(
                ws.path(),
                "graph_add_relations",
                json!({"relations": [{"source": "alice", "target": "nobody", "relation_type": "knows"}]})
            )),
            Failure::NoSuchRecord {
                record: "entity".into(),
                key: "nobody".into()
            }
            .into()
        );
        let added = ok(call(
            ws.path(),
            "graph_add_observations",
            json!({"observations": [{"entity": "alice", "contents": ["café", "runs"]}]}),
        ));
        assert_eq!(added["added"][0]["contents"], json!(["runs"]));
        let found = ok(call(ws.path(), "graph_search", json!({"query": "CAFÉ"})));
        assert_eq!(
            found["entities"].as_array().unwrap().len(),
            0,
            "LIKE folds ASCII case only"
        );
        let found = ok(call(ws.path(), "graph_search", json!({"query": "PERSON"})));
        assert_eq!(found["entities"].as_array().unwrap().len(), 2);
        assert_eq!(
            found["relations"],
            json!([{"source": "bob", "target": "alice", "relation_type": "knows"}])
        );
        let opened = ok(call(
            ws.path(),
            "graph_open",
            json!({"names": ["alice", "acme", "ghost"]}),
        ));
        assert_eq!(
            opened["entities"][1]["observations"],
            json!(["likes | pipes", "café", "runs"])
        );
        assert_eq!(opened["relations"].as_array().unwrap().len(), 1);
        let deleted = ok(call(ws.path(), "graph_delete", json!({"entities": ["alice"]})));
        assert_eq!(deleted, json!({"entities": 1, "observations": 3, "relations": 2}));
        let rest = ok(call(ws.path(), "graph_open", json!({"names": ["bob", "acme"]})));
        assert_eq!(rest["relations"], json!([]));
    }

    #[test]
    fn a_search_for_like_wildcards_is_literal() {
        let ws = workspace();
        ok(call(
            ws.path(),
            "graph_add_entities",
            json!({"entities": [{"name": "a_b", "entity_type": "t"}, {"name": "axb", "entity_type": "t"}]}),
        ));
        let found = ok(call(ws.path(), "graph_search", json!({"query": "a_b"})));
        assert_eq!(found["entities"].as_array().unwrap().len(), 1);
    }
}

/// On the shared state (`--state`).
#[cfg(feature = "postgres")]
mod shared {
    use kyro_core::ToolError;

    use super::{GraphDeleted, ObservationsToDelete};
    use crate::graph::Relation;
    use crate::state::{PgState, pg_error};

    /// Deletes relations, then observations, then entities (with what hangs on them): how
    /// many of each this call deleted (rows another writer deleted first are not counted).
    pub(super) async fn delete(
        pg: &PgState,
        relations: &[Relation],
        observations: &[ObservationsToDelete],
        entities: &[String],
    ) -> Result<GraphDeleted, ToolError> {
        let mut client = pg.client().await.map_err(pg_error)?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let mut deleted = GraphDeleted {
            entities: 0,
            observations: 0,
            relations: 0,
        };
        for relation in relations {
            deleted.relations += tx
                .execute(
                    "DELETE FROM kyro_relations WHERE source = $1 AND target = $2 AND relation_type = $3",
                    &[&relation.source, &relation.target, &relation.relation_type],
                )
                .await
                .map_err(pg_error)?;
        }
        for group in observations {
            deleted.observations += tx
                .execute(
                    "DELETE FROM kyro_observations WHERE entity = $1 AND content = ANY($2)",
                    &[&group.entity, &group.contents],
                )
                .await
                .map_err(pg_error)?;
        }
        for name in entities {
            // Held against writers adding to it meanwhile (they lock it too).
            tx.execute("SELECT 1 FROM kyro_entities WHERE name = $1 FOR UPDATE", &[name])
                .await
                .map_err(pg_error)?;
            // What the cascade would delete unseen is deleted (and counted) first.
            deleted.observations += tx
                .execute("DELETE FROM kyro_observations WHERE entity = $1", &[name])
                .await
                .map_err(pg_error)?;
            deleted.relations += tx
                .execute("DELETE FROM kyro_relations WHERE source = $1 OR target = $1", &[name])
                .await
                .map_err(pg_error)?;
            deleted.entities += tx
                .execute("DELETE FROM kyro_entities WHERE name = $1", &[name])
                .await
                .map_err(pg_error)?;
        }
        tx.commit().await.map_err(pg_error)?;
        Ok(deleted)
    }
}
