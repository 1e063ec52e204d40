//! The tools' state (memory, knowledge graph, task list) on both backends: one script of
//! calls gives the same outcomes on the workspace's SQLite file and on PostgreSQL
//! (`--state`); and on PostgreSQL, clients spread over two replicas write thousands of
//! notes, entities and tasks at once with nothing lost, nothing doubled and one receipt
//! a call.

use std::process::Command;

use serde_json::{Value, json};

use super::postgres::Postgres;
use super::replicas::{kyro, replica, tool_call};
use super::{TOKEN, timeless, workspace};

/// Every state tool, the way an agent uses them, with the refusals each can meet.
fn script() -> Vec<(&'static str, Value)> {
    vec![
        (
            "memory_store",
            json!({"key": "db", "value": "Postgres 15 | port 5432, café", "tags": ["infra", "db"]}),
        ),
        (
            "remember",
            json!({"key": "ui", "value": "React with Vite", "namespace": "web"}),
        ),
        (
            "memory_store",
            json!({"key": "db", "value": "Postgres 16 | port 5433, café", "tags": ["infra"]}),
        ),
        ("memory_get", json!({"key": "db"})),
        ("memory_search", json!({"query": "POSTGRES café"})),
        ("memory_search", json!({"query": "infra"})),
        ("memory_search", json!({"query": "vite", "namespace": "default"})),
        ("memory_search", json!({"query": "vite"})),
        (
            "memory_store",
            json!({"key": "q", "value": "a OR b NEAR(c) \"quoted\" *star"}),
        ),
        ("memory_search", json!({"query": "NEAR(c)"})),
        ("memory_search", json!({"query": "\"quoted\" *star"})),
        ("forget", json!({"key": "db"})),
        ("memory_forget", json!({"key": "db"})),
        ("memory_get", json!({"key": "db"})),
        (
            "graph_add_entities",
            json!({"entities": [
            {"name": "alice", "entity_type": "person", "observations": ["likes | pipes", "café"]},
            {"name": "acme", "entity_type": "company"},
            {"name": "Bob", "entity_type": "person"}]}),
        ),
        (
            "create_entities",
            json!({"entities": [{"name": "alice", "entity_type": "robot"}]}),
        ),
        (
            "graph_add_relations",
            json!({"relations": [
            {"source": "alice", "target": "acme", "relation_type": "works_at"},
            {"source": "Bob", "target": "alice", "relation_type": "knows"}]}),
        ),
        (
            "graph_add_relations",
            json!({"relations": [{"source": "alice", "target": "nobody", "relation_type": "knows"}]}),
        ),
        (
            "graph_add_observations",
            json!({"observations": [{"entity": "acme", "contents": ["founded 1999", "founded 1999"]}]}),
        ),
        (
            "graph_add_observations",
            json!({"observations": [{"entity": "alice", "contents": ["café", "new"]}]}),
        ),
        (
            "graph_add_observations",
            json!({"observations": [{"entity": "nobody", "contents": ["x"]}]}),
        ),
        ("graph_search", json!({"query": "PIPES"})),
        ("graph_search", json!({"query": "person"})),
        ("graph_search", json!({"query": "100%_"})),
        (
            "graph_open",
            json!({"names": ["alice", "acme", "Bob", "nobody", "alice"]}),
        ),
        (
            "graph_delete",
            json!({"observations": [{"entity": "alice", "contents": ["new", "absent"]}],
            "relations": [{"source": "Bob", "target": "alice", "relation_type": "knows"}]}),
        ),
        ("graph_delete", json!({"entities": ["alice", "nobody"]})),
        ("graph_open", json!({"names": ["alice", "acme", "Bob"]})),
        ("task_create", json!({"title": "write | tests"})),
        ("task_create", json!({"title": "ship", "notes": "café"})),
        ("task_create", json!({"title": "plan", "position": 1})),
        ("task_update", json!({"id": 2, "status": "in_progress", "position": 1})),
        (
            "task_update",
            json!({"id": 1, "title": "write more tests", "position": 9}),
        ),
        ("task_list", json!({})),
        ("task_list", json!({"status": "in_progress"})),
        ("task_update", json!({"id": 99, "status": "completed"})),
    ]
}

/// `kyro call` of each step in a fresh workspace, with `flags`: each outcome, result and
/// error, without what depends on time or on the backend's ranking.
fn run_script(flags: &[&str]) -> Vec<Value> {
    let ws = workspace();
    script()
        .into_iter()
        .map(|(tool, arguments)| {
            let out = Command::new(env!("CARGO_BIN_EXE_kyro"))
                .env_remove("KYRO_STATE")
                .args(["call", tool, &arguments.to_string(), "--workspace"])
                .arg(ws.path())
                .args(flags)
                .output()
                .unwrap();
            let answer: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|_| panic!("{tool}: {}", String::from_utf8_lossy(&out.stderr)));
            let mut result = timeless(&answer["result"]);
            // Ranks and snippets are each engine's own (BM25 and FTS5's snippet; ts_rank
            // and ts_headline): the order they give is compared, and the match bracketed.
            if arguments["query"] == "POSTGRES café" {
                let snippet = &result["results"][0]["snippet"];
                assert!(snippet.as_str().unwrap().contains("[Postgres]"), "{snippet}");
            }
            for hit in result["results"].as_array_mut().into_iter().flatten() {
                hit["rank"] = Value::Null;
                hit["snippet"] = Value::Null;
            }
            json!({"step": format!("{tool} {arguments}"), "outcome": answer["outcome"],
                "result": result, "error": answer["error"]})
        })
        .collect()
}

#[test]
fn the_state_tools_answer_the_same_on_sqlite_and_on_postgres() {
    let Some(pg) = Postgres::start() else { return };
    let embedded = run_script(&[]);
    let shared = run_script(&["--state", &pg.url]);
    for (sqlite, postgres) in embedded.iter().zip(&shared) {
        assert_eq!(sqlite, postgres);
    }
    assert_eq!(embedded.len(), shared.len());
    // The refusals are among them, typed.
    let outcomes: Vec<&str> = shared.iter().map(|s| s["outcome"].as_str().unwrap()).collect();
    assert_eq!(
        outcomes.iter().filter(|o| **o == "execution_failed").count(),
        4,
        "{outcomes:?}"
    );
    // Nothing went to the workspace: the store is PostgreSQL's.
    let notes: i64 = pg.sql("SELECT count(*) FROM kyro_memories").parse().unwrap();
    assert_eq!(notes, 2);
}

#[test]
fn clients_on_two_replicas_write_thousands_of_notes_entities_and_tasks_losing_nothing() {
    let Some(pg) = Postgres::start() else { return };
    let ws = workspace();
    let replicas = [
        replica(ws.path(), &pg.url, &[], Some(TOKEN)),
        replica(ws.path(), &pg.url, &[], Some(TOKEN)),
    ];
    const CLIENTS: usize = 4;
    const ROUNDS: usize = 200;
    let created = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            let (replicas, created) = (&replicas, &created);
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    let url = &replicas[(client + round) % 2].url;
                    let name = format!("c{client}-r{round}");
                    let calls = [
                        (
                            "memory_store",
                            json!({"key": name, "value": format!("note {name}"), "tags": [format!("client{client}")]}),
                        ),
                        // Every client adds the same shared entity too: created once.
                        (
                            "graph_add_entities",
                            json!({"entities": [{"name": name, "entity_type": "item"},
                            {"name": format!("shared-{round}"), "entity_type": "item"}]}),
                        ),
                        ("task_create", json!({"title": name, "position": 1})),
                    ];
                    for (tool, arguments) in calls {
                        let result = tool_call(url, tool, arguments).expect("the replica answers");
                        assert_eq!(result["isError"], false, "{tool}: {result}");
                        if let Some(names) = result["structuredContent"]["created"].as_array() {
                            created.fetch_add(names.len(), std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let count = |sql: &str| -> usize { pg.sql(sql).parse().unwrap() };
    let each = CLIENTS * ROUNDS;
    assert_eq!(count("SELECT count(*) FROM kyro_memories"), each);
    assert_eq!(count("SELECT count(*) FROM kyro_entities"), each + ROUNDS);
    assert_eq!(count("SELECT count(*) FROM kyro_tasks"), each);
    // Positions stayed 1..n with no two tasks in one place.
    assert_eq!(count("SELECT count(DISTINCT position) FROM kyro_tasks"), each);
    assert_eq!(count("SELECT max(position) FROM kyro_tasks"), each);
    // Every call has its one receipt, in one intact chain.
    assert_eq!(count("SELECT count(*) FROM kyro_receipts"), 3 * each);
    assert_eq!(count("SELECT count(DISTINCT call_id) FROM kyro_receipts"), 3 * each);
    // Each shared entity was reported created to one client only.
    assert_eq!(created.into_inner(), each + ROUNDS);
    let (intact, report) = kyro(&["receipts", "verify"], &pg.url);
    assert!(intact, "{report}");
    // A tool name no index can hold is receipted and refused, and the replica keeps serving.
    let _ = tool_call(&replicas[0].url, &"x".repeat(5000), json!({}));
    let after = tool_call(&replicas[0].url, "memory_get", json!({"key": "c0-r0"})).unwrap();
    assert_eq!(after["isError"], false, "{after}");
    // A note stored through one replica is found through the other.
    let found = tool_call(&replicas[1].url, "memory_search", json!({"query": "c0-r0"})).unwrap();
    assert_eq!(found["structuredContent"]["results"][0]["key"], "c0-r0", "{found}");
}
