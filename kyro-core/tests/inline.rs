//! Where an executor runs: a tool declared `inline` on the task serving its call, every
//! other on the blocking pool (so that blocking code never stalls the server); both under
//! the same limits, stopped alike.

use std::sync::Arc;
use std::thread::ThreadId;

use kyro_core::{
    Call, Execute, Outcome, OutcomeKind, Policy, Registry, Runtime, ToolContext, ToolError, Workspace, tool,
};

/// The thread the executor ran on.
#[kyro_core::output]
#[derive(Debug)]
pub struct Where {
    /// `std::thread::current().id()`, as debug text.
    pub thread: String,
}

/// Says where it runs; never blocks.
#[tool(name = "here", category = "testing", effect = "none", inline = true)]
pub struct Here {
    /// Milliseconds to wait (asynchronously) first.
    #[serde(default)]
    pub ms: u64,
}

impl Execute for Here {
    type Output = Where;

    async fn run(self, _cx: &ToolContext) -> Result<Where, ToolError> {
        tokio::time::sleep(std::time::Duration::from_millis(self.ms)).await;
        Ok(Where {
            thread: format!("{:?}", std::thread::current().id()),
        })
    }
}

/// Says where it runs, from the blocking pool.
#[tool(name = "there", category = "testing", effect = "none")]
pub struct There {}

impl Execute for There {
    type Output = Where;

    async fn run(self, _cx: &ToolContext) -> Result<Where, ToolError> {
        Ok(Where {
            thread: format!("{:?}", std::thread::current().id()),
        })
    }
}

kyro_core::catalog! {
    const PLACES = [Here, There];
}

fn runtime(policy: &Policy) -> Runtime {
    let registry = Arc::new(Registry::with_catalog(PLACES).unwrap());
    Runtime::new(registry, Workspace::new(std::env::temp_dir()).unwrap(), policy).unwrap()
}

fn thread_of(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok { result, .. } => result["thread"].as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_inline_tool_runs_on_the_serving_thread_and_the_others_on_the_pool() {
    let serving: ThreadId = std::thread::current().id();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runtime = runtime(&Policy::default());
    let here = rt.block_on(runtime.execute_call(Call::new("here", serde_json::json!({}))));
    let there = rt.block_on(runtime.execute_call(Call::new("there", serde_json::json!({}))));
    assert_eq!(thread_of(&here), format!("{serving:?}"));
    assert_ne!(thread_of(&there), format!("{serving:?}"));
}

#[test]
fn an_inline_tool_is_held_to_the_time_limit_and_stopped() {
    let mut policy = Policy::default();
    policy.limits.timeout_ms = 50;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let execution = rt.block_on(runtime(&policy).execute(Call::new("here", serde_json::json!({"ms": 60_000}))));
    assert_eq!(
        execution.outcome.kind(),
        OutcomeKind::TimedOut,
        "{:?}",
        execution.outcome
    );
    assert_eq!(execution.receipt.work_stopped, Some(true));
}
