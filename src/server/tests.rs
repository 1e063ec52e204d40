//! The server's assembly: what a runtime is made of and what it refuses.

use std::sync::{Arc, Mutex};

use kyro_core::receipt::CanonicalCall;
use kyro_core::{Call, Observer, Outcome, Receipt};
use serde_json::json;

use super::{ServeError, Server};

#[derive(Default)]
struct Recorder(Mutex<Vec<(Receipt, Option<CanonicalCall>, Outcome)>>);

impl Observer for Recorder {
    fn observe(&self, receipt: &Receipt, call: Option<&CanonicalCall>, outcome: &Outcome) {
        self.0
            .lock()
            .unwrap()
            .push((receipt.clone(), call.cloned(), outcome.clone()));
    }
}

#[test]
fn observers_get_every_receipt_the_canonical_call_and_the_outcome() {
    let ws = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let runtime = Server::new(kyro_tools::catalogs::UTILITIES)
        .catalog(kyro_tools::catalogs::FILES)
        .workspace(ws.path())
        .observer(recorder.clone())
        .runtime()
        .unwrap();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = executor.block_on(runtime.execute_call(Call::new("calculate", json!({"expression": "6*7"}))));
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
    executor.block_on(runtime.execute_call(Call::new("list_directory", json!({}))));
    executor.block_on(runtime.execute_call(Call::new("read_file", json!({"path": "missing.txt"}))));
    let seen = recorder.0.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].0.tool, "calculate");
    let canonical = seen[0].1.as_ref().unwrap();
    assert_eq!(Some(canonical.fingerprint.clone()), seen[0].0.fingerprint);
    assert!(canonical.canonical.contains("\"expression\":\"6*7\""));
    assert_eq!(seen[0].2, outcome, "the observer sees the result itself");
    match &seen[2].2 {
        Outcome::ExecutionFailed { error, .. } => assert_eq!(error.kind(), "not_found"),
        other => panic!("{other:?}"),
    }
}

/// Takes a name.
#[allow(unreachable_pub)]
#[crate::prelude::tool(name = "bad_pattern", category = "testing", effect = "none")]
pub struct BadPattern {
    /// A name, matched by a pattern that is no regular expression.
    #[schemars(regex(pattern = "(unclosed"))]
    pub name: String,
}

impl crate::prelude::Execute for BadPattern {
    type Output = serde_json::Map<String, serde_json::Value>;

    async fn run(self, _cx: &crate::prelude::ToolContext) -> Result<Self::Output, crate::prelude::ToolError> {
        Ok(serde_json::Map::from_iter([("name".to_owned(), self.name.into())]))
    }
}

crate::catalog! {
    const BAD = [BadPattern];
}

#[test]
fn a_schema_that_does_not_compile_refuses_the_server_at_start() {
    let ws = tempfile::tempdir().unwrap();
    let refused = Server::new(BAD).workspace(ws.path()).runtime();
    assert!(
        matches!(
            refused,
            Err(ServeError::Catalog(kyro_core::RegistryError::Schema { .. }))
        ),
        "{:?}",
        refused.err()
    );
}

#[test]
fn catalogs_sharing_a_name_are_refused_at_start() {
    let ws = tempfile::tempdir().unwrap();
    let refused = Server::new(kyro_tools::catalogs::FILES)
        .catalog(kyro_tools::BUILTINS)
        .workspace(ws.path())
        .runtime();
    assert!(matches!(refused, Err(ServeError::Catalog(_))));
}

#[cfg(feature = "files")]
#[test]
fn a_server_of_built_ins_goes_by_kyro_not_by_the_crate_of_its_tools() {
    let identity = super::Identity::of_catalog(kyro_tools::catalogs::FILES);
    assert_eq!(identity.name, "kyro", "{identity:?}");
    let server = crate::Server::new(kyro_tools::catalogs::FILES).named("files-server", "1.2.3");
    assert_eq!(
        (server.identity().name.as_str(), server.identity().version.as_str()),
        ("files-server", "1.2.3")
    );
}
