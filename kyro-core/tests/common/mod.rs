//! Shared test fixtures: a small catalog of test tools and a runtime over it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;

use kyro_core::{
    Call, Execute, Execution, Outcome, Policy, Registry, Runtime, ToolContext, ToolError, Workspace, WorkspacePath,
    tool,
};
use schemars::JsonSchema;
use serde_json::Value;

/// How many times a counting tool ran, per workspace root. Executors run on the blocking
/// pool, not the test's thread; each test that counts has its own workspace, so counts of
/// tests running side by side never mix.
static RUNS: Mutex<BTreeMap<PathBuf, u64>> = Mutex::new(BTreeMap::new());

pub fn recorded(root: &Path) -> u64 {
    let root = root.canonicalize().expect("workspace root");
    RUNS.lock().unwrap().get(&root).copied().unwrap_or(0)
}

fn count_run(cx: &ToolContext) {
    *RUNS
        .lock()
        .unwrap()
        .entry(cx.workspace().root().to_path_buf())
        .or_default() += 1;
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
#[kyro_core::output]
#[derive(Debug)]
pub struct Echo {
    /// The count.
    pub count: u32,
}

impl Execute for Record {
    type Output = Echo;

    async fn run(self, cx: &ToolContext) -> Result<Echo, ToolError> {
        count_run(cx);
        Ok(Echo { count: self.count })
    }
}

kyro_core::catalog! {
    pub const TEST_CATALOG = [Record, Touch, Peek, Nap, Big, Guarded];
}

pub fn runtime() -> Runtime {
    runtime_in(&std::env::temp_dir(), &Policy::default())
}

pub fn runtime_in(root: &Path, policy: &Policy) -> Runtime {
    let registry = Arc::new(Registry::with_catalog(TEST_CATALOG).expect("test catalog registers"));
    Runtime::new(registry, Workspace::new(root).expect("workspace"), policy).expect("policy applies")
}

pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

pub fn run(runtime: &Runtime, tool: &str, arguments: Value) -> Outcome {
    block_on(runtime.execute_call(Call::new(tool, arguments)))
}

pub fn execute(runtime: &Runtime, call: Call) -> Execution {
    block_on(runtime.execute(call))
}

/// Write `content` to `path`, counting runs.
#[tool(name = "touch", category = "testing", effect = "write")]
pub struct Touch {
    /// Where to write.
    pub path: WorkspacePath,
    /// What to write.
    pub content: String,
}

/// What `touch` returns.
#[kyro_core::output]
#[derive(Debug)]
pub struct Touched {
    /// The path written, relative to its root.
    pub path: String,
}

impl Execute for Touch {
    type Output = Touched;

    async fn run(self, cx: &ToolContext) -> Result<Touched, ToolError> {
        count_run(cx);
        let path = cx.path(&self.path)?;
        let before = path.read().ok();
        path.write_atomic(self.content.as_bytes(), before.as_deref())?;
        Ok(Touched { path: path.display() })
    }
}

/// Read the files at `paths`, counting runs.
#[tool(name = "peek", category = "testing", effect = "read")]
pub struct Peek {
    /// The files.
    pub paths: Vec<WorkspacePath>,
}

/// What `peek` returns.
#[kyro_core::output]
#[derive(Debug)]
pub struct Peeked {
    /// The contents, in order.
    pub contents: Vec<String>,
}

impl Execute for Peek {
    type Output = Peeked;

    async fn run(self, cx: &ToolContext) -> Result<Peeked, ToolError> {
        count_run(cx);
        let mut contents = Vec::new();
        for path in &self.paths {
            contents.push(String::from_utf8_lossy(&cx.path(path)?.read()?).into_owned());
        }
        Ok(Peeked { contents })
    }
}

/// Sleep, then answer.
#[tool(name = "nap", category = "testing", effect = "none")]
pub struct Nap {
    /// How long, in milliseconds.
    pub ms: u64,
}

impl Execute for Nap {
    type Output = Echo;

    async fn run(self, _cx: &ToolContext) -> Result<Echo, ToolError> {
        tokio::time::sleep(std::time::Duration::from_millis(self.ms)).await;
        Ok(Echo { count: 0 })
    }
}

/// Answer with `size` bytes.
#[tool(name = "big", category = "testing", effect = "none")]
pub struct Big {
    /// How many bytes.
    pub size: u32,
}

/// What `big` returns.
#[kyro_core::output]
#[derive(Debug)]
pub struct Blob {
    /// The bytes.
    pub data: String,
}

impl Execute for Big {
    type Output = Blob;

    async fn run(self, _cx: &ToolContext) -> Result<Blob, ToolError> {
        Ok(Blob {
            data: "x".repeat(self.size as usize),
        })
    }
}

/// Compute nothing, but always ask first.
#[tool(name = "guarded", category = "testing", effect = "none", approval = "required")]
pub struct Guarded {
    /// A value.
    pub value: u32,
}

impl Execute for Guarded {
    type Output = Echo;

    async fn run(self, cx: &ToolContext) -> Result<Echo, ToolError> {
        count_run(cx);
        Ok(Echo { count: self.value })
    }
}

pub fn pointers(outcome: &Outcome) -> Vec<String> {
    match outcome {
        Outcome::InvalidArguments { violations, .. } => violations.iter().map(|v| v.pointer.clone()).collect(),
        other => panic!("expected invalid_arguments, got {other:?}"),
    }
}
