//! The knowledge graph on the PostgreSQL state replicas share (`--state`): the same
//! entities, observations and relations as on SQLite, kept whole under concurrent writers
//! by foreign keys, unique keys and row locks on the entities written to.

use deadpool_postgres::Transaction;
use kyro_core::ToolError;

use super::{Entity, Relation, Subgraph};
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

/// Locks entity `name` against deletion (and, with `exclusive`, against other writers of
/// its observations) until the transaction ends; refused when there is none.
pub(super) async fn lock_entity(tx: &Transaction<'_>, name: &str, exclusive: bool) -> Result<(), ToolError> {
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
