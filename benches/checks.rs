//! Checking a call's arguments and making the typed struct, for `read_file`'s arguments:
//! the schema's validator (jsonschema, what every call ran before) followed by serde's
//! pass that makes the struct, against the check `#[tool]` generates, which makes the
//! struct in the same pass.
//!
//! `cargo bench --bench checks`. Both are timed in batches of `BATCH` checks; the median
//! batch is reported per call, with the ratio.

use std::time::Instant;

use kyro_core::Registry;
use serde::Deserialize;
use serde_json::{Value, json};

const BATCH: usize = 5000;
const SAMPLES: usize = 31;

fn median_ns(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn timed(mut run: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..BATCH {
        run();
    }
    start.elapsed().as_nanos() as f64 / BATCH as f64
}

fn main() {
    let registry = Registry::with_catalog(kyro_tools::BUILTINS).unwrap();
    let snapshot = registry.snapshot();
    let tool = snapshot.get("read_file").unwrap();
    let schema = tool.input().unwrap();
    let entry = kyro_tools::BUILTINS
        .iter()
        .find(|e| e.spec.name == "read_file")
        .unwrap();
    let generated = entry.check.expect("read_file has a generated check");
    let cases: [(&str, Value); 2] = [
        ("valid", json!({"path": "src/lib.rs", "offset": 11, "limit": 200})),
        ("refused", json!({"path": "", "offset": 0, "limt": 200})),
    ];
    println!("checks bench: read_file's arguments, {SAMPLES} samples of {BATCH}");
    // `KYRO_CHECKS_PROFILE=1`: only the generated check on the valid case, for a profiler.
    if std::env::var_os("KYRO_CHECKS_PROFILE").is_some() {
        for _ in 0..20_000_000 {
            std::hint::black_box(generated(std::hint::black_box(&cases[0].1)).unwrap().is_ok());
        }
        return;
    }
    for (name, args) in &cases {
        assert_eq!(
            generated(args).unwrap().is_ok(),
            schema.violations(args).is_empty(),
            "the two agree on {args}"
        );
        let (mut interpreted, mut compiled) = (Vec::new(), Vec::new());
        for _ in 0..SAMPLES {
            interpreted.push(timed(|| {
                let found = schema.violations(std::hint::black_box(args));
                if found.is_empty() {
                    std::hint::black_box(kyro_tools::files::ReadFile::deserialize(args).unwrap());
                }
                std::hint::black_box(found);
            }));
            // One pass: the check makes the typed arguments as it reads them.
            compiled.push(timed(|| {
                let _ = std::hint::black_box(generated(std::hint::black_box(args)).unwrap());
            }));
        }
        let (i, c) = (median_ns(interpreted), median_ns(compiled));
        println!("{name:<8} jsonschema + serde  median {i:>8.0} ns");
        println!(
            "{name:<8} generated, typed   median {c:>8.0} ns   ({:.1}x faster)",
            i / c
        );
    }
}
