//! The cost of the call boundary for a trivial tool, against its floor.
//!
//! `cargo bench --bench overhead`. The floor is `serde_json::from_value` of the same
//! arguments into the same struct; `execute_call` adds name resolution, alias rewriting,
//! validation, the canonical snapshot and its SHA-256 fingerprint, authorization, the
//! executor under its time limit, output validation and the receipt. Both are timed in
//! batches of `BATCH` calls; the median batch is reported per call.

use std::sync::Arc;
use std::time::Instant;

use kyro_core::{Call, Execute, Outcome, Policy, Registry, Runtime, ToolContext, ToolError, Workspace, tool};
use serde_json::json;

const BATCH: usize = 2000;
const SAMPLES: usize = 31;

/// Echo a text and a count back.
#[tool(name = "echo", category = "benchmark", effect = "none")]
pub struct Echo {
    /// The text.
    pub text: String,
    /// A count.
    pub n: u32,
}

/// The echo.
#[kyro_core::output]
#[derive(Debug)]
pub struct Echoed {
    /// The text.
    pub text: String,
    /// The count.
    pub n: u32,
}

impl Execute for Echo {
    type Output = Echoed;

    async fn run(self, _cx: &ToolContext) -> Result<Echoed, ToolError> {
        Ok(Echoed {
            text: self.text,
            n: self.n,
        })
    }
}

kyro_core::catalog! {
    const BENCH = [Echo];
}

fn median_ns(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let workspace = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::with_catalog(BENCH).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(workspace.path()).unwrap(), &Policy::default()).unwrap();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let args = json!({"text": "hello | world", "n": 42});

    let mut floor = Vec::new();
    let mut boundary = Vec::new();
    for _ in 0..SAMPLES {
        let start = Instant::now();
        for _ in 0..BATCH {
            let echo: Echo = serde_json::from_value(std::hint::black_box(args.clone())).unwrap();
            std::hint::black_box(echo);
        }
        floor.push(start.elapsed().as_nanos() as f64 / BATCH as f64);

        let elapsed = executor.block_on(async {
            let start = Instant::now();
            for _ in 0..BATCH {
                let outcome = runtime
                    .execute_call(Call::new("echo", std::hint::black_box(args.clone())))
                    .await;
                assert!(matches!(outcome, Outcome::Ok { .. }));
            }
            start.elapsed()
        });
        boundary.push(elapsed.as_nanos() as f64 / BATCH as f64);
    }
    let (f, b) = (median_ns(floor), median_ns(boundary));
    println!("overhead bench: {SAMPLES} samples of {BATCH} calls");
    println!("floor  serde_json::from_value   median {f:>9.0} ns/call");
    println!("kyro   execute_call             median {b:>9.0} ns/call");
    println!("ratio  execute_call / floor     {:.1}", b / f);
}
