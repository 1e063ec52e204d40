//! Shared test fixtures: a small catalog of test tools and a runtime over it.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kyro_core::{
    Call, Execute, Outcome, Registry, Runtime, ToolContext, ToolError, Workspace, tool,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// How many times `Record` ran.
pub static RECORDED: AtomicU64 = AtomicU64::new(0);

pub fn recorded() -> u64 {
    RECORDED.load(Ordering::SeqCst)
}

/// Record that it ran, and echo the arguments.
#[tool(name = "record", category = "testing", effect = "none", aliases = ["rec"])]
pub struct Record {
    /// A count.
    #[tool(alias = "n")]
    pub count: u32,
    /// A label.
    #[schemars(length(min = 1, max = 8))]
    pub label: Option<String>,
    /// A signed offset.
    pub offset: Option<i64>,
    /// A ratio.
    pub ratio: Option<f64>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// A mode.
    pub mode: Option<Mode>,
}

/// How to record.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Quickly.
    Fast,
    /// Carefully.
    Careful,
}

/// What `record` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Echo {
    /// The count.
    pub count: u32,
}

impl Execute for Record {
    type Output = Echo;

    async fn run(self, _cx: &ToolContext) -> Result<Echo, ToolError> {
        RECORDED.fetch_add(1, Ordering::SeqCst);
        Ok(Echo { count: self.count })
    }
}

kyro_core::catalog! {
    pub const TEST_CATALOG = [Record];
}

pub fn runtime() -> Runtime {
    let registry = Arc::new(Registry::with_catalog(TEST_CATALOG).expect("test catalog registers"));
    Runtime::new(
        registry,
        Workspace::new(std::env::temp_dir()).expect("temp dir"),
    )
}

pub fn run(runtime: &Runtime, tool: &str, arguments: Value) -> Outcome {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(runtime.execute_call(Call::new(tool, arguments)))
}

pub fn pointers(outcome: &Outcome) -> Vec<String> {
    match outcome {
        Outcome::InvalidArguments { violations, .. } => {
            violations.iter().map(|v| v.pointer.clone()).collect()
        }
        other => panic!("expected invalid_arguments, got {other:?}"),
    }
}
