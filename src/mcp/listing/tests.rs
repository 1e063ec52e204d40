//! The listing's rules, one test each.

use serde_json::json;

#[test]
fn a_choice_among_strings_is_listed_as_one_enum_that_validates_the_same() {
    let input = json!({"type": "object", "properties": {
        "mode": {"description": "How far.", "default": "mixed", "oneOf": [
            {"type": "string", "const": "soft", "description": "HEAD only."},
            {"type": "string", "const": "mixed"},
        ]},
        // Not a plain choice: kept as it is.
        "either": {"oneOf": [{"type": "string", "const": "a"}, {"type": "null"}]},
        // A property named `oneOf` is data.
        "properties": {"type": "string"},
        "optional": {"type": ["integer", "null"], "minimum": 1},
        "needed": {"type": ["integer", "null"]},
    }, "required": ["needed"]});
    let listed = super::listed_input(&input);
    assert_eq!(
        listed["properties"]["mode"],
        json!({"type": "string", "enum": ["soft", "mixed"], "default": "mixed",
               "description": "How far.\n`soft`: HEAD only."})
    );
    assert_eq!(listed["properties"]["either"], input["properties"]["either"]);
    // A field that names its choices already is not told them twice.
    let named = json!({"description": "`soft` (HEAD only) or `mixed`.", "oneOf": [
        {"type": "string", "const": "soft", "description": "HEAD only."},
        {"type": "string", "const": "mixed", "description": "And the index."},
    ]});
    assert_eq!(
        super::listed_input(&named)["description"],
        "`soft` (HEAD only) or `mixed`."
    );
    assert_eq!(listed["properties"]["properties"], input["properties"]["properties"]);
    assert_eq!(
        listed["properties"]["optional"],
        json!({"type": "integer", "minimum": 1})
    );
    assert_eq!(listed["properties"]["needed"], input["properties"]["needed"]);
    // Bounds that guard the server are left to the tool; those that shape a call stay.
    let bounded = json!({"type": "object", "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 4096},
        "code": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "paths": {"type": "array", "items": {"type": "string", "maxLength": 9}, "minItems": 1, "maxItems": 1000},
        "post": {"type": "string", "minLength": 1, "maxLength": 280},
        "one": {"type": "array", "minItems": 1, "maxItems": 1},
        "none": {"type": "array", "maxItems": 0},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
        "id": {"type": "integer", "minimum": 1, "maximum": 9007199254740991_u64},
        "offset": {"type": "integer", "minimum": -9007199254740991_i64, "maximum": 100},
        "maxLength": {"type": "integer", "maximum": 10},
    }});
    assert_eq!(
        super::listed_input(&bounded),
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "code": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
            "paths": {"type": "array", "items": {"type": "string", "maxLength": 9}},
            "post": {"type": "string", "maxLength": 280},
            "one": {"type": "array", "minItems": 1, "maxItems": 1},
            "none": {"type": "array", "maxItems": 0},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
            "id": {"type": "integer", "minimum": 1},
            "offset": {"type": "integer", "maximum": 100},
            "maxLength": {"type": "integer", "maximum": 10},
        }})
    );
    let validator = |schema: &serde_json::Value| jsonschema::validator_for(schema).unwrap();
    for value in [
        json!({"mode": "soft"}),
        json!({"mode": "hard"}),
        json!({"mode": 1}),
        json!({}),
        json!({"optional": 0}),
    ] {
        let value = json!({"needed": null})
            .as_object()
            .unwrap()
            .clone()
            .into_iter()
            .chain(value.as_object().unwrap().clone())
            .collect::<serde_json::Map<_, _>>();
        let value = serde_json::Value::Object(value);
        assert_eq!(
            validator(&input).is_valid(&value),
            validator(&listed).is_valid(&value),
            "{value}"
        );
    }
    // Only `null` for an optional property is accepted by the tool and not listed.
    assert!(validator(&input).is_valid(&json!({"needed": 1, "optional": null})));
    assert!(!validator(&listed).is_valid(&json!({"needed": 1, "optional": null})));
    let output = json!({"type": "object", "required": ["op"], "additionalProperties": false, "properties": {"op": {"oneOf": [
        {"type": "string", "const": "created", "description": "Made."},
        {"type": "string", "const": "deleted", "description": "Gone."},
    ]}, "count": {"type": "integer", "minimum": 0}}});
    assert_eq!(
        super::listed_output(&output)["properties"]["op"],
        json!({"type": "string", "enum": ["created", "deleted"]})
    );
    assert_eq!(
        super::listed_output(&output)["properties"]["count"],
        json!({"type": "integer"})
    );
    let listed = super::listed_output(&output);
    assert!(
        listed.get("required").is_none() && listed.get("additionalProperties").is_none(),
        "{listed}"
    );
}

#[test]
fn a_pattern_that_only_keeps_a_few_characters_out_of_a_name_is_left_to_the_tool() {
    for guard in [
        // GitHub's owner and repository names, organizations, branches; a git revision.
        "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$",
        "^[A-Za-z0-9][A-Za-z0-9-]*$",
        r"^[^\s?#&]+$",
        r"^[^-\s][^\s]*$",
        r"^[^\x00-\x08\x0A-\x1F\x7F]*$",
        r"^[^\]]+$",
        r"^\S+$",
        r"^[\w.-]+$",
    ] {
        assert!(super::guard_pattern(guard), "{guard}");
    }
    for shape in [
        r"^(f[0-9]{1,4})?e[0-9]{1,9}$",
        "^e[0-9]{1,9}$",
        "^[0-9a-f]{40,64}$",
        "^[^,]{1,100}$",
        "^https?://",
        "^[A-Za-z0-9-]+(\\[bot\\])?$",
        "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:]{8}Z)?$",
        r"^\.[a-z]+$",
        // Narrower than letters and digits: what a value looks like.
        "^[0-9]+$",
        "^[a-z_]+$",
        "^[A-Z][A-Z][A-Z]$",
        r"^\d+$",
        "^[^0-9]+$",
        r"^[^\d]+$",
        r"^\D+$",
        "[a-z]+",
        "^[A-Za-z0-9]+",
        "^$",
        "^[^a$",
    ] {
        assert!(!super::guard_pattern(shape), "{shape}");
    }
    let input = json!({"type": "object", "properties": {
        "owner": {"type": "string", "maxLength": 100, "pattern": "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$"},
        "ref": {"type": "string", "pattern": "^e[0-9]{1,9}$"},
        // A property named `pattern` is data.
        "pattern": {"type": "string"},
    }, "required": ["owner"]});
    assert_eq!(
        super::listed_input(&input),
        json!({"type": "object", "properties": {
            "owner": {"type": "string", "maxLength": 100},
            "ref": {"type": "string", "pattern": "^e[0-9]{1,9}$"},
            "pattern": {"type": "string"},
        }, "required": ["owner"]})
    );
}

#[test]
fn an_optional_described_enum_is_listed_as_its_enum_under_the_fields_description() {
    let choice = |description: &str| {
        json!({"description": description, "oneOf": [
            {"type": "string", "const": "LEFT", "description": "Old file."},
            {"type": "string", "const": "RIGHT", "description": "New file."},
        ]})
    };
    let input = json!({"type": "object", "properties": {
        "order": {"anyOf": [choice("`LEFT` or `RIGHT`."), {"type": "null"}], "description": "Default `RIGHT`."},
        "side": {"anyOf": [{"type": "null"}, choice("`LEFT` (old file) or `RIGHT` (new file).")], "description": "Its side."},
        "bare": {"anyOf": [choice("A side."), {"type": "null"}]},
        // Required: its `null` is part of the call.
        "needed": {"anyOf": [choice("A side."), {"type": "null"}], "description": "Or none."},
        // A `null` default, or a keyword the choice has too: left as they are.
        "unset": {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}], "default": null},
        "typed": {"anyOf": [{"type": "string"}, {"type": "null"}], "type": "string"},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    }, "required": ["needed"]});
    let listed = super::listed_input(&input);
    let enumeration = json!(["LEFT", "RIGHT"]);
    assert_eq!(
        listed["properties"]["order"],
        json!({"type": "string", "enum": enumeration, "description": "Default `RIGHT`."})
    );
    assert_eq!(
        listed["properties"]["side"],
        json!({"type": "string", "enum": enumeration,
               "description": "Its side. `LEFT` (old file) or `RIGHT` (new file)."})
    );
    assert_eq!(
        listed["properties"]["bare"],
        json!({"type": "string", "enum": enumeration,
               "description": "A side.\n`LEFT`: Old file.\n`RIGHT`: New file."})
    );
    assert!(listed["properties"]["needed"]["anyOf"].is_array(), "{listed}");
    for kept in ["unset", "typed", "either"] {
        assert_eq!(listed["properties"][kept], input["properties"][kept], "{kept}");
    }
    // What a call may send is the same but for the optional property's `null`.
    let validator = |schema: &serde_json::Value| jsonschema::validator_for(schema).unwrap();
    for value in [
        json!({"needed": null, "order": "LEFT", "side": "RIGHT", "bare": "LEFT"}),
        json!({"needed": "LEFT", "order": "UP"}),
        json!({"needed": null, "side": 1}),
        json!({"needed": null}),
    ] {
        assert_eq!(
            validator(&input).is_valid(&value),
            validator(&listed).is_valid(&value),
            "{value}"
        );
    }
}

#[test]
fn a_description_that_only_names_its_enums_values_is_not_listed() {
    let input = json!({"type": "object", "properties": {
        "action": {"type": "string", "enum": ["push", "list", "pop"], "description": "`push`, `list` or `pop`."},
        "status": {"type": "string", "enum": ["in_progress", "in"], "description": "`in_progress` and\n`in`."},
        "format": {"type": "string", "enum": ["png", "jpeg"], "description": "`png` (default) or `jpeg`."},
        "other": {"type": "string", "enum": ["a", "b"], "description": "`a`, `b` or `c`."},
        "none": {"type": "string", "enum": ["a"], "description": "Or."},
    }});
    let listed = super::listed_input(&input);
    for (name, kept) in [
        ("action", false),
        ("status", false),
        ("format", true),
        ("other", true),
        ("none", true),
    ] {
        assert_eq!(
            listed["properties"][name].get("description").is_some(),
            kept,
            "{name}: {listed}"
        );
    }
}

#[test]
fn a_title_that_is_only_the_name_in_words_is_not_listed() {
    let registry = kyro_core::Registry::with_catalog(kyro_tools::BUILTINS).unwrap();
    let title = |name: &str| {
        let tool = super::mcp_tool(registry.snapshot().get(name).unwrap().descriptor());
        tool.title.as_deref().map(str::to_owned)
    };
    assert_eq!(title("read_file"), None, "Read file");
    assert_eq!(title("grep").as_deref(), Some("Search file contents"));
    assert!(super::in_words("git_add", "Git add"));
    assert!(super::in_words("read_file", "READ FILE"));
    assert!(!super::in_words("git_branch", "Git branches"));
    assert!(!super::in_words("read_file", "Read a file"));
}
