//! The knowledge graph on the PostgreSQL state replicas share (`--state`): the same
//! entities, observations and relations as on SQLite, kept whole under concurrent writers
//! by foreign keys, unique keys and row locks on the entities written to.

use deadpool_postgres::Transaction;
use kyro_core::ToolError;

use super::{Entity, NewEntity, NewObservations, ObservationsToDelete, Relation, Subgraph};
use crate::Failure;
use crate::state::{PgState, pg_error};

/// The entities of `names` that exist, with their observations, and the relations among
/// them; sorted by name (code point order, as SQLite sorts).
pub(super) async fn subgraph(pg: &PgState, names: &[String]) -> Result<Subgraph, ToolError> {
    let client = pg.client().await.map_err(pg_error)?;
    let rows = client
        .query(
            "SELECT e.name, e.entity_type, coalesce(array_agg(o.content ORDER BY o.position) FILTER (WHERE o.content IS NOT NULL), '{}')
             FROM kyro_entities e LEFT JOIN kyro_observations o ON o.entity = e.name
             WHERE e.name = ANY($1) GROUP BY e.name, e.entity_type ORDER BY e.name",
            &[&names],
        )
        .await
        .map_err(pg_error)?;
    let entities: Vec<Entity> = rows
        .iter()
        .map(|row| Entity {
            name: row.get(0),
            entity_type: row.get(1),
            observations: row.get(2),
        })
        .collect();
    let found: Vec<&str> = entities.iter().map(|e| e.name.as_str()).collect();
    let relations = client
        .query(
            "SELECT source, target, relation_type FROM kyro_relations
             WHERE source = ANY($1) AND target = ANY($1) ORDER BY source, relation_type, target",
            &[&found],
        )
        .await
        .map_err(pg_error)?
        .iter()
        .map(|row| Relation {
            source: row.get(0),
            target: row.get(1),
            relation_type: row.get(2),
        })
        .collect();
    Ok(Subgraph { entities, relations })
}

/// Names of entities whose name, type or an observation holds `query` (case-insensitive,
/// as SQLite's LIKE on ASCII), by name.
pub(super) async fn search(pg: &PgState, query: &str, limit: u32) -> Result<Vec<String>, ToolError> {
    let pattern = format!(
        "%{}%",
        query.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
    );
    let client = pg.client().await.map_err(pg_error)?;
    let rows = client
        .query(
            "SELECT name FROM kyro_entities e
             WHERE e.name ILIKE $1 OR e.entity_type ILIKE $1
                OR EXISTS (SELECT 1 FROM kyro_observations o WHERE o.entity = e.name AND o.content ILIKE $1)
             ORDER BY name LIMIT $2",
            &[&pattern, &i64::from(limit)],
        )
        .await
        .map_err(pg_error)?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

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

/// Locks entity `name` against deletion (and, with `exclusive`, against other writers of
/// its observations) until the transaction ends; refused when there is none.
async fn lock_entity(tx: &Transaction<'_>, name: &str, exclusive: bool) -> Result<(), ToolError> {
    let sql = if exclusive {
        "SELECT 1 FROM kyro_entities WHERE name = $1 FOR UPDATE"
    } else {
        "SELECT 1 FROM kyro_entities WHERE name = $1 FOR SHARE"
    };
    match tx.query_opt(sql, &[&name]).await.map_err(pg_error)? {
        Some(_) => Ok(()),
        None => Err(Failure::NoSuchRecord {
            record: "entity".into(),
            key: name.to_owned(),
        }
        .into()),
    }
}

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

/// Relates existing entities; the relations new.
pub(super) async fn add_relations(pg: &PgState, relations: &[Relation]) -> Result<Vec<Relation>, ToolError> {
    let mut client = pg.client().await.map_err(pg_error)?;
    let tx = client.transaction().await.map_err(pg_error)?;
    let mut created = Vec::new();
    for relation in relations {
        for end in [&relation.source, &relation.target] {
            lock_entity(&tx, end, false).await?;
        }
        let inserted = tx
            .execute(
                "INSERT INTO kyro_relations (source, target, relation_type) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&relation.source, &relation.target, &relation.relation_type],
            )
            .await
            .map_err(pg_error)?;
        if inserted > 0 {
            created.push(relation.clone());
        }
    }
    tx.commit().await.map_err(pg_error)?;
    Ok(created)
}

/// Deletes relations, then observations, then entities (with what hangs on them): how
/// many of each this call deleted (rows another writer deleted first are not counted).
pub(super) async fn delete(
    pg: &PgState,
    relations: &[Relation],
    observations: &[ObservationsToDelete],
    entities: &[String],
) -> Result<super::GraphDeleted, ToolError> {
    let mut client = pg.client().await.map_err(pg_error)?;
    let tx = client.transaction().await.map_err(pg_error)?;
    let mut deleted = super::GraphDeleted {
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
