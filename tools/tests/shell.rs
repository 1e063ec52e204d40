//! What `run_command` and `start_process` trust and show: command rules that approve only
//! what they name, inline code no rule decides, programs found only on absolute `PATH`
//! entries, output that cannot drive a terminal, and a receipt log no first command can
//! plant. Each test tries what a hostile call would and checks it asks, fails or is shown
//! harmlessly, beside the same call allowed where the policy allows it.

use std::path::Path;
use std::sync::{Arc, Mutex};

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::receipt::{CanonicalCall, Decision, JsonlReceiptLog};
use kyro_core::{Call, Observer, Outcome, Policy, Receipt, Registry, Runtime, ToolError, Workspace};
use serde_json::{Value, json};

#[derive(Default)]
struct Receipts(Mutex<Vec<Receipt>>);

impl Observer for Receipts {
    fn observe(&self, receipt: &Receipt, _: Option<&CanonicalCall>, _: &Outcome) {
        self.0.lock().unwrap().push(receipt.clone());
    }
}

/// One runtime over `root` under `policy`, kept across calls, with its receipts.
struct Session {
    runtime: Runtime,
    receipts: Arc<Receipts>,
    executor: tokio::runtime::Runtime,
}

impl Session {
    fn new(root: &Path, policy: &Policy) -> Session {
        let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
        let receipts = Arc::new(Receipts::default());
        let runtime = Runtime::new(registry, Workspace::new(root).unwrap(), policy)
            .unwrap()
            .with_observer(receipts.clone());
        let executor = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Session {
            runtime,
            receipts,
            executor,
        }
    }

    fn call(&self, tool: &str, arguments: Value) -> Outcome {
        self.executor
            .block_on(self.runtime.execute_call(Call::new(tool, arguments)))
    }

    /// The decision of the last call.
    fn decision(&self) -> Decision {
        self.receipts.0.lock().unwrap().last().unwrap().decision.clone()
    }
}

/// The default policy (exec asks) with these `[[tools.shell.rules]]`.
fn with_rules(rules: Value) -> Policy {
    let mut policy = Policy::default();
    policy.tools.insert("shell".into(), json!({ "rules": rules }));
    policy
}

/// Every effect allowed: only the tool itself decides.
fn open_policy() -> Policy {
    Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        ..Policy::default()
    }
}

/// A workspace with `evil`, an executable that leaves `pwned` behind when it runs.
fn workspace_with_evil() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let ws = tempfile::tempdir().unwrap();
    let evil = ws.path().join("evil");
    std::fs::write(&evil, "#!/bin/sh\ntouch \"$(dirname \"$0\")/pwned\"\ncat\n").unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ws.path().join("big.txt"), "b\na\n").unwrap();
    ws
}

/// `env` arguments setting these variables.
fn env(pairs: &[(&str, &str)]) -> Value {
    pairs
        .iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect()
}

fn is_allowed_by_rule(decision: &Decision, rule: &str) -> bool {
    matches!(decision, Decision::AllowedByRule { rule: named } if named == rule)
}

#[test]
fn under_exact_rules_the_options_and_variables_a_prefix_let_through_ask_first() {
    let ws = workspace_with_evil();
    let session = Session::new(
        ws.path(),
        &with_rules(json!([
            {"argv": ["git", "status"], "decision": "auto"},
            {"argv": ["git", "diff"], "decision": "auto"},
            {"argv": ["sort"], "decision": "auto"},
            {"argv": ["find", "."], "decision": "auto"},
            {"argv": ["cargo", "fetch"], "decision": "auto", "network": true}
        ])),
    );
    // The commands the rules name run without asking.
    session.call("run_command", json!({"argv": ["sort"]}));
    assert!(
        is_allowed_by_rule(&session.decision(), "[tools.shell] rule argv [\"sort\"]"),
        "{:?}",
        session.decision()
    );
    session.call("run_command", json!({"argv": ["find", "."]}));
    assert!(
        is_allowed_by_rule(&session.decision(), "[tools.shell] rule argv [\"find\",\".\"]"),
        "{:?}",
        session.decision()
    );
    // What each of them runs when told to by an option or a variable asks first.
    for attack in [
        json!({"argv": ["find", ".", "-exec", "./evil", ";"]}),
        json!({"argv": ["find", ".", "-exec", "sh", "-c", "./evil", ";"]}),
        json!({"argv": ["sort", "--compress-program=./evil", "-S", "1", "big.txt"]}),
        json!({"argv": ["git", "diff"], "env": env(&[("GIT_EXTERNAL_DIFF", "./evil")])}),
        json!({"argv": ["git", "diff", "--ext-diff"]}),
        json!({"argv": ["git", "grep", "--open-files-in-pager=./evil", "a"]}),
        json!({"argv": ["git", "status"], "env": env(&[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
            ("GIT_CONFIG_VALUE_0", "./evil"),
        ])}),
        json!({"argv": ["cargo", "fetch", "--config", "build.rustc-wrapper='./evil'"]}),
        json!({"argv": ["cargo", "fetch"], "env": env(&[("RUSTC", "./evil")])}),
        json!({"argv": ["cargo", "fetch"], "env": env(&[("CARGO_HOME", ".")])}),
        // A variable the rule does not list, harmless or not, is not the rule's.
        json!({"argv": ["sort"], "env": env(&[("LC_ALL", "C")])}),
        json!({"argv": ["env", "GIT_EXTERNAL_DIFF=./evil", "git", "diff"]}),
    ] {
        let outcome = session.call("run_command", attack.clone());
        assert!(
            matches!(outcome, Outcome::ApprovalRequired { .. }),
            "{attack}: {outcome:?}"
        );
    }
    assert!(
        !ws.path().join("pwned").exists(),
        "a workspace program ran without approval"
    );
}

#[test]
fn inline_code_matches_no_rule_even_one_that_names_it() {
    let ws = workspace_with_evil();
    std::fs::write(ws.path().join("script.sh"), "true\n").unwrap();
    let session = Session::new(
        ws.path(),
        &with_rules(json!([
            {"argv_prefix": ["sh", "-c"], "decision": "auto"},
            {"argv_prefix": ["bash"], "decision": "auto"},
            {"argv_prefix": ["python3"], "decision": "auto"},
            {"argv_prefix": ["env"], "decision": "auto"},
            {"argv": ["python3"], "decision": "auto"},
            {"argv": ["sh"], "decision": "auto"}
        ])),
    );
    // A program read from stdin is code too, under an exact rule for its interpreter.
    for (argv, input) in [
        (json!(["python3"]), "import os; os.system('./evil')"),
        (json!(["sh"]), "./evil"),
    ] {
        let outcome = session.call("run_command", json!({ "argv": argv, "stdin": input }));
        assert!(
            matches!(outcome, Outcome::ApprovalRequired { .. }),
            "{argv} with stdin: {outcome:?}"
        );
    }
    for code in [
        json!(["sh", "-c", "./evil"]),
        json!(["bash", "-c", "./evil"]),
        json!(["bash", "-lc", "./evil"]),
        json!(["bash", "-e", "-c", "./evil"]),
        json!(["python3", "-c", "import os; os.system('./evil')"]),
        json!(["env", "A=1", "sh", "-c", "./evil"]),
        json!(["env", "-S", "sh -c ./evil"]),
        json!(["env", "LD_PRELOAD=./evil.so", "true"]),
    ] {
        let outcome = session.call("run_command", json!({ "argv": code }));
        assert!(
            matches!(outcome, Outcome::ApprovalRequired { .. }),
            "{code}: {outcome:?}"
        );
    }
    let outcome = session.call("run_command", json!({"argv": ["./evil"], "shell": true}));
    assert!(matches!(outcome, Outcome::ApprovalRequired { .. }), "{outcome:?}");
    assert!(!ws.path().join("pwned").exists(), "inline code ran without approval");
    // A script file is a program on disk: a prefix rule may name its interpreter.
    session.call("run_command", json!({"argv": ["bash", "script.sh"]}));
    assert!(
        is_allowed_by_rule(&session.decision(), "[tools.shell] rule argv_prefix [\"bash\"]"),
        "{:?}",
        session.decision()
    );
}

#[test]
fn the_approval_prompt_offers_a_rule_for_exactly_this_command_and_none_for_code() {
    let ws = tempfile::tempdir().unwrap();
    let session = Session::new(ws.path(), &Policy::default());
    let summary = |arguments: Value| match session.call("run_command", arguments) {
        Outcome::ApprovalRequired { summary, .. } => summary,
        other => panic!("{other:?}"),
    };
    let text = summary(json!({"argv": ["git", "status", "--short"]}));
    assert!(
        text.contains("[[tools.shell.rules]]\nargv = [\"git\",\"status\",\"--short\"]\ndecision = \"auto\""),
        "{text}"
    );
    assert!(!text.contains("argv_prefix"), "{text}");
    let text = summary(json!({"argv": ["cargo", "test"], "env": [{"name": "RUST_LOG", "value": "debug"}]}));
    assert!(
        text.contains("argv = [\"cargo\",\"test\"]\nenv = [\"RUST_LOG\"]\ndecision = \"auto\""),
        "{text}"
    );
    // What the old prefix suggestion made a blanket rule of is now one command.
    let text = summary(json!({"argv": ["env", "A=1"]}));
    assert!(text.contains("argv = [\"env\",\"A=1\"]"), "{text}");
    for code in [
        json!({"argv": ["sh", "-c", "echo hi"]}),
        json!({"argv": ["bash", "-lc", "echo hi"]}),
        json!({"argv": ["python3", "-c", "print(1)"]}),
        json!({"argv": ["env", "A=1", "sh", "-c", "echo hi"]}),
        json!({"argv": ["echo hi"], "shell": true}),
        json!({"argv": ["python3"], "stdin": "print(1)"}),
        json!({"argv": ["cargo", "test"], "env": [{"name": "RUSTC", "value": "./evil"}]}),
    ] {
        let text = summary(code.clone());
        assert!(!text.contains("[[tools.shell.rules]]"), "{code}: {text}");
    }
    let text = summary(json!({"argv": ["cargo", "test"], "env": [{"name": "RUSTC", "value": "./evil"}]}));
    assert!(text.contains("⚠ RUSTC changes which code the program runs"), "{text}");
}

#[test]
fn a_bare_program_name_is_looked_up_only_on_absolute_path_entries() {
    use std::os::unix::fs::PermissionsExt;
    let ws = tempfile::tempdir().unwrap();
    let bin = ws.path().join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    for dir in [ws.path(), bin.as_path()] {
        let planted = dir.join("planted");
        std::fs::write(&planted, "#!/bin/sh\necho ran > ran-planted\n").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let session = Session::new(ws.path(), &open_policy());
    let path = |value: &str| json!([{"name": "PATH", "value": value}]);
    for entries in [".:/usr/bin:/bin", "node_modules/.bin:/usr/bin:/bin", ":/usr/bin:/bin"] {
        match session.call("run_command", json!({"argv": ["planted"], "env": path(entries)})) {
            Outcome::ExecutionFailed {
                error: ToolError::NotFound { path },
                ..
            } => assert_eq!(path, "planted"),
            other => panic!("{entries}: {other:?}"),
        }
    }
    assert!(
        !ws.path().join("ran-planted").exists(),
        "a program on a relative PATH entry ran"
    );
    // A program on an absolute entry is found past relative ones; one named by its path runs.
    let found = session.call("run_command", json!({"argv": ["true"], "env": path(".:/usr/bin:/bin")}));
    assert!(
        matches!(&found, Outcome::Ok { result, .. } if result["exit_code"] == 0),
        "{found:?}"
    );
    let named = session.call("run_command", json!({"argv": ["./node_modules/.bin/planted"]}));
    assert!(matches!(named, Outcome::Ok { .. }), "{named:?}");
    assert!(ws.path().join("ran-planted").exists());
}

/// `printf` writing an OSC 52 clipboard write, a screen clear, a lone CR, a C1 CSI (as
/// UTF-8) and a CR-LF line end.
const HOSTILE_OUTPUT: &str = "before\\033]52;c;aGVsbG8=\\007after\\r\\033[2J\\302\\233x\\r\\n";

/// What a reader of the output sees instead.
const SHOWN: &str = "before␛]52;c;aGVsbG8=␇after␍␛[2J\\u{9b}x\r\n";

fn assert_drives_no_terminal(text: &str) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let kept = c == '\n' || c == '\t' || (c == '\r' && chars.peek() == Some(&'\n'));
        assert!(
            !c.is_control() || kept,
            "a control character {c:?} passed through: {text:?}"
        );
    }
}

#[test]
fn program_output_cannot_drive_the_terminal_of_whoever_reads_it() {
    let ws = tempfile::tempdir().unwrap();
    let session = Session::new(ws.path(), &open_policy());
    let result = match session.call("run_command", json!({"argv": ["printf", HOSTILE_OUTPUT]})) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    let stdout = result["stdout"].as_str().unwrap();
    assert_drives_no_terminal(stdout);
    assert_eq!(stdout, SHOWN);
    let script = format!("printf '{HOSTILE_OUTPUT}' >&2");
    let result = match session.call("run_command", json!({"argv": ["sh", "-c", script]})) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    assert_eq!(result["stderr"], SHOWN, "{result}");
    // The same from a background process.
    let started = match session.call("start_process", json!({"argv": ["printf", HOSTILE_OUTPUT]})) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    let output = match session.call("read_process_output", json!({"id": started["id"], "wait_ms": 5000})) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    assert_drives_no_terminal(output["stdout"].as_str().unwrap());
    assert_eq!(output["stdout"], SHOWN, "{output}");
}

#[test]
fn the_first_command_in_a_fresh_workspace_cannot_plant_the_receipt_log() {
    let ws = tempfile::tempdir().unwrap();
    let log = Arc::new(JsonlReceiptLog::in_workspace(ws.path()));
    let receipts = ws.path().join(".kyro/receipts.jsonl");
    assert!(ws.path().join(".kyro").symlink_metadata().unwrap().is_dir());
    assert!(
        receipts.symlink_metadata().unwrap().is_file(),
        "the log exists before any call"
    );
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &open_policy())
        .unwrap()
        .with_observer(log);
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = |argv: Value| executor.block_on(runtime.execute_call(Call::new("run_command", json!({ "argv": argv }))));
    let planting = run(json!([
        "sh",
        "-c",
        "rm -f .kyro/receipts.jsonl; mkfifo .kyro/receipts.jsonl; ln -s /etc/passwd .kyro/receipts.jsonl; echo tried"
    ]));
    assert!(
        matches!(&planting, Outcome::Ok { result, .. } if result["stdout"] == "tried\n"),
        "{planting:?}"
    );
    assert!(
        receipts.symlink_metadata().unwrap().is_file(),
        "a program replaced the receipt log"
    );
    assert!(matches!(run(json!(["true"])), Outcome::Ok { .. }));
    let lines = std::fs::read_to_string(&receipts).unwrap().lines().count();
    assert_eq!(lines, 2, "every call after the attempt is receipted too");
}

fn result(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

/// Codex's model of an interactive program: started under a terminal, typed into, read
/// back as plain text, interrupted with Ctrl-C, ended with Ctrl-D.
#[test]
fn an_interactive_python_is_driven_through_its_prompt_under_a_terminal() {
    let ws = tempfile::tempdir().unwrap();
    let session = Session::new(ws.path(), &open_policy());
    let started = result(session.call(
        "start_process",
        json!({"argv": ["python3", "-q", "-i"], "tty": true, "env": env(&[("PYTHONSTARTUP", "")])}),
    ));
    let id = started["id"].as_str().unwrap().to_owned();
    let prompt = result(session.call(
        "read_process_output",
        json!({"id": id, "wait_ms": 10000, "until": "output"}),
    ));
    assert!(prompt["stdout"].as_str().unwrap().contains(">>> "), "{prompt}");
    // The program sees a terminal, and answers what is typed.
    let answer = result(session.call(
        "write_process_input",
        json!({"id": id, "text": "import os, sys; print(6 * 7, os.isatty(0), sys.stdout.isatty())", "keys": ["enter"], "wait_ms": 10000}),
    ));
    let text = answer["stdout"].as_str().unwrap();
    assert!(text.contains("42 True True\n"), "{answer}");
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "plain text: {text:?}");
    // Ctrl-D ends it; its id is then forgotten.
    session.call(
        "write_process_input",
        json!({"id": id, "keys": ["ctrl_d"], "wait_ms": 0}),
    );
    let ended = result(session.call("read_process_output", json!({"id": id, "wait_ms": 10000})));
    assert_eq!(
        (ended["exited"].clone(), ended["exit_code"].clone()),
        (json!(true), json!(0)),
        "{ended}"
    );
    let gone = session.call("write_process_input", json!({"id": id, "text": "x"}));
    assert!(
        matches!(gone, Outcome::ExecutionFailed { ref error, .. } if error.kind() == "no_such_record"),
        "{gone:?}"
    );
    // Ctrl-C reaches a program as SIGINT through its controlling terminal (once its prompt
    // shows, Python handles SIGINT; before, on a loaded machine, it would still kill it).
    let started = result(session.call(
        "start_process",
        json!({"argv": ["python3", "-q", "-i"], "tty": true, "env": env(&[("PYTHONSTARTUP", "")])}),
    ));
    let id = started["id"].as_str().unwrap().to_owned();
    let prompt = result(session.call(
        "read_process_output",
        json!({"id": id, "wait_ms": 10000, "until": "output"}),
    ));
    assert!(prompt["stdout"].as_str().unwrap().contains(">>> "), "{prompt}");
    session.call(
        "write_process_input",
        json!({"id": id, "text": "import time; time.sleep(60)\n", "wait_ms": 2000}),
    );
    let interrupted = result(session.call(
        "write_process_input",
        json!({"id": id, "keys": ["ctrl_c"], "wait_ms": 10000}),
    ));
    assert!(
        interrupted["stdout"].as_str().unwrap().contains("KeyboardInterrupt"),
        "{interrupted}"
    );
    session.call("stop_process", json!({"id": id, "grace_ms": 0}));
}

#[test]
fn input_goes_only_to_a_terminal_and_is_code_no_rule_lets_through() {
    let ws = tempfile::tempdir().unwrap();
    let session = Session::new(ws.path(), &open_policy());
    let piped = result(session.call("start_process", json!({"argv": ["sleep", "5"]})));
    let refused = session.call("write_process_input", json!({"id": piped["id"], "text": "x\n"}));
    assert!(
        matches!(&refused, Outcome::ExecutionFailed { error, .. } if error.to_string().contains("without a terminal")),
        "{refused:?}"
    );
    session.call("stop_process", json!({"id": piped["id"], "grace_ms": 0}));
    // A rule that lets `python3` run unasked does not let a terminal typed into run so.
    let ruled = Session::new(
        ws.path(),
        &with_rules(json!([{"argv_prefix": ["python3"], "decision": "auto"}])),
    );
    let outcome = ruled.call("start_process", json!({"argv": ["python3", "-i"], "tty": true}));
    assert!(matches!(outcome, Outcome::ApprovalRequired { .. }), "{outcome:?}");
    // And each input is an exec call: asked under the default policy.
    let asked = Session::new(ws.path(), &Policy::default());
    let typed = asked.call("write_process_input", json!({"id": "p999", "text": "rm -rf ~\n"}));
    assert!(matches!(typed, Outcome::ApprovalRequired { .. }), "{typed:?}");
}

/// Two callers of one server share its scope; a process is its starter's alone: another
/// caller can neither type into it, read it nor stop it.
#[test]
fn another_caller_of_the_same_scope_cannot_reach_a_process() {
    let ws = tempfile::tempdir().unwrap();
    let session = Session::new(ws.path(), &open_policy());
    let by = |who: &str, tool: &str, args: Value| {
        session.executor.block_on(
            session
                .runtime
                .execute_call(Call::new(tool, args).by(kyro_core::Caller::named(who).unwrap())),
        )
    };
    let started = match by("ann", "start_process", json!({"argv": ["cat"], "tty": true})) {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    for (tool, args) in [
        ("write_process_input", json!({"id": started["id"], "text": "x\n"})),
        ("read_process_output", json!({"id": started["id"]})),
        ("stop_process", json!({"id": started["id"]})),
    ] {
        let outcome = by("bob", tool, args);
        assert!(
            matches!(&outcome, Outcome::ExecutionFailed { error, .. } if error.kind() == "no_such_record"),
            "{tool}: {outcome:?}"
        );
    }
    assert!(matches!(
        by("ann", "stop_process", json!({"id": started["id"], "grace_ms": 0})),
        Outcome::Ok { .. }
    ));
}

/// A rule that denies a command still denies it under a terminal (typed input makes a
/// call no `auto` rule may let through, not one no rule may hold back).
#[test]
fn a_denying_rule_still_denies_a_command_under_a_terminal() {
    let ws = tempfile::tempdir().unwrap();
    let mut policy = open_policy();
    policy.tools.insert(
        "shell".into(),
        json!({ "rules": [{"argv_prefix": ["git", "push"], "decision": "deny"}, {"argv_prefix": ["python3"], "decision": "ask"}] }),
    );
    let session = Session::new(ws.path(), &policy);
    let denied = session.call(
        "start_process",
        json!({"argv": ["git", "push", "--force"], "tty": true}),
    );
    assert!(matches!(denied, Outcome::Denied { .. }), "{denied:?}");
    let asked = session.call("start_process", json!({"argv": ["python3", "-i"], "tty": true}));
    assert!(matches!(asked, Outcome::ApprovalRequired { .. }), "{asked:?}");
    // The prompt says what will be typed into, and that it runs under a terminal.
    match asked {
        Outcome::ApprovalRequired { summary, .. } => assert!(summary.contains("under a terminal"), "{summary}"),
        _ => unreachable!(),
    }
}

/// Rules against what the tree names, under the same helpers.
#[path = "shell/tree_rules.rs"]
mod tree_rules;
