//! Programs run under the OS sandbox (Landlock, a mount namespace, seccomp): each test
//! tries what a hostile command would, fails with the kernel's error, and checks that the
//! same command works where the policy allows it (so a test cannot pass because the
//! command was broken).

use std::path::Path;
use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules, SandboxMode, SandboxPolicy, SandboxRead};
use kyro_core::receipt::{Decision, Denial};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::{Value, json};

fn policy(sandbox: SandboxPolicy) -> Policy {
    Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        sandbox,
        ..Policy::default()
    }
}

fn execute(root: &Path, policy: &Policy, tool: &str, arguments: Value) -> (Outcome, Vec<kyro_core::Receipt>) {
    #[derive(Default)]
    struct Receipts(std::sync::Mutex<Vec<kyro_core::Receipt>>);
    impl kyro_core::Observer for Receipts {
        fn observe(&self, receipt: &kyro_core::Receipt, _: Option<&kyro_core::receipt::CanonicalCall>, _: &Outcome) {
            self.0.lock().unwrap().push(receipt.clone());
        }
    }
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let receipts = Arc::new(Receipts::default());
    let runtime = Runtime::new(registry, Workspace::new(root).unwrap(), policy)
        .unwrap()
        .with_observer(receipts.clone());
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new(tool, arguments)));
    let receipts = receipts.0.lock().unwrap().clone();
    (outcome, receipts)
}

/// Runs `script` with `sh -c` in `root` under `sandbox`; its result.
fn sh(root: &Path, sandbox: SandboxPolicy, script: &str) -> Value {
    match execute(
        root,
        &policy(sandbox),
        "run_command",
        json!({"argv": ["sh", "-c", script]}),
    )
    .0
    {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

fn workspace_write() -> SandboxPolicy {
    SandboxPolicy::default()
}

/// A workspace with a `.git` and a `.kyro`, and a directory outside it.
fn places() -> (tempfile::TempDir, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(ws.path().join(".kyro")).unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "ssh key\n").unwrap();
    (ws, outside)
}

#[test]
fn workspace_write_keeps_writes_inside_the_roots_and_out_of_git_and_kyro() {
    let (ws, outside) = places();
    let out = outside.path().display().to_string();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("planted")).unwrap();
    let script = format!(
        "echo a > {out}/absolute; echo b > ../$(basename {out})/dotdot; echo c > planted/through_symlink; \
         ln {out}/secret hardlink && echo d >> hardlink; echo e > .git/hooks/pre-commit; echo f > .kyro/state.db; \
         echo inside > src/made.txt && echo wrote-inside; echo tmp > \"$TMPDIR/t\" && echo wrote-tmp"
    );
    // From a directory beside the workspace, `..` reaches the outside directory's parent.
    let result = sh(ws.path(), workspace_write(), &script);
    let stderr = result["stderr"].as_str().unwrap();
    for made in ["absolute", "dotdot", "through_symlink"] {
        assert!(!outside.path().join(made).exists(), "{made} was written: {stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "ssh key\n"
    );
    assert!(!ws.path().join("hardlink").exists(), "{stderr}");
    assert!(!ws.path().join(".git/hooks/pre-commit").exists(), "{stderr}");
    assert!(!ws.path().join(".kyro/state.db").exists(), "{stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert_eq!(result["stdout"], "wrote-inside\nwrote-tmp\n", "{stderr}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/made.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        result["sandbox"]
            .as_str()
            .unwrap()
            .starts_with("workspace-write, network off"),
        "{result}"
    );

    // Without the sandbox the same script writes outside: the test above proves the rule.
    let full = SandboxPolicy {
        mode: SandboxMode::Full,
        ..SandboxPolicy::default()
    };
    let result = sh(ws.path(), full, &format!("echo a > {out}/absolute"));
    assert!(outside.path().join("absolute").exists(), "{result}");
    assert!(result["sandbox"].as_str().unwrap().starts_with("full"), "{result}");
}

#[test]
fn read_only_writes_nowhere_but_its_temporary_directory() {
    let (ws, _outside) = places();
    let read_only = SandboxPolicy {
        mode: SandboxMode::ReadOnly,
        ..SandboxPolicy::default()
    };
    let result = sh(
        ws.path(),
        read_only,
        "echo x > src/a.txt; echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    );
    assert!(!ws.path().join("src/a.txt").exists());
    assert_eq!(result["stdout"], "t\n");
    assert!(
        result["stderr"].as_str().unwrap().contains("Permission denied"),
        "{result}"
    );
}

#[test]
fn reads_confined_to_the_roots_when_the_policy_says_so() {
    let (ws, outside) = places();
    std::fs::write(ws.path().join("src/own.txt"), "own\n").unwrap();
    let script = format!("cat {}/secret; cat src/own.txt", outside.path().display());
    let roots = SandboxPolicy {
        read: SandboxRead::Roots,
        ..SandboxPolicy::default()
    };
    let result = sh(ws.path(), roots, &script);
    assert_eq!(result["stdout"], "own\n", "{result}");
    // Not in the program's root at all (and Landlock would refuse it if it were).
    assert!(
        result["stderr"].as_str().unwrap().contains("No such file or directory"),
        "{result}"
    );
    // Reading everywhere (the default) reads it: the confinement is what refused it.
    let result = sh(ws.path(), workspace_write(), &script);
    assert_eq!(result["stdout"], "ssh key\nown\n", "{result}");
}

/// Tries a TCP connection to a listener of the test's; whether one arrived.
fn connects(ws: &Path, sandbox: SandboxPolicy, rules: Option<Value>) -> (bool, Value) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let mut policy = policy(sandbox);
    if let Some(rules) = rules {
        policy.tools.insert("shell".into(), json!({ "rules": rules }));
    }
    // A script file, not `bash -c`: inline code matches no rule, and a rule widens this one.
    let script = format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo connected\n");
    std::fs::write(ws.join("connect.sh"), script).unwrap();
    let result = match execute(ws, &policy, "run_command", json!({"argv": ["bash", "connect.sh"]})).0 {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    (listener.accept().is_ok(), result)
}

#[test]
fn network_off_refuses_a_connection_to_loopback_and_a_rule_can_allow_one_command() {
    let (ws, _outside) = places();
    let (arrived, result) = connects(ws.path(), workspace_write(), None);
    assert!(!arrived, "{result}");
    assert_eq!(result["stdout"], "", "{result}");
    assert!(result["stderr"].as_str().unwrap().contains("not permitted"), "{result}");
    // The policy's network switch, and a rule widening one command, let it through.
    let on = SandboxPolicy {
        network: true,
        ..SandboxPolicy::default()
    };
    let (arrived, result) = connects(ws.path(), on, None);
    assert!(arrived, "{result}");
    let rule = json!([{"argv": ["bash", "connect.sh"], "decision": "auto", "network": true}]);
    let (arrived, result) = connects(ws.path(), workspace_write(), Some(rule));
    assert!(arrived, "{result}");
    assert!(result["sandbox"].as_str().unwrap().contains("network on"), "{result}");
}

#[test]
fn grandchildren_that_leave_the_session_or_double_fork_are_held_too() {
    let (ws, outside) = places();
    let out = outside.path().display().to_string();
    let script = format!(
        "setsid -w sh -c 'echo x > {out}/setsid'; (sh -c 'echo y > {out}/double' &); sleep 0.3; \
         setsid -w sh -c 'echo z > src/setsid_inside' && echo done"
    );
    let result = sh(ws.path(), workspace_write(), &script);
    assert!(!outside.path().join("setsid").exists(), "{result}");
    assert!(!outside.path().join("double").exists(), "{result}");
    assert!(ws.path().join("src/setsid_inside").exists(), "{result}");
    assert_eq!(result["stdout"], "done\n", "{result}");
}

#[test]
fn the_sandbox_is_in_place_before_the_program_runs_and_cannot_be_lifted() {
    let (ws, _outside) = places();
    // The program's own first look at itself: no new privileges and a seccomp filter
    // (both set before exec), and Landlock refuses it the mount that would expose `.git`.
    let result = sh(
        ws.path(),
        workspace_write(),
        "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; umount -l .git; echo h > .git/hooks/post-checkout",
    );
    assert_eq!(result["stdout"], "NoNewPrivs:\t1\nSeccomp:\t2\n", "{result}");
    assert!(!ws.path().join(".git/hooks/post-checkout").exists(), "{result}");
}

fn outcome_of(ws: &Path, rules: Value, arguments: Value) -> Outcome {
    let mut policy = Policy::default(); // exec asks
    policy.tools.insert("shell".into(), json!({ "rules": rules }));
    execute(ws, &policy, "run_command", arguments).0
}

/// The decision of a `run_command` call under `rules`, and its outcome.
fn decided(ws: &Path, rules: &Value, arguments: Value) -> (Outcome, Decision) {
    let mut policy = Policy::default(); // exec asks
    policy.tools.insert("shell".into(), json!({ "rules": rules }));
    let (outcome, receipts) = execute(ws, &policy, "run_command", arguments);
    (outcome, receipts[0].decision.clone())
}

#[test]
fn an_exact_rule_decides_only_its_argv_and_a_prefix_rule_what_starts_with_its_own() {
    let ws = tempfile::tempdir().unwrap();
    let rules = json!([
        {"argv": ["true", "test"], "decision": "auto"},
        {"argv_prefix": ["true", "ok"], "decision": "auto"},
        {"argv_prefix": ["false"], "decision": "deny"}
    ]);
    let (outcome, decision) = decided(ws.path(), &rules, json!({"argv": ["true", "test"]}));
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
    assert_eq!(
        decision,
        Decision::AllowedByRule {
            rule: "[tools.shell] rule argv [\"true\",\"test\"]".into()
        }
    );
    let (outcome, decision) = decided(ws.path(), &rules, json!({"argv": ["true", "ok", "--quiet"]}));
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
    assert_eq!(
        decision,
        Decision::AllowedByRule {
            rule: "[tools.shell] rule argv_prefix [\"true\",\"ok\"]".into()
        }
    );
    for not_matching in [
        json!({"argv": ["true", "test", "--quiet"]}),
        json!({"argv": ["true"]}),
        json!({"argv": ["true", "testx"]}),
        json!({"argv": ["sh", "-c", "true test; rm -rf ."]}),
        json!({"argv": ["true test; rm -rf ."], "shell": true}),
        json!({"argv": ["true", "test"], "env": [{"name": "LD_PRELOAD", "value": "/tmp/x.so"}]}),
        json!({"argv": ["true", "ok"], "env": [{"name": "ANYTHING", "value": "1"}]}),
    ] {
        let outcome = outcome_of(ws.path(), rules.clone(), not_matching.clone());
        assert!(
            matches!(outcome, Outcome::ApprovalRequired { .. }),
            "{not_matching}: {outcome:?}"
        );
    }
    match outcome_of(ws.path(), rules, json!({"argv": ["false", "--anything"]})) {
        Outcome::Denied {
            reason: Denial::RuleForbids { rule },
            ..
        } => assert_eq!(rule, "[tools.shell] rule argv_prefix [\"false\"]"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_exact_rule_wins_over_prefixes_the_longest_prefix_over_shorter_and_malformed_rules_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    let rules = json!([
        {"argv_prefix": ["true"], "decision": "deny"},
        {"argv_prefix": ["true", "status"], "decision": "auto"},
        {"argv_prefix": ["true", "push"], "decision": "deny"},
        {"argv": ["true", "push"], "decision": "auto"}
    ]);
    for (argv, allowed) in [
        (json!(["true", "status", "-s"]), true),
        (json!(["true", "push"]), true),
        (json!(["true", "push", "--force"]), false),
        (json!(["true", "pull"]), false),
    ] {
        let outcome = outcome_of(ws.path(), rules.clone(), json!({ "argv": argv }));
        if allowed {
            assert!(matches!(outcome, Outcome::Ok { .. }), "{argv}: {outcome:?}");
        } else {
            assert!(matches!(outcome, Outcome::Denied { .. }), "{argv}: {outcome:?}");
        }
    }
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    for (rule, says) in [
        (
            json!({"argv_prefix": [], "decision": "auto"}),
            "must name at least the program",
        ),
        (
            json!({"argv": [], "decision": "auto"}),
            "must name at least the program",
        ),
        (
            json!({"argv": ["git"], "argv_prefix": ["git"], "decision": "auto"}),
            "both `argv` and `argv_prefix`",
        ),
        (json!({"decision": "auto"}), "needs `argv`"),
        (
            json!({"argv": ["git", "diff"], "env": ["GIT_EXTERNAL_DIFF"], "decision": "auto"}),
            "changes which code runs",
        ),
    ] {
        let mut policy = Policy::default();
        policy.tools.insert("shell".into(), json!({ "rules": [rule] }));
        let error = Runtime::new(registry.clone(), Workspace::new(ws.path()).unwrap(), &policy).unwrap_err();
        assert!(
            matches!(&error, kyro_core::policy::ScopeError::Settings { table, message } if table == "shell" && message.contains(says)),
            "{rule}: {error}"
        );
    }
}

#[test]
fn receipts_record_the_sandbox_of_every_program_git_included() {
    let (ws, _outside) = places();
    std::fs::remove_dir_all(ws.path().join(".git")).unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(ws.path())
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q", "."]);
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let policy = policy(workspace_write());
    let (outcome, receipts) = execute(ws.path(), &policy, "git_add", json!({"paths": ["a.txt"]}));
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
    let sandboxes: Vec<String> = receipts[0]
        .effects
        .iter()
        .map(|e| serde_json::to_value(e).unwrap()["sandbox"].as_str().unwrap().to_owned())
        .collect();
    assert!(!sandboxes.is_empty());
    for sandbox in sandboxes {
        assert!(sandbox.starts_with("workspace-write, network off"), "{sandbox}");
    }
    let (outcome, receipts) = execute(ws.path(), &policy, "run_command", json!({"argv": ["true"]}));
    assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
    let effect = serde_json::to_value(&receipts[0].effects[0]).unwrap();
    assert!(
        effect["sandbox"]
            .as_str()
            .unwrap()
            .starts_with("workspace-write, network off"),
        "{effect}"
    );
}

#[test]
fn a_background_process_runs_under_the_same_sandbox() {
    let (ws, outside) = places();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy(workspace_write())).unwrap();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = |tool: &str, args: Value| match executor.block_on(runtime.execute_call(Call::new(tool, args))) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    let script = format!(
        "echo x > {}/background; echo y > .git/hooks/bg; echo z > src/bg && echo wrote",
        outside.path().display()
    );
    let started = run("start_process", json!({"argv": ["sh", "-c", script]}));
    let output = run("read_process_output", json!({"id": started["id"], "wait_ms": 5000}));
    assert_eq!(output["stdout"], "wrote\n", "{output}");
    assert!(!outside.path().join("background").exists(), "{output}");
    assert!(!ws.path().join(".git/hooks/bg").exists(), "{output}");
    assert!(ws.path().join("src/bg").exists(), "{output}");
}

#[test]
fn a_writable_path_of_the_policy_is_writable_and_nothing_beside_it() {
    let (ws, outside) = places();
    let cache = outside.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    let sandbox = SandboxPolicy {
        writable: vec![cache.clone()],
        ..SandboxPolicy::default()
    };
    let out = outside.path().display();
    let result = sh(
        ws.path(),
        sandbox,
        &format!("echo c > {out}/cache/entry; echo d > {out}/beside"),
    );
    assert!(cache.join("entry").exists(), "{result}");
    assert!(!outside.path().join("beside").exists(), "{result}");
}

#[test]
fn a_nested_repository_keeps_its_git_directory_read_only_too() {
    let (ws, _outside) = places();
    std::fs::create_dir_all(ws.path().join("vendor/lib/.git/hooks")).unwrap();
    let result = sh(
        ws.path(),
        workspace_write(),
        "echo h > vendor/lib/.git/hooks/pre-commit; echo ok > vendor/lib/file && echo wrote",
    );
    assert!(!ws.path().join("vendor/lib/.git/hooks/pre-commit").exists(), "{result}");
    assert!(
        result["stderr"].as_str().unwrap().contains("Read-only file system"),
        "{result}"
    );
    assert_eq!(result["stdout"], "wrote\n", "{result}");
}
