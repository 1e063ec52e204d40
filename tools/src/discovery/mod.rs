//! Discovery: `tool_search` and `tool_describe` are the framework's
//! ([`kyro_core::discovery`]); the built-in catalogs carry them, and their tests run here
//! against the whole catalog.

pub use kyro_core::discovery::*;

#[cfg(test)]
mod search_tests {
    use serde_json::json;

    use crate::testing::{call, ok, workspace};

    #[test]
    fn finds_tools_by_name_and_description_words_best_first() {
        let r = ok(call(workspace().path(), "tool_search", json!({"query": "read file"})));
        assert_eq!(r["tools"][0]["name"], "read_file");
        assert_eq!(r["tools"][0]["effect"], "read");
        let r = ok(call(workspace().path(), "tool_search", json!({"query": "expression"})));
        assert_eq!(r["tools"][0]["name"], "calculate");
    }

    #[test]
    fn filters_by_category_and_truncates_to_the_limit() {
        let r = ok(call(
            workspace().path(),
            "tool_search",
            json!({"query": "file directory", "category": "files", "limit": 1}),
        ));
        assert_eq!(r["tools"].as_array().unwrap().len(), 1);
        assert_eq!(r["truncated"], true);
        assert!(r["total_matches"].as_u64().unwrap() >= 2);
        let none = ok(call(
            workspace().path(),
            "tool_search",
            json!({"query": "read", "category": "discovery"}),
        ));
        assert!(
            none["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["category"] == "discovery")
        );
    }

    #[test]
    fn no_match_is_an_empty_result() {
        let r = ok(call(workspace().path(), "tool_search", json!({"query": "zzzqqq"})));
        assert_eq!(r, json!({"tools": [], "total_matches": 0, "truncated": false}));
    }
}

#[cfg(test)]
mod describe_tests {
    use crate::Failure;
    use kyro_core::Registry;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn describes_by_name_or_alias_exactly_as_the_registry_serves() {
        let r = ok(call(
            workspace().path(),
            "tool_describe",
            json!({"names": ["cat", "calculate"]}),
        ));
        let registry = Registry::with_catalog(crate::BUILTINS).unwrap();
        let snapshot = registry.snapshot();
        let served = serde_json::to_value(snapshot.get("read_file").unwrap().descriptor()).unwrap();
        assert_eq!(r["tools"][0], served);
        assert_eq!(r["tools"][1]["name"], "calculate");
    }

    #[test]
    fn an_unknown_name_is_a_typed_failure() {
        assert_eq!(
            Failure::of(&failed(call(
                workspace().path(),
                "tool_describe",
                json!({"names": ["read_file", "nope"]})
            ))),
            Some(Failure::UnknownTool { name: "nope".into() })
        );
    }
}
