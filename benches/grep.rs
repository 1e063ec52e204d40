//! kyro's `grep` tool against the `rg` binary on one generated tree, in one run.
//!
//! `cargo bench --bench grep` (ripgrep must be on PATH: Debian package `ripgrep`).
//! Both search the same pattern over the same files, with .gitignore respected and line
//! numbers on; kyro's time includes the whole call boundary (validation, authorization,
//! receipt) and the structured result, rg's includes process start and printing to a pipe.
//! Each side runs a warm-up and then `ROUNDS` timed searches; medians are reported.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kyro_core::{Call, Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::json;

const FILES: usize = 4000;
const LINES: usize = 250;
const ROUNDS: usize = 11;
const PATTERN: &str = "needle_[0-9]+ found";

fn generate(root: &Path) -> usize {
    let mut expected = 0;
    for f in 0..FILES {
        let dir = root.join(format!("d{:02}/e{:02}", f % 40, (f / 40) % 10));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::with_capacity(LINES * 60);
        for l in 0..LINES {
            if (f * LINES + l).is_multiple_of(997) {
                text.push_str(&format!("let value = compute({l}); // needle_{f} found here\n"));
                expected += 1;
            } else {
                text.push_str(&format!(
                    "    let value_{l} = other_function(argument_{l}, {f}); // filler text\n"
                ));
            }
        }
        std::fs::write(dir.join(format!("file{f}.rs")), text).unwrap();
    }
    expected
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    if Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        eprintln!("grep bench: `rg` is not installed (Debian package ripgrep); nothing measured");
        return;
    }
    let tree = tempfile::tempdir().unwrap();
    let expected = generate(tree.path());
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(tree.path()).unwrap(), &Policy::default()).unwrap();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let args = json!({"pattern": PATTERN, "max_results": 5000});

    let kyro_once = || {
        let start = Instant::now();
        let outcome = executor.block_on(runtime.execute_call(Call::new("grep", args.clone())));
        let elapsed = start.elapsed();
        match outcome {
            Outcome::Ok { result, .. } => assert_eq!(result["matches"].as_array().unwrap().len(), expected),
            other => panic!("{other:?}"),
        }
        elapsed
    };
    let rg_once = || {
        let start = Instant::now();
        let out = Command::new("rg")
            .args(["--line-number", "--no-heading", PATTERN, "."])
            .current_dir(tree.path())
            .output()
            .unwrap();
        let elapsed = start.elapsed();
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), expected);
        elapsed
    };

    kyro_once();
    rg_once();
    let mut kyro = Vec::new();
    let mut rg = Vec::new();
    for _ in 0..ROUNDS {
        kyro.push(kyro_once());
        rg.push(rg_once());
    }
    let (k, r) = (median(kyro), median(rg));
    println!(
        "grep bench: {FILES} files, {} lines, {expected} matches, {ROUNDS} rounds each",
        FILES * LINES
    );
    println!("kyro grep (execute_call)  median {:>9.2} ms", k.as_secs_f64() * 1e3);
    println!("rg (process)              median {:>9.2} ms", r.as_secs_f64() * 1e3);
    println!("ratio kyro / rg           {:.2}", k.as_secs_f64() / r.as_secs_f64());
}
