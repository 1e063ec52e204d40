//! Provider dialects: tool definitions exported from the canonical schema, and incoming
//! provider tool calls brought to the native JSON-object path.
//!
//! Exports are pure functions of a descriptor. A dialect that cannot express a tool refuses
//! it with [`ExportError`]; a constraint a dialect cannot state as a keyword is moved into
//! the property's description and listed in [`Exported::relaxed`], never dropped silently.
//! The canonical validator stays authoritative whatever the provider enforced.

pub mod anthropic;
mod export;
pub mod gemini;
pub mod openai;

use kyro_core::ToolDescriptor;
use serde_json::Value;

pub use export::{ExportError, Exported, Relaxed};

/// A provider's way of declaring tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dialect {
    /// MCP `tools/list` entries.
    Mcp,
    /// OpenAI strict function tools.
    Openai,
    /// Anthropic tools (`input_schema`).
    Anthropic,
    /// Gemini function declarations (OpenAPI subset).
    Gemini,
}

/// Exports a descriptor in a dialect.
pub fn export(descriptor: &ToolDescriptor, dialect: Dialect) -> Result<Exported, ExportError> {
    match dialect {
        Dialect::Mcp => Ok(Exported {
            definition: serde_json::to_value(crate::mcp::mcp_tool(descriptor)).unwrap_or(Value::Null),
            relaxed: Vec::new(),
        }),
        Dialect::Openai => openai::export(descriptor),
        Dialect::Anthropic => anthropic::export(descriptor),
        Dialect::Gemini => gemini::export(descriptor),
    }
}

/// The flat list of canonical tool names a snapshot serves, sorted (`kyro tools --names`):
/// for agents that want names only (the seed's `AVAILABLE_TOOLS`); schemas come from
/// `tools/list`.
pub fn names(snapshot: &kyro_core::Snapshot) -> Vec<String> {
    snapshot.descriptors().map(|d| d.name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use kyro_core::Registry;
    use serde_json::{Value, json};

    use super::{Dialect, export};

    fn descriptors() -> Vec<kyro_core::ToolDescriptor> {
        let registry = Registry::with_catalog(kyro_tools::BUILTINS).unwrap();
        registry.snapshot().descriptors().cloned().collect()
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
    fn every_builtin_exports_or_is_refused_with_a_reason_in_every_dialect() {
        for d in descriptors() {
            for dialect in [Dialect::Mcp, Dialect::Openai, Dialect::Anthropic, Dialect::Gemini] {
                match export(&d, dialect) {
                    Ok(e) => assert!(e.definition.is_object()),
                    Err(err) => assert!(err.to_string().contains(&d.name), "{err}"),
                }
            }
        }
    }

    #[test]
    fn openai_strict_closes_every_object_and_requires_every_key() {
        let d = descriptors().into_iter().find(|d| d.name == "read_file").unwrap();
        let exported = export(&d, Dialect::Openai).unwrap();
        let f = &exported.definition["function"];
        assert_eq!(f["strict"], true);
        let params = &f["parameters"];
        assert_eq!(params["required"], json!(["path", "offset", "limit", "head", "tail"]));
        assert_eq!(params["properties"]["offset"]["type"], json!(["integer", "null"]));
        walk(params, &mut |m| {
            if m.contains_key("properties") {
                assert_eq!(m["additionalProperties"], false);
            }
            for banned in ["minLength", "maxLength", "default", "oneOf", "uniqueItems"] {
                assert!(!m.contains_key(banned), "{banned} in {m:?}");
            }
        });
        // The string length limit is moved, visibly, not dropped.
        assert!(
            exported
                .relaxed
                .iter()
                .any(|r| r.keyword == "minLength" && r.pointer == "/properties/path")
        );
        let path_description = params["properties"]["path"]["description"].as_str().unwrap();
        assert!(path_description.contains("minLength: 1"), "{path_description}");
    }

    #[test]
    fn openai_turns_a_tagged_one_of_into_any_of_with_null_for_optional() {
        let d = descriptors().into_iter().find(|d| d.name == "grep").unwrap();
        let params = export(&d, Dialect::Openai).unwrap().definition["function"]["parameters"].clone();
        let case = &params["properties"]["case"];
        assert!(case.get("oneOf").is_none());
        let branches = case["anyOf"].as_array().unwrap();
        assert_eq!(branches.last().unwrap(), &json!({"type": "null"}));
        assert!(branches[..branches.len() - 1].iter().all(|b| b.get("const").is_some()));
    }

    #[test]
    fn openai_arguments_are_parsed_once_and_export_nulls_mean_absent() {
        let d = descriptors().into_iter().find(|d| d.name == "write_file").unwrap();
        let args = super::openai::arguments(
            &d,
            r#"{"path": "a", "content": "b", "expected_sha256": null, "create_dirs": null}"#,
        )
        .unwrap();
        // expected_sha256 is nullable in the canonical schema itself; create_dirs is not.
        assert_eq!(
            Value::Object(args),
            json!({"path": "a", "content": "b", "expected_sha256": null})
        );
        assert!(super::openai::arguments(&d, r#"{"path": "a", "path": "b"}"#).is_err());
        assert!(super::openai::arguments(&d, "[]").is_err());
    }

    #[test]
    fn openai_export_nulls_mean_absent_at_every_depth() {
        let d = descriptors().into_iter().find(|d| d.name == "multi_edit").unwrap();
        let args = super::openai::arguments(
            &d,
            r#"{"path": "a", "edits": [{"old_text": "x", "new_text": "y", "replace_all": null}, {"old_text": "p", "new_text": "q", "replace_all": true}]}"#,
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"path": "a", "edits": [{"old_text": "x", "new_text": "y"}, {"old_text": "p", "new_text": "q", "replace_all": true}]})
        );
    }

    #[test]
    fn anthropic_takes_the_canonical_schema_and_the_input_object_as_is() {
        let d = descriptors().into_iter().find(|d| d.name == "calculate").unwrap();
        let exported = export(&d, Dialect::Anthropic).unwrap();
        assert_eq!(exported.definition["input_schema"], *d.input_schema);
        let block = json!({"type": "tool_use", "id": "t1", "name": "calculate", "input": {"expression": "1+1"}});
        assert_eq!(super::anthropic::arguments(&block), Some(&json!({"expression": "1+1"})));
        assert_eq!(super::anthropic::arguments(&json!({"input": "1+1"})), None);
    }

    #[test]
    fn gemini_gets_its_openapi_subset_and_nothing_else() {
        for d in descriptors() {
            let Ok(exported) = export(&d, Dialect::Gemini) else {
                continue;
            };
            walk(&exported.definition["parameters"], &mut |m| {
                for banned in [
                    "additionalProperties",
                    "$schema",
                    "const",
                    "exclusiveMinimum",
                    "oneOf",
                    "default",
                ] {
                    assert!(!m.contains_key(banned), "{}: {banned} in {m:?}", d.name);
                }
                // (A property named `type` is a schema, not the keyword.)
                if let Some(t) = m.get("type").filter(|t| !t.is_object()) {
                    assert!(
                        t.is_string() && t.as_str().unwrap().chars().all(|c| c.is_ascii_uppercase()),
                        "{t}"
                    );
                }
            });
        }
        let d = descriptors().into_iter().find(|d| d.name == "list_directory").unwrap();
        let p = export(&d, Dialect::Gemini).unwrap().definition["parameters"].clone();
        assert_eq!(p["properties"]["path"]["nullable"], true);
        assert_eq!(p["propertyOrdering"], json!(["path", "include_hidden", "limit"]));
    }

    #[test]
    fn an_untyped_value_is_refused_where_a_dialect_cannot_state_it() {
        let mut d = descriptors().into_iter().find(|d| d.name == "calculate").unwrap();
        d.input_schema["properties"]["expression"] = json!(true);
        assert!(export(&d, Dialect::Openai).is_err());
        assert!(export(&d, Dialect::Gemini).is_err());
        let mut tuple = d.clone();
        tuple.input_schema["properties"]["expression"] =
            json!({"type": "array", "prefixItems": [{"type": "string"}], "description": "t"});
        assert!(export(&tuple, Dialect::Gemini).is_err());
        let mut dotted = d;
        dotted.name = "up.tool".into();
        assert!(export(&dotted, Dialect::Openai).is_err());
    }
}
