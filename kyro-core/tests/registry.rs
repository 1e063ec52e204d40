//! The registry: names and aliases, immutable snapshots, replace/remove/restore, custom and
//! legacy registration.

mod common;

use common::block_on;

use std::sync::Arc;

use kyro_core::compat::{LegacyTextTool, adapter_calls};
use kyro_core::schema::SchemaError;
use kyro_core::{
    Call, CustomTool, Effect, KEPT_VERSIONS, Outcome, Policy, Registry, RegistryError, Runtime, ToolContext,
    ToolDefinition, ToolError, Workspace,
};
use serde_json::{Value, json};

fn custom(name: &str, input: Value, output: Option<Value>) -> Result<ToolDefinition, RegistryError> {
    ToolDefinition::custom(
        CustomTool {
            name: name.into(),
            description: "Echo the arguments.".into(),
            category: "testing".into(),
            effect: Effect::None,
            input_schema: input,
            output_schema: output,
        },
        |args: Value, _cx: &ToolContext| -> kyro_core::BoxFuture<'_, Result<Value, ToolError>> {
            Box::pin(async move { Ok(json!({"echo": args})) })
        },
    )
}

fn echo_input() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string", "description": "Text."}}, "required": ["text"]})
}

fn echo_output() -> Value {
    json!({"type": "object", "properties": {"echo": {"type": "object"}}, "required": ["echo"]})
}

#[test]
fn names_and_aliases_share_one_namespace() {
    let registry = Registry::with_catalog(common::TEST_CATALOG).unwrap();
    assert_eq!(
        registry
            .register(custom("rec", echo_input(), Some(echo_output())).unwrap())
            .unwrap_err(),
        RegistryError::NameTaken {
            name: "rec".into(),
            owner: "record".into()
        }
    );
    assert!(matches!(
        registry.register(custom("record", echo_input(), Some(echo_output())).unwrap()),
        Err(RegistryError::NameTaken { .. })
    ));
    assert!(registry.snapshot().get("rec").is_some());
}

#[test]
fn a_bad_runtime_name_is_refused() {
    assert!(matches!(
        custom("Echo Tool", echo_input(), Some(echo_output())),
        Err(RegistryError::BadName { .. })
    ));
}

#[test]
fn snapshots_are_immutable_and_restorable() {
    let registry = Registry::with_catalog(common::TEST_CATALOG).unwrap();
    let first = registry.snapshot();
    let added = registry
        .register(custom("echo", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    assert!(first.get("echo").is_none(), "an old snapshot never changes");
    assert!(added.get("echo").is_some());
    let removed = registry.remove("echo").unwrap();
    assert!(removed.get("echo").is_none());
    assert!(added.get("echo").is_some(), "a held snapshot keeps its tools");
    assert!(removed.version() > added.version());
    let restored = registry.restore(added.version()).unwrap();
    assert!(restored.get("echo").is_some());
    assert!(restored.version() > removed.version());
    assert_eq!(
        registry.restore(999).unwrap_err(),
        RegistryError::UnknownVersion { version: 999 }
    );
}

#[test]
fn the_history_keeps_the_last_versions_only() {
    let registry = Registry::new();
    let first = registry
        .register(custom("echo", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    let mut last = first.clone();
    for _ in 0..(KEPT_VERSIONS + 10) / 2 {
        registry.remove("echo").unwrap();
        last = registry
            .register(custom("echo", echo_input(), Some(echo_output())).unwrap())
            .unwrap();
    }
    assert_eq!(
        registry.restore(first.version()).unwrap_err(),
        RegistryError::UnknownVersion {
            version: first.version()
        },
        "a version past the kept history is gone"
    );
    let oldest_kept = last.version() - KEPT_VERSIONS as u64;
    assert!(registry.restore(oldest_kept).is_ok());
}

#[test]
fn a_registry_admits_only_what_its_test_passes_from_then_on() {
    let registry = Registry::new();
    registry
        .register(custom("keep_a", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    let before = registry
        .register(custom("drop_a", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    let after = registry.admit_only(|d| d.name.starts_with("keep")).unwrap();
    let names = |s: &kyro_core::Snapshot| s.descriptors().map(|d| d.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&after), ["keep_a"], "what fails the test leaves at once");
    assert_eq!(
        registry
            .register(custom("drop_b", echo_input(), Some(echo_output())).unwrap())
            .unwrap_err(),
        RegistryError::NotAdmitted { name: "drop_b".into() }
    );
    registry
        .register(custom("keep_b", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    // Restoring a snapshot from before the test does not bring the refused tool back.
    let restored = registry.restore(before.version()).unwrap();
    assert_eq!(names(&restored), ["keep_a"]);
}

#[test]
fn replace_swaps_a_tool_and_remove_needs_one() {
    let registry = Registry::new();
    registry
        .register(custom("echo", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    let wider = json!({"type": "object", "properties": {"text": {"type": "string", "description": "Text."}, "n": {"type": "integer", "description": "N."}}});
    let replaced = registry
        .replace(custom("echo", wider, Some(echo_output())).unwrap())
        .unwrap();
    assert!(
        replaced.get("echo").unwrap().descriptor().input_schema["properties"]
            .get("n")
            .is_some()
    );
    assert!(matches!(
        registry.replace(custom("other", echo_input(), Some(echo_output())).unwrap()),
        Err(RegistryError::NotRegistered { .. })
    ));
    assert!(matches!(
        registry.remove("other"),
        Err(RegistryError::NotRegistered { .. })
    ));
}

#[test]
fn custom_tools_need_an_object_input_and_an_output_schema() {
    assert_eq!(
        custom("echo", echo_input(), None).unwrap_err(),
        RegistryError::MissingOutputSchema { tool: "echo".into() }
    );
    assert!(matches!(
        custom("echo", json!({"type": "string"}), Some(echo_output())),
        Err(RegistryError::Schema {
            error: SchemaError::NotAnObject { role: "input" },
            ..
        })
    ));
    assert!(matches!(
        custom(
            "echo",
            json!({"type": "object", "properties": {"a": {"type": "string", "description": "a", "x-ui": 1}}}),
            Some(echo_output())
        ),
        Err(RegistryError::Schema {
            error: SchemaError::UnsupportedKeyword { .. },
            ..
        })
    ));
}

#[test]
fn custom_tools_take_the_native_path_with_validation() {
    let registry = Arc::new(Registry::new());
    registry
        .register(custom("echo", echo_input(), Some(echo_output())).unwrap())
        .unwrap();
    let runtime = Runtime::new(
        registry,
        Workspace::new(std::env::temp_dir()).unwrap(),
        &Policy::default(),
    )
    .unwrap();
    let ok = block_on(runtime.execute_call(Call::new("echo", json!({"text": "a|b"}))));
    assert_eq!(
        ok,
        Outcome::Ok {
            tool: "echo".into(),
            result: json!({"echo": {"text": "a|b"}}),
            text: None,
        }
    );
    let bad = block_on(runtime.execute_call(Call::new("echo", json!({"text": "a", "more": 1}))));
    assert!(matches!(bad, Outcome::InvalidArguments { .. }));
}

#[test]
fn a_result_that_breaks_the_output_schema_is_an_execution_failure() {
    let registry = Arc::new(Registry::new());
    let strict_output = json!({"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]});
    registry
        .register(custom("echo", echo_input(), Some(strict_output)).unwrap())
        .unwrap();
    let runtime = Runtime::new(
        registry,
        Workspace::new(std::env::temp_dir()).unwrap(),
        &Policy::default(),
    )
    .unwrap();
    let outcome = block_on(runtime.execute_call(Call::new("echo", json!({"text": "a"}))));
    assert!(
        matches!(
            outcome,
            Outcome::ExecutionFailed {
                error: ToolError::Output { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[test]
fn legacy_text_tools_register_only_through_the_adapter_and_say_so() {
    let registry = Arc::new(Registry::with_catalog(common::TEST_CATALOG).unwrap());
    let legacy = LegacyTextTool::new("shout", "Upper-case the input.", |s: String| s.to_uppercase())
        .effect(Effect::None)
        .into_definition()
        .unwrap();
    registry.register(legacy).unwrap();
    let snapshot = registry.snapshot();
    let d = snapshot.get("shout").unwrap().descriptor();
    assert!(d.compatibility_only);
    assert!(d.description.starts_with("[compatibility-only]"));
    assert!(!snapshot.get("record").unwrap().descriptor().compatibility_only);

    let runtime = Runtime::new(
        registry,
        Workspace::new(std::env::temp_dir()).unwrap(),
        &Policy::default(),
    )
    .unwrap();
    let before = adapter_calls();
    let native = block_on(runtime.execute_call(Call::new("record", json!({"count": 1}))));
    assert!(matches!(native, Outcome::Ok { .. }));
    assert_eq!(adapter_calls(), before, "the native path went through a compat adapter");
    let outcome = block_on(runtime.execute_call(Call::new("shout", json!({"input": "hé|y"}))));
    assert_eq!(
        outcome,
        Outcome::Ok {
            tool: "shout".into(),
            result: json!({"output": "HÉ|Y"}),
            text: None,
        }
    );
    assert_eq!(adapter_calls(), before + 1);
}

fn record_with_a_broken_pattern() -> Value {
    json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "description": "A count."},
            "label": {"type": "string", "description": "A label.", "pattern": "("}
        },
        "required": ["count"]
    })
}

#[test]
fn a_catalog_validator_is_compiled_on_first_use_and_a_broken_one_fails_typed() {
    let mut entry = kyro_core::ToolEntry::of::<common::Record>();
    entry.input_schema = record_with_a_broken_pattern;
    // Registration does not compile catalog validators (the build script does, with
    // compile_all); the broken one is found there...
    let registry = Arc::new(Registry::with_catalog(&[entry]).unwrap());
    assert!(matches!(
        registry.compile_all(),
        Err(RegistryError::Schema {
            error: SchemaError::Malformed { .. },
            ..
        })
    ));
    // ...and by a call, as a typed failure that never reaches the executor.
    let ws = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &Policy::default()).unwrap();
    let before = common::recorded(ws.path());
    let outcome = block_on(runtime.execute_call(Call::new("record", json!({"count": 1}))));
    assert!(
        matches!(
            outcome,
            Outcome::ExecutionFailed {
                error: ToolError::Schema { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(common::recorded(ws.path()), before);
    // The sound catalog compiles whole.
    Registry::with_catalog(common::TEST_CATALOG)
        .unwrap()
        .compile_all()
        .unwrap();
}

#[test]
fn a_custom_schema_that_does_not_compile_is_refused_at_registration() {
    let registry = Registry::new();
    assert!(matches!(
        registry.register(custom("echo", record_with_a_broken_pattern(), Some(echo_output())).unwrap()),
        Err(RegistryError::Schema {
            error: SchemaError::Malformed { .. },
            ..
        })
    ));
}
