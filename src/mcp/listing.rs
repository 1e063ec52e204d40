//! How a tool is listed over MCP: its descriptor as an MCP tool, the input schema without
//! the bounds that only guard the server and without what it says twice, the output schema
//! without what only restates a Rust type.

use std::sync::Arc;

use kyro_core::ToolDescriptor;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

/// The MCP tool for a descriptor: same name, description, schemas; annotations from the effect.
pub(crate) fn mcp_tool(d: &ToolDescriptor) -> Tool {
    // Each hint only where it differs from the spec's default (read-only false,
    // destructive true, idempotent false, open-world true): a client reads the same four
    // values, in a fifth of the bytes. The title is the tool's own (`annotations.title`
    // would repeat it).
    let a = d.annotations;
    let differs = |value: bool, default: bool| (value != default).then_some(value);
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = differs(a.read_only_hint, false);
    // The spec reads destructive and idempotent "only when readOnlyHint == false": a
    // read-only tool's are not listed.
    if !a.read_only_hint {
        annotations.destructive_hint = differs(a.destructive_hint, true);
        annotations.idempotent_hint = differs(a.idempotent_hint, false);
    }
    annotations.open_world_hint = differs(a.open_world_hint, true);
    let mut tool = Tool::new(
        d.name.clone(),
        d.description.clone(),
        Arc::new(object(&listed_input(&d.input_schema))),
    )
    .with_raw_output_schema(Arc::new(object(&listed_output(&d.output_schema))))
    .with_annotations(annotations);
    if let Some(title) = d.title.as_ref().filter(|title| !in_words(&d.name, title)) {
        tool = tool.with_title(title.clone());
    }
    tool
}

/// Whether a title is only its tool's name in words ("Git add" for `git_add`, "Read file"
/// for `read_file`): the same words, `_` read as a space, case aside. Such a title is not
/// listed: a client shows the name where a tool has no title, and the name says the same
/// to a person and a model (about 0.7 KB of the whole catalog's listing). A title that
/// says more ("Search file contents" for `grep`) is listed; `tool_describe` and
/// `kyro://tools/NAME` give every title.
fn in_words(name: &str, title: &str) -> bool {
    title.to_lowercase() == name.replace('_', " ").to_lowercase()
}

/// The MCP tools asked for one by one (rmcp asks for a tool's on every 2026-07-28
/// `tools/call` over HTTP, to check its `Mcp-Param-*` headers), each built once per
/// registry version instead of on every call.
#[derive(Default)]
pub(crate) struct Described(std::sync::Mutex<(u64, std::collections::HashMap<String, Tool>)>);

impl Described {
    /// The MCP tool `name` names in `snapshot` (canonical name or alias).
    pub(crate) fn get(&self, snapshot: &kyro_core::Snapshot, name: &str) -> Option<Tool> {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if held.0 != snapshot.version() {
            // At most one entry per name the registry answers to: bounded by the catalog.
            *held = (snapshot.version(), std::collections::HashMap::new());
        }
        if let Some(tool) = held.1.get(name) {
            return Some(tool.clone());
        }
        let tool = mcp_tool(snapshot.get(name)?.descriptor());
        held.1.insert(name.to_owned(), tool.clone());
        Some(tool)
    }
}

/// The largest and smallest values of Rust's integer types, which a generated schema states
/// as `maximum`/`minimum`: in an output schema they say only what the type is.
const TYPE_BOUNDS: &[i128] = &[
    // An unsigned type's `minimum: 0`.
    0,
    // 64-bit types are bounded to what a JSON number holds exactly (2^53 - 1).
    (1 << 53) - 1,
    -((1 << 53) - 1),
    u64::MAX as i128,
    u32::MAX as i128,
    u16::MAX as i128,
    u8::MAX as i128,
    i64::MAX as i128,
    i64::MIN as i128,
    i32::MAX as i128,
    i32::MIN as i128,
];

/// An output schema as listed: without its `description` keywords (the prose is left to
/// `tool_describe`; the output schema's prose was a third of a listing, and the model reads
/// results, not their schema) and without the integer bounds that only restate a Rust type's
/// range (`maximum: 4294967295`); every other keyword kept. A property named
/// `description` or `maximum` stays.
fn listed_output(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => choices(Value::Object(
            map.iter()
                .filter(|(k, v)| match k.as_str() {
                    "description" => !v.is_string(),
                    // Every property of a result is always there (`null` when empty), and a
                    // result never has others: the lists restate that on every object.
                    "required" => !v.is_array(),
                    "additionalProperties" => v.as_bool() != Some(false),
                    "maximum" | "minimum" => !v
                        .as_i64()
                        .map(i128::from)
                        .or_else(|| v.as_u64().map(i128::from))
                        .is_some_and(|n| TYPE_BOUNDS.contains(&n)),
                    _ => true,
                })
                .map(|(k, v)| {
                    let kept = match (k.as_str(), v) {
                        // Property names are data here, not keywords.
                        ("properties" | "$defs" | "definitions", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| (name.clone(), listed_output(sub)))
                                .collect(),
                        ),
                        _ => listed_output(v),
                    };
                    (k.clone(), kept)
                })
                .collect(),
        )),
        Value::Array(items) => Value::Array(items.iter().map(listed_output).collect()),
        other => other.clone(),
    }
}

/// An input schema as listed: each choice among strings (`oneOf` of `const`s, one per
/// variant of a Rust enum) as one `enum`, the choices' descriptions read after the
/// field's own (about 40 bytes less a choice), a description that only names the values
/// of its `enum` left out (see [`restated`]), an optional property without its `null` (see
/// [`not_null`]), and without the bounds and patterns that guard the server rather than
/// shape a call (see [`guard_bound`] and [`guard_pattern`]). Every other keyword is kept.
/// The tool checks its whole schema, so a call past a bound or a pattern the listing
/// leaves out is refused with `invalid_arguments` naming the field and the bound or the
/// pattern, and `tool_describe` and `kyro://tools/NAME` state every one.
fn listed_input(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => restated(choices(Value::Object(
            map.iter()
                .filter(|(k, v)| !guard_bound(map, k, v))
                .map(|(k, v)| {
                    let required = |name: &str| {
                        map.get("required")
                            .and_then(Value::as_array)
                            .is_some_and(|r| r.iter().any(|n| n == name))
                    };
                    let kept = match (k.as_str(), v) {
                        // An optional property is sent or left out: its `null` (accepted
                        // all the same) is not listed.
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| {
                                    let sub = listed_input(sub);
                                    (name.clone(), if required(name) { sub } else { not_null(sub) })
                                })
                                .collect(),
                        ),
                        ("$defs" | "definitions", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| (name.clone(), listed_input(sub)))
                                .collect(),
                        ),
                        ("default" | "const" | "enum" | "examples", _) => v.clone(),
                        _ => listed_input(v),
                    };
                    (k.clone(), kept)
                })
                .collect(),
        ))),
        Value::Array(items) => Value::Array(items.iter().map(listed_input).collect()),
        other => other.clone(),
    }
}

/// A bound of an input schema (`schema`, holding `keyword`) that guards the server rather
/// than shapes a call: a most length of [`GUARD`] or more (`maxLength`, `maxItems`: what a
/// path, a body or a list may cost the server, far past what a call means to send), a
/// least length of one (a model does not send an empty name) unless the most is one too,
/// the range of a JSON-safe integer (what a 64-bit field holds), and a pattern that only
/// keeps a few characters out of a name (see [`guard_pattern`]). A tuple's lengths
/// (`prefixItems`) and a smaller most length (a title's 256, a post's 280) shape the call
/// and stay. The lengths and ranges are about 5 KB of the whole catalog's listing.
fn guard_bound(schema: &Map<String, Value>, keyword: &str, value: &Value) -> bool {
    const SAFE: i64 = (1 << 53) - 1;
    if schema.contains_key("prefixItems") {
        return false;
    }
    let most_is_one = ["maxLength", "maxItems"]
        .iter()
        .any(|k| schema.get(*k).and_then(Value::as_u64) == Some(1));
    match keyword {
        "maxLength" | "maxItems" => value.as_u64().is_some_and(|n| n >= GUARD),
        "minLength" | "minItems" => value.as_u64() == Some(1) && !most_is_one,
        "maximum" => value.as_i64() == Some(SAFE) || value.as_u64() == Some(u64::MAX),
        "minimum" => value.as_i64() == Some(-SAFE),
        "pattern" => value.as_str().is_some_and(guard_pattern),
        _ => false,
    }
}

/// The least most length [`guard_bound`] takes for a guard.
const GUARD: u64 = 1000;

/// An optional property's schema without its `null`: `{"type": ["string", "null"]}` as
/// `{"type": "string"}`, and `{"anyOf": [S, {"type": "null"}], "description": "..."}` (an
/// `Option` of a described type, an enum's) as S with the property's keywords beside its
/// own, the property's description first (about 0.7 KB of the whole catalog's listing). A
/// property whose keywords would overwrite S's, or whose `default` is `null`, is left as
/// it is; anything else unchanged.
fn not_null(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if let Some(Value::Array(types)) = map.get("type")
        && types.len() == 2
        && let Some(other) = types.iter().find(|t| *t != "null")
        && types.iter().any(|t| t == "null")
    {
        let other = other.clone();
        map.insert("type".to_owned(), other);
        return Value::Object(map);
    }
    let null = Value::Object(Map::from_iter([("type".to_owned(), Value::from("null"))]));
    let Some(Value::Array(branches)) = map.get("anyOf") else {
        return Value::Object(map);
    };
    let one = match branches.as_slice() {
        [one, other] | [other, one] if *other == null && *one != null => one,
        _ => return Value::Object(map),
    };
    let Value::Object(one) = one else {
        return Value::Object(map);
    };
    let clashes = map
        .iter()
        .any(|(k, v)| k != "anyOf" && ((k != "description" && one.contains_key(k)) || (k == "default" && v.is_null())));
    if clashes {
        return Value::Object(map);
    }
    let mut merged = one.clone();
    map.remove("anyOf");
    for (k, v) in map {
        let v = match (k.as_str(), v, merged.get(&k)) {
            ("description", Value::String(own), Some(Value::String(its))) => Value::String(format!("{own} {its}")),
            (_, v, _) => v,
        };
        merged.insert(k, v);
    }
    Value::Object(merged)
}

/// A schema without a description that only names the values of its `enum` ("`asc` or
/// `desc`.": each value in backticks, joined by commas, `or` and `and`): the `enum` lists
/// them (about 1.2 KB of the whole catalog's listing). A description that says anything
/// more ("`png` (default) or `jpeg`.") is kept whole.
fn restated(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let (Some(Value::String(description)), Some(Value::Array(values))) = (map.get("description"), map.get("enum"))
    else {
        return Value::Object(map);
    };
    let mut values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
    // The longest first, so that `in_progress` is not read as `in` and `_progress`.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    let mut rest = description.clone();
    for value in values {
        rest = rest.replace(&format!("`{value}`"), " ");
    }
    let only_names = rest
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .all(|word| matches!(word, "" | "or" | "and"));
    if only_names && rest != *description {
        map.remove("description");
    }
    Value::Object(map)
}

/// Whether a pattern only keeps a few characters out of a name, guarding the server rather
/// than shaping a call: an alphabet (character classes between `^` and `$`, each once or
/// repeated with `*` or `+`; no literal, count or alternative) whose every class either
/// keeps out only whitespace, control characters or punctuation (`[^\s?#&]`, `\S`) or lets
/// in every letter and digit (`[A-Za-z0-9_.-]`, `\w`). GitHub's owner and repository names
/// (`^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$`, 4 KB of the whole catalog's listing
/// alone), organizations, branches (`^[^\s?#&]+$`), git revisions (`^[^-\s][^\s]*$`): such
/// a field names something the model read where it lives, which holds those characters by
/// being a name there, and the pattern keeps out what would change the request the name is
/// put into (a `/` or `..` in an API path, `?#&` in a query, a leading `-` read as an
/// option, a control character in a header), not anything a call means to send. It is not
/// listed (about 5 KB of the whole catalog's listing). A pattern that says what a value
/// looks like is listed: a snapshot ref's `e12` (a literal), a SHA's 40 to 64 hex digits or
/// a label's at most 100 characters (a count), a relative path's segments (an alternative),
/// digits only or lower case only (`^[0-9]+$`, `^[a-z_]+$`: a class narrower than letters
/// and digits).
fn guard_pattern(pattern: &str) -> bool {
    let Some(body) = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')) else {
        return false;
    };
    let mut chars = body.chars().peekable();
    let mut classes = 0;
    while let Some(c) = chars.next() {
        let broad = match c {
            '[' => {
                let negated = chars.next_if_eq(&'^').is_some();
                // To the first `]` not escaped and not first in the class: the ranges it
                // names, and whether it names a letter or a digit (`\x7F` names neither).
                let (mut class, mut alphanumeric) = (String::new(), false);
                loop {
                    match chars.next() {
                        None => return false,
                        Some(']') if !class.is_empty() => break,
                        Some('\\') => match chars.next() {
                            Some('x') => {
                                class.push_str("\\x");
                                class.extend(chars.next_if(char::is_ascii_hexdigit));
                                class.extend(chars.next_if(char::is_ascii_hexdigit));
                            }
                            Some(e) => {
                                alphanumeric |= matches!(e, 'd' | 'w' | 'D' | 'W' | 'S');
                                class.extend(['\\', e]);
                            }
                            None => return false,
                        },
                        Some(c) => {
                            alphanumeric |= c.is_alphanumeric();
                            class.push(c);
                        }
                    }
                }
                if negated {
                    // Keeps out only whitespace, control characters or punctuation.
                    !alphanumeric
                } else {
                    class.contains("\\w") || ["A-Z", "a-z", "0-9"].iter().all(|range| class.contains(range))
                }
            }
            // Not whitespace; a letter, a digit or `_`.
            '\\' => matches!(chars.next(), Some('S' | 'w')),
            _ => return false,
        };
        if !broad {
            return false;
        }
        chars.next_if(|c| matches!(c, '*' | '+'));
        classes += 1;
    }
    classes > 0
}

/// `{"oneOf": [{"type": "string", "const": "a", "description": "..."}, ...], ...}` as
/// `{"type": "string", "enum": ["a", ...], ...}`, the choices' descriptions appended to the
/// schema's own (one line each) unless it names them already; anything else unchanged.
fn choices(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let Some(Value::Array(items)) = map.get("oneOf") else {
        return Value::Object(map);
    };
    let mut values = Vec::with_capacity(items.len());
    let mut said = Vec::new();
    for item in items {
        let Some(item) = item.as_object() else {
            return Value::Object(map);
        };
        let plain = item.get("type").is_some_and(|t| t == "string")
            && item
                .keys()
                .all(|k| matches!(k.as_str(), "type" | "const" | "description"));
        let (Some(Value::String(value)), true) = (item.get("const"), plain) else {
            return Value::Object(map);
        };
        let named = map
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|own| own.contains(&format!("`{value}`")));
        if let (Some(Value::String(description)), false) = (item.get("description"), named) {
            said.push(format!("`{value}`: {description}"));
        }
        values.push(Value::String(value.clone()));
    }
    if map.contains_key("type") || map.contains_key("enum") || values.is_empty() {
        return Value::Object(map);
    }
    map.remove("oneOf");
    map.insert("type".to_owned(), Value::String("string".to_owned()));
    map.insert("enum".to_owned(), Value::Array(values));
    if !said.is_empty() {
        let mut text = map
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for line in said {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&line);
        }
        map.insert("description".to_owned(), Value::String(text));
    }
    Value::Object(map)
}

fn object(schema: &Value) -> Map<String, Value> {
    schema.as_object().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests;
