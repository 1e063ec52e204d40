//! Properties of the whole built-in catalog: schema and serde agree for every tool, every
//! `#[tool]` struct is in the catalog, and every schema is canonical.

use kyro_core::{Registry, ToolEntry};
use kyro_tools::BUILTINS;
use serde_json::{Map, Value, json};

/// A value built from a schema's structure: objects with their required properties,
/// arrays of one sampled item (or as many as `minItems` asks).
fn sample(schema: &Value) -> Value {
    let allows = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(ts)) => ts.iter().any(|x| x == t),
        _ => false,
    };
    if let Some(first) = schema.get("enum").and_then(|e| e.as_array()).and_then(|e| e.first()) {
        return first.clone();
    }
    // A choice documented variant by variant: its first `const`.
    if let Some(first) = schema
        .get("oneOf")
        .and_then(|o| o.as_array())
        .and_then(|o| o.first())
        .and_then(|b| b.get("const"))
    {
        return first.clone();
    }
    if allows("object") {
        let mut map = Map::new();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in required {
            map.insert(name.to_owned(), sample(&schema["properties"][name]));
        }
        return Value::Object(map);
    }
    if allows("array") {
        let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(1).max(1);
        return Value::Array((0..count).map(|_| sample(&schema["items"])).collect());
    }
    if allows("string") {
        return json!("a");
    }
    if allows("integer") || allows("number") {
        return json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1).max(0));
    }
    if allows("boolean") {
        return json!(true);
    }
    Value::Null
}

/// Values worth trying against a property schema: valid ones and near misses.
fn candidates(schema: &Value) -> Vec<Value> {
    let mut out = vec![
        sample(schema),
        Value::Null,
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(1.0),
        json!(1e3),
        json!(1.5),
        json!(-0.0),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(18446744073709551616.0),
        json!("1"),
        json!(""),
        json!("a"),
        json!("a|b\r\né😀"),
        json!("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
        json!("../x"),
        json!("https://example.com/a?b=c"),
        json!([]),
        json!(["a"]),
        json!([1]),
        json!({}),
    ];
    for key in ["minimum", "maximum"] {
        if let Some(n) = schema.get(key).and_then(Value::as_f64) {
            for v in [n - 1.0, n, n + 1.0] {
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    out.push(json!(v as i64));
                }
            }
        }
    }
    for key in ["minLength", "maxLength"] {
        if let Some(n) = schema.get(key).and_then(Value::as_u64) {
            for len in [n.saturating_sub(1), n, n + 1] {
                out.push(json!("é".repeat(len as usize)));
            }
        }
    }
    for key in ["minItems", "maxItems"] {
        if let Some(n) = schema.get(key).and_then(Value::as_u64) {
            for len in [n.saturating_sub(1), n, n + 1] {
                out.push(json!(vec!["read_file"; len as usize]));
            }
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().cloned());
        out.push(json!("not_a_variant"));
    }
    // Variants documented one by one: `oneOf` of `const`s.
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            out.extend(branches.iter().filter_map(|b| b.get("const").cloned()));
        }
    }
    out
}

fn check_tool(entry: &ToolEntry, registry: &Registry) -> usize {
    let snapshot = registry.snapshot();
    let tool = snapshot.get(entry.spec.name).expect("registered");
    let schema = &tool.descriptor().input_schema;
    let properties = schema["properties"].as_object().cloned().unwrap_or_default();
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let mut base = Map::new();
    for name in &required {
        let valid = candidates(&properties[name])
            .into_iter()
            .find(|c| {
                let mut probe = base.clone();
                probe.insert(name.clone(), c.clone());
                for other in &required {
                    probe.entry(other.clone()).or_insert_with(|| sample(&properties[other]));
                }
                tool.input().unwrap().is_valid(&Value::Object(probe))
            })
            .unwrap_or_else(|| panic!("{}: no valid value found for `{name}`", entry.spec.name));
        base.insert(name.clone(), valid);
    }
    let mut objects = vec![Value::Object(base.clone()), json!({}), json!({"unknown": 1})];
    let mut all_optional = base.clone();
    for (name, sub) in &properties {
        for candidate in candidates(sub) {
            let mut object = base.clone();
            object.insert(name.clone(), candidate.clone());
            if tool.input().unwrap().is_valid(&Value::Object(object.clone())) && !required.contains(name) {
                all_optional.insert(name.clone(), candidate.clone());
            }
            objects.push(Value::Object(object));
        }
        let mut without = base.clone();
        without.remove(name);
        objects.push(Value::Object(without));
    }
    objects.push(Value::Object(all_optional));
    let mut accepted = 0;
    for object in &objects {
        let valid = tool.input().unwrap().is_valid(object);
        let deserialized = (entry.deserializes)(object);
        if valid {
            accepted += 1;
            assert!(
                deserialized.is_ok(),
                "{}: the validator accepts {object} but serde refuses it: {:?}",
                entry.spec.name,
                deserialized
            );
        }
    }
    assert!(accepted > 0, "{}: no candidate object was valid", entry.spec.name);
    accepted
}

#[test]
fn whatever_the_validator_accepts_deserializes_for_every_builtin() {
    let registry = Registry::with_catalog(BUILTINS).expect("built-ins register");
    let mut total = 0;
    for entry in BUILTINS {
        total += check_tool(entry, &registry);
    }
    assert!(total >= BUILTINS.len() * 5, "too few accepted objects: {total}");
}

#[test]
fn catalog_lists_every_tool() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // The framework's discovery tools are built-ins too.
    let discovery = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kyro-core/src/discovery");
    let mut declared = Vec::new();
    let mut stack = vec![root, discovery];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let mut rest = text.as_str();
                while let Some(at) = rest.find("#[tool(") {
                    rest = &rest[at..];
                    let attr_end = rest.find(")]").unwrap_or(rest.len());
                    if let Some(name_at) = rest[..attr_end].find("name = \"") {
                        let after = &rest[name_at + 8..];
                        let end = after.find('"').unwrap();
                        declared.push(after[..end].to_owned());
                    }
                    rest = &rest[7..];
                }
            }
        }
    }
    declared.sort();
    let mut listed: Vec<String> = BUILTINS.iter().map(|e| e.spec.name.to_owned()).collect();
    listed.sort();
    assert_eq!(
        declared, listed,
        "a #[tool] struct is missing from BUILTINS (tools/src/lib.rs)"
    );
}

#[test]
fn every_descriptor_is_complete_and_consistent() {
    let registry = Registry::with_catalog(BUILTINS).unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.descriptors().len(), BUILTINS.len());
    for d in snapshot.descriptors() {
        assert!(!d.description.is_empty(), "{}", d.name);
        assert_eq!(d.input_schema["type"], "object", "{}", d.name);
        assert_eq!(d.input_schema["additionalProperties"], false, "{}", d.name);
        assert_eq!(d.output_schema["type"], "object", "{}", d.name);
        // The hints themselves are pinned per tool in `every_builtin_states_honest_annotations`.
        assert!(
            !(d.annotations.read_only_hint && d.annotations.destructive_hint),
            "{}",
            d.name
        );
        assert!(!d.compatibility_only);
        let text = d.input_schema.to_string() + &d.output_schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{}", d.name);
    }
}

/// Arbitrary JSON a few levels deep, with strings a hostile caller would try.
fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        "\\PC{0,12}".prop_map(Value::from),
        prop::sample::select(vec![
            "..",
            "/etc/passwd",
            "a/../../b",
            "-rf",
            "--upload-pack=touch x",
            "\u{202e}gnp.exe",
            "",
            "read_file",
            "a.txt",
            "HEAD",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

static FUZZ_REGISTRY: std::sync::LazyLock<Registry> =
    std::sync::LazyLock::new(|| Registry::with_catalog(BUILTINS).expect("built-ins register"));

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 4000, failure_persistence: None, ..Default::default() })]

    /// The fuzz target over arguments: from each built-in's sampled object, set properties
    /// (known or not) to arbitrary values, near misses or valid samples, or remove them.
    /// Validation never panics, and whatever it accepts, serde accepts.
    #[test]
    fn fuzz_validation_then_deserialization_of_every_builtin(
        which in 0..BUILTINS.len(),
        edits in proptest::collection::vec(
            (proptest::arbitrary::any::<proptest::sample::Index>(), proptest::arbitrary::any::<proptest::sample::Index>(), any_json(), 0..3u8),
            0..6,
        ),
    ) {
        let entry = &BUILTINS[which];
        let snapshot = FUZZ_REGISTRY.snapshot();
        let tool = snapshot.get(entry.spec.name).expect("registered");
        let schema = &tool.descriptor().input_schema;
        let properties = schema["properties"].as_object().cloned().unwrap_or_default();
        let mut names: Vec<String> = properties.keys().cloned().collect();
        names.push("unknown_key".into());
        let Value::Object(mut object) = sample(schema) else { unreachable!("inputs are objects") };
        for (key, pick, value, how) in edits {
            let name = key.get(&names).clone();
            match how {
                0 => { object.remove(&name); }
                1 => {
                    let near = candidates(properties.get(&name).unwrap_or(&Value::Null));
                    object.insert(name, pick.get(&near).clone());
                }
                _ => { object.insert(name, value); }
            }
        }
        let object = Value::Object(object);
        let valid = tool.input().unwrap().is_valid(&object);
        let violations = tool.input().unwrap().violations(&object);
        proptest::prop_assert_eq!(valid, violations.is_empty(), "{}: {}", entry.spec.name, object);
        if valid {
            let deserialized = (entry.deserializes)(&object);
            proptest::prop_assert!(
                deserialized.is_ok(),
                "{}: the validator accepts {} but serde refuses it: {:?}",
                entry.spec.name,
                object,
                deserialized
            );
        }
    }
}

#[path = "catalog/hints.rs"]
mod hints;
use hints::HINTS;

#[test]
fn every_builtin_states_honest_annotations() {
    let registry = Registry::with_catalog(BUILTINS).expect("built-ins register");
    let snapshot = registry.snapshot();
    let mut named: Vec<&str> = HINTS.iter().map(|(name, _)| *name).collect();
    named.sort_unstable();
    let mut builtins: Vec<&str> = BUILTINS.iter().map(|e| e.spec.name).collect();
    builtins.sort_unstable();
    assert_eq!(named, builtins, "the table names every built-in once");
    for (name, [read_only, destructive, idempotent, open_world]) in HINTS {
        let a = snapshot.get(name).unwrap().descriptor().annotations;
        assert_eq!(
            [
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ],
            [*read_only, *destructive, *idempotent, *open_world],
            "{name}"
        );
        assert!(
            !(a.read_only_hint && a.destructive_hint),
            "{name}: read-only and destructive"
        );
    }
}

/// The schemas the build script prepares give the registry generation would: the same
/// descriptors, tool for tool, each schema parsed only when read; a prepared text that is
/// damaged, or lacks a tool, falls back to generating that tool's schemas.
#[test]
fn a_prepared_catalog_registers_what_generation_registers() {
    let generated = Registry::with_catalog(BUILTINS).unwrap();
    let prepared = Registry::prepared_schemas(BUILTINS).unwrap();
    assert_eq!(prepared.lines().count(), BUILTINS.len());
    let damaged: String = prepared
        .lines()
        .enumerate()
        .map(|(i, line)| match i % 3 {
            0 => "not json\n".to_owned(),
            1 => String::new(),
            _ => format!("{line}\n"),
        })
        .collect();
    // Embedded text lives as long as the program.
    let (prepared, damaged): (&'static str, &'static str) = (prepared.leak(), damaged.leak());
    // Registering parses no schema; reading one parses that tool's alone.
    let registry = Registry::with_prepared_catalog(BUILTINS, prepared).unwrap();
    let snapshot = registry.snapshot();
    assert!(
        snapshot
            .descriptors()
            .all(|d| !d.input_schema.is_parsed() && !d.output_schema.is_parsed())
    );
    assert_eq!(
        snapshot.get("read_file").unwrap().descriptor().input_schema["type"],
        "object"
    );
    assert_eq!(snapshot.descriptors().filter(|d| d.input_schema.is_parsed()).count(), 1);
    for text in [prepared, damaged, ""] {
        let registry = Registry::with_prepared_catalog(BUILTINS, text).unwrap();
        let (a, b) = (generated.snapshot(), registry.snapshot());
        let a: Vec<_> = a.descriptors().collect();
        let b: Vec<_> = b.descriptors().collect();
        assert_eq!(a, b);
    }
}

/// The README's catalog section: its count and its table name every built-in, and nothing
/// else (a tool added or renamed without the README fails here).
#[test]
fn the_readme_counts_and_names_the_catalog() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let registry = Registry::with_catalog(BUILTINS).expect("built-ins register");
    let snapshot = registry.snapshot();
    let names: std::collections::BTreeSet<String> = snapshot.descriptors().map(|d| d.name.clone()).collect();
    let count: usize = readme
        .split_once(" built-in tools today")
        .and_then(|(before, _)| before.rsplit(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("the README says how many built-in tools there are");
    assert_eq!(count, names.len(), "the README's count");
    let section = readme.split_once("## The catalog").unwrap().1;
    let table = section
        .split_once("\n\n| category")
        .unwrap()
        .1
        .split_once("\n\n")
        .unwrap()
        .0;
    let listed: std::collections::BTreeSet<String> = table
        .lines()
        .skip(2)
        .filter_map(|row| row.split('|').nth(2))
        .flat_map(|cell| cell.split([',', ';', ':']))
        .filter_map(|item| item.split_whitespace().next())
        .map(|word| {
            word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .to_owned()
        })
        .filter(|word| names.contains(word) || word.contains('_') && !word.starts_with("KYRO"))
        .collect();
    assert_eq!(listed, names, "the README's table of tools");
}
