//! Test support: run a built-in through the real runtime in a temporary workspace.

use std::path::Path;
use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, ToolError, Workspace};
use serde_json::Value;

/// Runs `tool` with `arguments` in `root` through `execute_call`, under a policy that
/// approves every effect (the approval flow has its own tests in kyro-core).
pub fn call(root: &Path, tool: &str, arguments: Value) -> Outcome {
    let registry = Arc::new(Registry::with_catalog(crate::BUILTINS).expect("built-ins register"));
    let policy = Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        ..Policy::default()
    };
    let workspace = Workspace::new(root).expect("workspace exists");
    let runtime = Runtime::new(registry, workspace, &policy).expect("policy applies");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(runtime.execute_call(Call::new(tool, arguments)))
}

/// One runtime kept across calls, as a server keeps it (background processes, scopes).
pub struct Session {
    runtime: Runtime,
    executor: tokio::runtime::Runtime,
}

impl Session {
    /// A runtime over `root` under a policy that approves every effect.
    pub fn new(root: &Path) -> Session {
        let registry = Arc::new(Registry::with_catalog(crate::BUILTINS).expect("built-ins register"));
        let policy = Policy {
            approvals: ApprovalRules::uniform(ApprovalRule::Auto),
            ..Policy::default()
        };
        let workspace = Workspace::new(root).expect("workspace exists");
        Session {
            runtime: Runtime::new(registry, workspace, &policy).expect("policy applies"),
            // Pooled threads exit soon after their call, as a server's do after ten idle
            // seconds: what a call leaves behind must not depend on its thread.
            executor: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_keep_alive(std::time::Duration::from_millis(50))
                .build()
                .expect("tokio runtime"),
        }
    }

    /// Runs one call.
    pub fn call(&self, tool: &str, arguments: Value) -> Outcome {
        self.executor
            .block_on(self.runtime.execute_call(Call::new(tool, arguments)))
    }
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

/// The path denial of a `denied` outcome.
pub fn denied_path(outcome: Outcome) -> kyro_core::policy::PathDenial {
    match outcome {
        Outcome::Denied {
            reason: kyro_core::receipt::Denial::Path { reason, .. },
            ..
        } => reason,
        other => panic!("expected a denied path, got {other:?}"),
    }
}

/// Whether a live (not zombie) process has `arg` among its arguments, waiting up to a
/// second for it to go.
pub fn process_with_arg_alive(arg: &str) -> bool {
    for _ in 0..50 {
        let alive = std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            let dir = entry.path();
            let Ok(cmdline) = std::fs::read(dir.join("cmdline")) else {
                return false;
            };
            let zombie = std::fs::read_to_string(dir.join("stat")).is_ok_and(|s| s.contains(") Z "));
            !zombie && cmdline.split(|b| *b == 0).any(|a| a == arg.as_bytes())
        });
        if !alive {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}
