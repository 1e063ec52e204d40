//! Without JSON Schema's interpreter (an author's crate compiles none), a tool one of whose
//! fields is a type the macro has no check for (`char` here, as a type from another crate
//! deriving serde and schemars itself would be) is still held to every rule the
//! macro can check: the other fields' patterns, lengths and ranges, unknown fields; serde
//! reads the rest. Before, one such field left the whole call to serde, and a pattern the
//! listing advertised (never `--all`) let `--all` through.
use std::sync::Arc;
use std::sync::Mutex;

use kyro::prelude::*;
use kyro::{Call, Outcome, Policy, Registry, Runtime, Workspace};

static RAN_WITH: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Delete a branch.
#[tool(name = "delete_branch", category = "testing", effect = "none")]
pub struct DeleteBranch {
    /// Lowercase letters only, at most 8 (never an option like `--all`).
    #[schemars(regex(pattern = "^[a-z]+$"), length(max = 8))]
    pub branch: String,
    /// How many, 1 to 3.
    #[schemars(range(min = 1, max = 3))]
    pub count: u32,
    /// An initial.
    pub from: Option<char>,
}

/// Done.
#[output]
pub struct Deleted {
    /// The branch.
    pub branch: String,
}

impl Execute for DeleteBranch {
    type Output = Deleted;

    async fn run(self, _cx: &ToolContext) -> Result<Deleted, ToolError> {
        RAN_WITH.lock().unwrap().push(format!("{} x{} {:?}", self.branch, self.count, self.from));
        Ok(Deleted { branch: self.branch })
    }
}

kyro::catalog! {
    const UNCHECKED = [DeleteBranch];
}

#[test]
fn an_incomplete_check_still_holds_every_rule_it_can_and_serde_the_rest() {
    let ws = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(UNCHECKED).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &Policy::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let call = |args: serde_json::Value| rt.block_on(runtime.execute_call(Call::new("delete_branch", args)));
    let refused = [
        (serde_json::json!({"branch": "--all", "count": 1}), "/branch"),
        (serde_json::json!({"branch": "abcdefghijklmnop", "count": 1}), "/branch"),
        (serde_json::json!({"branch": "main", "count": 4_000_000}), "/count"),
        (serde_json::json!({"branch": "main", "count": 1, "force": true}), ""),
        (serde_json::json!({"branch": "main", "count": 1, "from": "two"}), ""),
    ];
    for (args, pointer) in refused {
        match call(args.clone()) {
            Outcome::InvalidArguments { violations, .. } => {
                assert!(violations.iter().any(|v| v.pointer == pointer), "{args}: {violations:?}")
            }
            other => panic!("{args}: {other:?}"),
        }
    }
    assert_eq!(RAN_WITH.lock().unwrap().len(), 0, "ran with arguments its schema refuses");
    let ok = call(serde_json::json!({"branch": "main", "count": 2, "from": "m"}));
    assert!(matches!(ok, Outcome::Ok { .. }), "{ok:?}");
    assert_eq!(*RAN_WITH.lock().unwrap(), ["main x2 Some('m')"]);
}
