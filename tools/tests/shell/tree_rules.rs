//! Command rules against what the tree names: a ruled `git` runs with the repository's
//! config isolated, a cargo rule never widens the sandbox over the tree's cargo config, deny
//! and ask rules hold through paths, wrappers and global options, and the variables that
//! change which code runs are never ruled.

use kyro_core::{Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

use super::{Session, env, is_allowed_by_rule, open_policy, result, with_rules};

/// An executable `name` in `dir` that leaves `pwned-NAME` in the directory it runs in (and
/// runs its arguments, as a wrapper would).
fn plant(dir: &Path, name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\ntouch pwned-{name}\n[ $# -gt 0 ] && exec \"$@\"\nexit 0\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A git repository at `dir` whose own config names `program` as its fsmonitor, a
/// textconv, a pager and the alias `st`.
fn repository_naming(dir: &Path, program: &Path) {
    let git = |args: &[&str]| {
        let done = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(done.status.success(), "{done:?}");
    };
    git(&["init", "-q"]);
    let program = program.to_str().unwrap();
    git(&["config", "core.fsmonitor", program]);
    git(&["config", "alias.st", &format!("!{program}")]);
    git(&["config", "pager.status", program]);
    git(&["config", "core.pager", program]);
}

fn failure(outcome: &Outcome) -> Option<kyro_tools::Failure> {
    match outcome {
        Outcome::ExecutionFailed { error, .. } => kyro_tools::Failure::of(error),
        _ => None,
    }
}

/// A rule that names `git status` runs git, not the program the repository's config names
/// (`core.fsmonitor`, an alias, a pager), and only in the directory it names: not through
/// `cwd` into a nested repository.
#[test]
fn a_git_rule_runs_git_with_the_repositorys_config_isolated_and_only_where_it_names() {
    let ws = tempfile::tempdir().unwrap();
    let evil = plant(ws.path(), "evil");
    repository_naming(ws.path(), &evil);
    let nested = ws.path().join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    repository_naming(&nested, &evil);
    let session = Session::new(
        ws.path(),
        &with_rules(json!([
            {"argv": ["git", "status"], "decision": "auto"},
            {"argv": ["git", "st"], "decision": "auto"},
            {"argv": ["git", "status", "--short"], "cwd": "./vendor//lib/", "decision": "auto"}
        ])),
    );
    let status = result(session.call("run_command", json!({"argv": ["git", "status"]})));
    assert!(
        is_allowed_by_rule(&session.decision(), "[tools.shell] rule argv [\"git\",\"status\"]"),
        "{:?}",
        session.decision()
    );
    assert_eq!(status["exit_code"], 0, "{status}");
    assert!(status["stdout"].as_str().unwrap().contains("evil"), "{status}");
    assert!(
        !ws.path().join("pwned-evil").exists(),
        "a ruled git ran the fsmonitor its repository's config names"
    );
    // The alias the tree wrote runs nothing.
    let alias = result(session.call("run_command", json!({"argv": ["git", "st"]})));
    assert_ne!(alias["exit_code"], 0, "{alias}");
    assert!(
        !ws.path().join("pwned-evil").exists(),
        "a ruled git ran the program its repository's config names"
    );
    // A rule without `cwd` names the workspace root: in a nested repository it asks.
    for cwd in ["vendor/lib", "vendor/../vendor/lib"] {
        let nested_call = session.call("run_command", json!({"argv": ["git", "status"], "cwd": cwd}));
        assert!(
            matches!(nested_call, Outcome::ApprovalRequired { .. }),
            "{cwd}: {nested_call:?}"
        );
    }
    // A rule naming the nested directory runs there, its config isolated too.
    let there = result(session.call(
        "run_command",
        json!({"argv": ["git", "status", "--short"], "cwd": "vendor/lib"}),
    ));
    assert_eq!(there["exit_code"], 0, "{there}");
    assert!(
        is_allowed_by_rule(
            &session.decision(),
            "[tools.shell] rule argv [\"git\",\"status\",\"--short\"] cwd \"vendor/lib\""
        ),
        "{:?}",
        session.decision()
    );
    assert!(!nested.join("pwned-evil").exists());
    // A config including another file is refused (kyro's git tools refuse it too).
    std::fs::write(ws.path().join("more.config"), "[core]\n\tfsmonitor = /bin/true\n").unwrap();
    let done = std::process::Command::new("git")
        .args(["config", "include.path", "../more.config"])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(done.success());
    let refused = session.call("run_command", json!({"argv": ["git", "status"]}));
    assert!(
        matches!(failure(&refused), Some(kyro_tools::Failure::UnsafeRepository { .. })),
        "{refused:?}"
    );
    assert!(!ws.path().join("pwned-evil").exists());
}

/// README's own `cargo fetch` network rule: a `.cargo/config.toml` in the tree naming a
/// workspace script as `rustc-wrapper` would run it with the network on. kyro refuses to
/// widen the sandbox for it; the script never reaches a listener on loopback.
#[test]
fn a_cargo_network_rule_does_not_widen_the_sandbox_while_the_tree_holds_cargo_config() {
    use std::os::unix::fs::PermissionsExt;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
    std::fs::write(
        ws.path().join("Cargo.toml"),
        "[package]\nname = \"fetched\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(ws.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    let wrapper = ws.path().join("wrapper.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/bash\nexec 3<>/dev/tcp/127.0.0.1/{port} && echo reached >&3\nexec \"$@\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        ws.path().join(".cargo/config.toml"),
        format!("[build]\nrustc-wrapper = \"{}\"\n", wrapper.display()),
    )
    .unwrap();
    let session = Session::new(
        ws.path(),
        &with_rules(json!([{"argv": ["cargo", "fetch"], "decision": "auto", "network": true}])),
    );
    let refused = session.call("run_command", json!({"argv": ["cargo", "fetch"], "timeout_ms": 120000}));
    assert!(
        matches!(&failure(&refused), Some(kyro_tools::Failure::TreeConfig { path, .. }) if path.ends_with(".cargo/config.toml")),
        "{refused:?}"
    );
    // Nothing the tree named reached the listener.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the tree's rustc-wrapper reached the network"
    );
    // Without the tree's config the rule holds: cargo runs with the network.
    std::fs::remove_file(ws.path().join(".cargo/config.toml")).unwrap();
    let ran = result(session.call("run_command", json!({"argv": ["cargo", "fetch"], "timeout_ms": 120000})));
    assert!(ran["sandbox"].as_str().unwrap().contains("network on"), "{ran}");
}

/// Under a policy that runs everything, rules that deny `rm` and `git push` and ask for
/// `python3` hold each back however the call spells it: the program by its path, behind
/// `env` (options and assignments), `nice`, `nohup`, `timeout`, `stdbuf`, `setsid`, past
/// git's global options, with a variable set, in another directory.
#[test]
fn a_denying_rule_holds_its_command_back_behind_paths_wrappers_and_global_options() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    std::fs::write(ws.path().join("keep"), "").unwrap();
    std::fs::write(ws.path().join("sub/keep"), "").unwrap();
    let mut policy = open_policy();
    policy.tools.insert(
        "shell".into(),
        json!({ "rules": [
            {"argv_prefix": ["rm"], "decision": "deny"},
            {"argv_prefix": ["git", "push"], "decision": "deny"},
            {"argv_prefix": ["python3"], "decision": "ask"}
        ] }),
    );
    let session = Session::new(ws.path(), &policy);
    for call in [
        json!({"argv": ["/bin/rm", "keep"]}),
        json!({"argv": ["/usr/bin/env", "rm", "keep"]}),
        json!({"argv": ["env", "-i", "PATH=/usr/bin:/bin", "rm", "keep"]}),
        json!({"argv": ["nice", "-n", "5", "rm", "keep"]}),
        json!({"argv": ["nohup", "rm", "keep"]}),
        json!({"argv": ["timeout", "-s", "KILL", "5", "rm", "keep"]}),
        json!({"argv": ["stdbuf", "-o0", "rm", "keep"]}),
        json!({"argv": ["setsid", "-w", "env", "A=1", "/usr/bin/rm", "keep"]}),
        json!({"argv": ["rm", "keep"], "env": env(&[("FOO", "1")])}),
        json!({"argv": ["rm", "keep"], "cwd": "sub"}),
        json!({"argv": ["git", "-C", ".", "push"]}),
        json!({"argv": ["git", "-c", "push.default=nothing", "--no-pager", "push"]}),
    ] {
        let outcome = session.call("run_command", call.clone());
        assert!(matches!(outcome, Outcome::Denied { .. }), "{call}: {outcome:?}");
    }
    let asked = session.call("run_command", json!({"argv": ["env", "python3", "-V"]}));
    assert!(matches!(asked, Outcome::ApprovalRequired { .. }), "{asked:?}");
    assert!(ws.path().join("keep").exists() && ws.path().join("sub/keep").exists());
    // What is not the command runs: `rm` as an argument, another git subcommand.
    let echoed = result(session.call("run_command", json!({"argv": ["env", "echo", "rm"]})));
    assert_eq!(echoed["stdout"], "rm\n");
    assert!(matches!(
        session.call("run_command", json!({"argv": ["git", "-C", ".", "--version"]})),
        Outcome::Ok { .. }
    ));
}

/// Variables an earlier list missed (`PYTHONUSERBASE` runs a `.pth` the tree holds,
/// `JDK_JAVA_OPTIONS`, `_JAVA_OPTIONS`, `RUSTUP_TOOLCHAIN`, `MAKEFILES`, `GEM_PATH`,
/// `CLASSPATH`, `BUNDLE_GEMFILE`) change which code runs: no rule may list one, a call
/// setting one through `env NAME=VALUE` asks though a rule names its argv exactly, and the
/// approval prompt flags it.
#[test]
fn code_changing_variables_the_list_missed_are_never_ruled() {
    const MISSED: &[&str] = &[
        "PYTHONUSERBASE",
        "JDK_JAVA_OPTIONS",
        "_JAVA_OPTIONS",
        "RUSTUP_TOOLCHAIN",
        "MAKEFILES",
        "GEM_PATH",
        "CLASSPATH",
        "BUNDLE_GEMFILE",
    ];
    let ws = tempfile::tempdir().unwrap();
    let version = std::process::Command::new("python3")
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    let site = ws.path().join(format!("ub/lib/python{}/site-packages", version.trim()));
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("planted.pth"), "import os; open('pwned-pth', 'w').close()\n").unwrap();
    std::fs::write(ws.path().join("x.py"), "print('ran')\n").unwrap();
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    for name in MISSED {
        let policy = with_rules(json!([{"argv": ["python3", "x.py"], "env": [name], "decision": "auto"}]));
        match Runtime::new(registry.clone(), Workspace::new(ws.path()).unwrap(), &policy) {
            Err(refused) => assert!(refused.to_string().contains(name), "{name}: {refused}"),
            Ok(_) => panic!("a rule listing {name} was accepted"),
        }
    }
    let assignments: Vec<Value> = MISSED
        .iter()
        .map(|name| json!(["env", format!("{name}=ub"), "python3", "x.py"]))
        .collect();
    let session = Session::new(
        ws.path(),
        &with_rules(Value::Array(
            assignments
                .iter()
                .map(|argv| json!({"argv": argv, "decision": "auto"}))
                .collect(),
        )),
    );
    for argv in &assignments {
        let outcome = session.call("run_command", json!({ "argv": argv }));
        assert!(
            matches!(outcome, Outcome::ApprovalRequired { .. }),
            "{argv}: {outcome:?}"
        );
    }
    assert!(!ws.path().join("pwned-pth").exists(), "a planted .pth ran unasked");
    let asked = Session::new(ws.path(), &Policy::default());
    for name in MISSED {
        match asked.call(
            "run_command",
            json!({"argv": ["python3", "x.py"], "env": env(&[(name, "ub")])}),
        ) {
            Outcome::ApprovalRequired { summary, .. } => {
                assert!(summary.contains(&format!("⚠ {name} changes which code")), "{summary}");
                assert!(!summary.contains("[[tools.shell.rules]]"), "{summary}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // The attack is real: approved, the variable runs the tree's `.pth`.
    let open = Session::new(ws.path(), &open_policy());
    let ran = result(open.call(
        "run_command",
        json!({"argv": ["python3", "x.py"], "env": env(&[("PYTHONUSERBASE", "ub")])}),
    ));
    assert_eq!(ran["stdout"], "ran\n", "{ran}");
    assert!(ws.path().join("pwned-pth").exists(), "{ran}");
}
