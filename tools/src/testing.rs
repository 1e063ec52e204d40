//! Test support: run a built-in through the real runtime in a temporary workspace.

use std::path::Path;
use std::sync::Arc;

use kyro_core::{Call, Outcome, Registry, Runtime, ToolError, Workspace};
use serde_json::Value;

/// Runs `tool` with `arguments` in `root` through `execute_call`.
pub fn call(root: &Path, tool: &str, arguments: Value) -> Outcome {
    let registry = Arc::new(Registry::with_catalog(crate::BUILTINS).expect("built-ins register"));
    let runtime = Runtime::new(registry, Workspace::new(root).expect("workspace exists"));
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime")
        .block_on(runtime.execute_call(Call::new(tool, arguments)))
}

/// The result of an `ok` outcome.
pub fn ok(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("expected ok, got {other:?}"),
    }
}

/// The error of an `execution_failed` outcome.
pub fn failed(outcome: Outcome) -> ToolError {
    match outcome {
        Outcome::ExecutionFailed { error, .. } => error,
        other => panic!("expected execution_failed, got {other:?}"),
    }
}

/// A fresh temporary workspace.
pub fn workspace() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}
