//! The canonical schema: what canonicalization produces and what it refuses.

mod common;

use kyro_core::schema::{Origin, Role, SchemaError, canonicalize, canonicalize_from};
use kyro_core::{Registry, ToolEntry};
use serde_json::{Value, json};

fn record_schema() -> Value {
    let registry = Registry::with_catalog(common::TEST_CATALOG).unwrap();
    let snapshot = registry.snapshot();
    snapshot
        .get("record")
        .unwrap()
        .descriptor()
        .input_schema
        .value()
        .clone()
}

fn walk(v: &Value, f: &mut dyn FnMut(&serde_json::Map<String, Value>)) {
    match v {
        Value::Object(m) => {
            f(m);
            m.values().for_each(|c| walk(c, f));
        }
        Value::Array(a) => a.iter().for_each(|c| walk(c, f)),
        _ => {}
    }
}

#[test]
fn canonical_input_is_closed_inlined_and_bounded() {
    let schema = record_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    let mut objects = 0;
    walk(&schema, &mut |m| {
        assert!(!m.contains_key("$ref") && !m.contains_key("$defs"), "{m:?}");
        assert!(!m.contains_key("format"), "numeric formats become bounds: {m:?}");
        if m.contains_key("properties") {
            objects += 1;
            assert_eq!(m["additionalProperties"], false);
        }
    });
    assert_eq!(objects, 1);
    assert_eq!(schema["properties"]["count"]["minimum"], 0);
    assert_eq!(schema["properties"]["count"]["maximum"], u32::MAX);
    // A 64-bit integer within what JavaScript and f64 clients hold exactly (2^53 - 1).
    assert_eq!(schema["properties"]["offset"]["minimum"], -9_007_199_254_740_991i64);
    assert_eq!(schema["properties"]["offset"]["maximum"], 9_007_199_254_740_991i64);
    assert_eq!(schema["required"], json!(["count"]));
    for (name, property) in schema["properties"].as_object().unwrap() {
        assert!(property["description"].is_string(), "{name} has a description");
    }
}

#[test]
fn properties_keep_declaration_order() {
    let schema = record_schema();
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["count", "label", "offset", "ratio", "tags", "mode"]);
}

#[test]
fn a_keyword_outside_the_vocabulary_is_refused() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer", "minimun": 1, "description": "a"}}});
    assert_eq!(
        canonicalize(schema, Role::Input),
        Err(SchemaError::UnsupportedKeyword {
            pointer: "/properties/a".into(),
            keyword: "minimun".into()
        })
    );
}

#[test]
fn a_reference_is_refused() {
    let schema = json!({"type": "object", "properties": {"a": {"$ref": "#", "description": "a"}}});
    assert!(matches!(
        canonicalize(schema, Role::Input),
        Err(SchemaError::Reference { .. })
    ));
}

#[test]
fn an_untagged_any_of_is_refused() {
    let schema = json!({"type": "object", "properties": {"a": {"description": "a", "anyOf": [{"type": "integer"}, {"type": "string"}]}}});
    assert!(matches!(
        canonicalize(schema, Role::Input),
        Err(SchemaError::Untagged { .. })
    ));
    let nullable = json!({"type": "object", "properties": {"a": {"description": "a", "anyOf": [{"type": "integer"}, {"type": "null"}]}}});
    assert!(canonicalize(nullable, Role::Input).is_ok());
}

#[test]
fn a_non_object_root_is_refused() {
    assert!(matches!(
        canonicalize(json!({"type": "string"}), Role::Input),
        Err(SchemaError::NotAnObject { role: "input" })
    ));
    assert!(matches!(
        canonicalize(json!(true), Role::Output),
        Err(SchemaError::NotAnObject { role: "output" })
    ));
}

#[test]
fn another_dialect_is_refused_and_2020_12_is_stripped() {
    let old = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"});
    assert!(matches!(
        canonicalize(old, Role::Output),
        Err(SchemaError::Dialect { .. })
    ));
    let current = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"});
    assert_eq!(canonicalize(current, Role::Output).unwrap(), json!({"type": "object"}));
}

#[test]
fn a_default_that_breaks_its_own_schema_is_refused() {
    let schema = json!({"type": "object", "properties": {"page": {"type": "integer", "minimum": 1, "default": 0, "description": "p"}}});
    assert!(matches!(
        canonicalize(schema, Role::Input),
        Err(SchemaError::InvalidDefault { .. })
    ));
}

#[test]
fn an_input_property_without_description_is_refused() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert!(matches!(
        canonicalize(schema, Role::Input),
        Err(SchemaError::MissingDescription { .. })
    ));
    let output = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert!(canonicalize(output, Role::Output).is_ok());
}

#[test]
fn an_unknown_string_format_is_refused() {
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "color", "description": "a"}}});
    assert!(matches!(
        canonicalize(schema, Role::Input),
        Err(SchemaError::Format { .. })
    ));
}

#[test]
fn the_catalog_entry_generates_both_schemas() {
    let entry: &ToolEntry = &common::TEST_CATALOG[0];
    assert_eq!(entry.spec.name, "record");
    let output = canonicalize((entry.output_schema)(), Role::Output).unwrap();
    assert_eq!(output["properties"]["count"]["maximum"], u32::MAX);
}

#[test]
fn foreign_schemas_may_omit_descriptions_and_declare_draft_07() {
    let zod = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": { "path": { "type": "string" } },
        "required": ["path"]
    });
    // Our own tools: both are refused.
    assert!(matches!(
        canonicalize(zod.clone(), Role::Input),
        Err(SchemaError::Dialect { .. })
    ));
    let mut no_dialect = zod.clone();
    no_dialect.as_object_mut().unwrap().remove("$schema");
    assert!(matches!(
        canonicalize(no_dialect, Role::Input),
        Err(SchemaError::MissingDescription { .. })
    ));
    // Another server's: accepted, closed like ours, without the `$schema`.
    let canonical = canonicalize_from(zod, Role::Input, Origin::Foreign).unwrap();
    assert_eq!(canonical.get("$schema"), None);
    assert_eq!(canonical["additionalProperties"], json!(false));
    // Still refused: an older dialect, and draft-07's tuple `items`.
    let draft4 = json!({ "$schema": "http://json-schema.org/draft-04/schema#", "type": "object" });
    assert!(matches!(
        canonicalize_from(draft4, Role::Input, Origin::Foreign),
        Err(SchemaError::Dialect { .. })
    ));
    let tuple = json!({
        "$schema": "http://json-schema.org/draft-07/schema",
        "type": "object",
        "properties": { "p": { "type": "array", "items": [{ "type": "string" }] } }
    });
    assert!(canonicalize_from(tuple, Role::Input, Origin::Foreign).is_err());
}
