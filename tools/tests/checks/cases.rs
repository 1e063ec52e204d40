//! The cases the differential test compares on: valid objects generated from a canonical
//! input schema, then one change at a time and pairs of changes, from a seeded PRNG.

use std::collections::{BTreeMap, BTreeSet};

use kyro_core::schema::CompiledSchema;
use serde_json::{Map, Value, json};

use super::CAP;

/// A tiny deterministic PRNG (splitmix64): no dependency, the same cases on every run.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// A seed from a tool's name (FNV-1a), so each tool's cases do not depend on the others.
pub(crate) fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

pub(crate) fn allows(schema: &Value, ty: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

/// The schema without its `anyOf: [T, null]` wrapper.
pub(crate) fn unwrap_null(schema: &Value) -> &Value {
    if let Some(Value::Array(branches)) = schema.get("anyOf")
        && let Some(other) = branches.iter().find(|b| !(b.get("type") == Some(&json!("null"))))
    {
        return unwrap_null(other);
    }
    schema
}

pub(crate) fn uint(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

pub(crate) fn float(schema: &Value, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

/// A number as JSON: an integer when it is one and fits, else a float.
pub(crate) fn num(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 1.8e19 {
        if n >= 0.0 { json!(n as u64) } else { json!(n as i64) }
    } else {
        json!(n)
    }
}

/// The choices of an enum-like schema: `enum`, or `oneOf` of `const` branches.
pub(crate) fn choices(schema: &Value) -> Option<Vec<Value>> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        return Some(values.clone());
    }
    let branches = schema.get("oneOf")?.as_array()?;
    branches.iter().map(|b| b.get("const").cloned()).collect()
}

pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Strings tried for a string with a pattern (or a format): the first the validator accepts
/// for the property alone is used.
pub(crate) const STRINGS: &[&str] = &[
    "a",
    "abc",
    "a/b",
    "main",
    "x.txt",
    "A1",
    "0",
    "o",
    "2024-01-01",
    "e1",
    "owner/repo",
    "https://example.com/",
    "1.0.0",
    "a.b",
    "ab12",
    "x",
    "+1",
    "#",
    "refs/heads/main",
    "GET",
    "a=b",
    "abcdef1",
    "0123456789abcdef0123456789abcdef01234567",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
];

/// Builds valid values from schemas; remembers what it could not build.
#[derive(Default)]
pub(crate) struct Gen {
    unsatisfied: Vec<String>,
}

impl Gen {
    /// A valid value for `schema` at `at`: with every property when `full`, only the
    /// required ones otherwise.
    fn valid(&mut self, schema: &Value, full: bool, at: &str) -> Value {
        let schema = unwrap_null(schema);
        if let Some(c) = schema.get("const") {
            return c.clone();
        }
        if let Some(choices) = choices(schema)
            && let Some(first) = choices.first()
        {
            return first.clone();
        }
        if let Some(Value::Array(branches)) = schema.get("oneOf")
            && let Some(first) = branches.first()
        {
            return self.valid(first, full, at);
        }
        if allows(schema, "object") {
            let mut map = Map::new();
            let required: BTreeSet<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = schema.get("properties") {
                for (name, sub) in properties {
                    if full || required.contains(name.as_str()) {
                        let value = self.valid(sub, full, &format!("{at}/{}", escape(name)));
                        map.insert(name.clone(), value);
                    }
                }
            }
            if full && let Some(sub @ Value::Object(_)) = schema.get("additionalProperties") {
                let value = self.valid(sub, full, &format!("{at}/key"));
                map.insert("key".to_owned(), value);
            }
            return Value::Object(map);
        }
        if allows(schema, "array") {
            let min = uint(schema, "minItems").unwrap_or(0);
            let max = uint(schema, "maxItems").unwrap_or(u64::MAX);
            let count = if full { min.max(1) } else { min }.min(max);
            let item = schema.get("items").cloned().unwrap_or(json!({}));
            return Value::Array(
                (0..count)
                    .map(|i| self.valid(&item, full, &format!("{at}/{i}")))
                    .collect(),
            );
        }
        if allows(schema, "string") {
            return self.string(schema, at);
        }
        if allows(schema, "integer") || allows(schema, "number") {
            let low = float(schema, "minimum").unwrap_or(f64::MIN);
            let high = float(schema, "maximum").unwrap_or(f64::MAX);
            return num(1f64.max(low).min(high));
        }
        if allows(schema, "boolean") {
            return json!(true);
        }
        if allows(schema, "null") {
            return Value::Null;
        }
        // Any value (an untyped `Value`).
        json!("any")
    }

    fn string(&mut self, schema: &Value, at: &str) -> Value {
        let min = uint(schema, "minLength").unwrap_or(0) as usize;
        let max = uint(schema, "maxLength").unwrap_or(u64::MAX) as usize;
        if schema.get("pattern").is_none() && schema.get("format").is_none() {
            return json!("a".repeat(min.max(1).min(max)));
        }
        let compiled = CompiledSchema::compile(schema).expect("a property's schema compiles");
        let padded = STRINGS.iter().map(|s| {
            let n = s.chars().count();
            if n < min {
                format!("{s}{}", "a".repeat(min - n))
            } else {
                (*s).to_owned()
            }
        });
        for candidate in STRINGS.iter().map(|s| (*s).to_owned()).chain(padded) {
            let candidate = json!(candidate);
            if compiled.is_valid(&candidate) {
                return candidate;
            }
        }
        self.unsatisfied.push(format!(
            "{at}: no candidate string matches {}",
            schema.get("pattern").or(schema.get("format")).unwrap_or(&Value::Null)
        ));
        json!("a")
    }
}

/// One change to a valid object.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Set(Value),
    Remove(String),
    Insert(String, Value),
}

#[derive(Debug, Clone)]
pub(crate) struct Edit {
    /// The JSON pointer of the value replaced, or of the object a key is removed from or
    /// inserted into.
    at: String,
    op: Op,
    kind: &'static str,
}

impl Edit {
    fn apply(&self, value: &mut Value) -> bool {
        let Some(target) = value.pointer_mut(&self.at) else {
            return false;
        };
        match &self.op {
            Op::Set(v) => *target = v.clone(),
            Op::Remove(key) => {
                let Some(map) = target.as_object_mut() else {
                    return false;
                };
                map.remove(key);
            }
            Op::Insert(key, v) => {
                let Some(map) = target.as_object_mut() else {
                    return false;
                };
                map.insert(key.clone(), v.clone());
            }
        }
        true
    }
}

/// Every JSON type, as a wrong value for a property of another.
pub(crate) fn wrong_types() -> [Value; 8] {
    [
        json!(null),
        json!(true),
        json!(1),
        json!(1.5),
        json!(1.0),
        json!("s"),
        json!([]),
        json!({}),
    ]
}

/// A near miss of a property name, `limit` → `limt`: one inner character dropped.
pub(crate) fn near_miss(name: &str) -> Option<String> {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() < 3 {
        return Some(format!("{name}s"));
    }
    let drop = chars.len() / 2;
    Some(
        chars
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != drop)
            .map(|(_, c)| c)
            .collect(),
    )
}

/// `snake_case` ↔ `camelCase` of a name, when it differs.
pub(crate) fn other_case(name: &str) -> Option<String> {
    let flipped = if name.contains('_') {
        let mut out = String::new();
        let mut upper = false;
        for c in name.chars() {
            match c {
                '_' => upper = true,
                c if upper => {
                    out.extend(c.to_uppercase());
                    upper = false;
                }
                c => out.push(c),
            }
        }
        out
    } else {
        let mut out = String::new();
        for c in name.chars() {
            if c.is_uppercase() {
                out.push('_');
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    };
    (flipped != name).then_some(flipped)
}

/// The changes of `value` (valid for `schema`, at `at`), its children's recursively.
pub(crate) fn edits(generator: &mut Gen, schema: &Value, value: &Value, at: &str, out: &mut Vec<Edit>) {
    let node = unwrap_null(schema);
    let set = |v: Value, kind| Edit {
        at: at.to_owned(),
        op: Op::Set(v),
        kind,
    };
    for wrong in wrong_types() {
        if &wrong != value {
            out.push(set(wrong, "type"));
        }
    }
    if let Some(choices) = choices(node) {
        if let Some(other) = choices.iter().find(|c| *c != value) {
            out.push(set(other.clone(), "choice"));
        }
        out.push(set(json!("bogus"), "choice"));
    }
    if let Value::String(text) = value {
        let len = text.chars().count();
        if let Some(min) = uint(node, "minLength").filter(|&m| m > 0) {
            out.push(set(
                json!(text.chars().take(min as usize - 1).collect::<String>()),
                "length",
            ));
        }
        if let Some(max) = uint(node, "maxLength").filter(|&m| m < 100_000) {
            let mut longer = text.clone();
            let pad = text.chars().last().unwrap_or('a');
            longer.extend(std::iter::repeat_n(pad, (max as usize + 1).saturating_sub(len)));
            out.push(set(json!(longer), "length"));
        }
        if node.get("pattern").is_some() {
            out.push(set(json!("!!"), "pattern"));
            out.push(set(json!(""), "pattern"));
            out.push(set(json!(format!(" {text}")), "pattern"));
        }
    }
    if value.is_number() {
        let min = float(node, "minimum");
        let max = float(node, "maximum");
        for bound in [min, max].into_iter().flatten() {
            out.push(set(num(bound), "range"));
        }
        if let Some(min) = min {
            out.push(set(num(min - 1.0), "range"));
        }
        if let Some(max) = max {
            out.push(set(num(max + 1.0), "range"));
        }
        out.push(set(json!(9_007_199_254_740_992u64), "range"));
        out.push(set(json!(1e300), "range"));
        out.push(set(json!(-1), "range"));
    }
    if let Value::Array(items) = value {
        let item_schema = node.get("items").cloned().unwrap_or(json!({}));
        let item = items
            .first()
            .cloned()
            .unwrap_or_else(|| generator.valid(&item_schema, false, &format!("{at}/0")));
        if let Some(max) = uint(node, "maxItems").filter(|&m| m < 10_000) {
            out.push(set(Value::Array(vec![item.clone(); max as usize + 1]), "items"));
        }
        if let Some(min) = uint(node, "minItems").filter(|&m| m > 0) {
            out.push(set(Value::Array(vec![item.clone(); min as usize - 1]), "items"));
        }
        // A second item of a wrong type after a valid one.
        out.push(set(json!([item.clone(), {"zzz": []}]), "items"));
        if let Some(first) = items.first() {
            edits(generator, &item_schema, first, &format!("{at}/0"), out);
        }
    }
    if let Value::Object(map) = value {
        let properties = node.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = node.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if map.contains_key(name) {
                    out.push(Edit {
                        at: at.to_owned(),
                        op: Op::Remove(name.to_owned()),
                        kind: "missing",
                    });
                }
            }
        }
        if let Some(properties) = properties {
            out.push(Edit {
                at: at.to_owned(),
                op: Op::Insert("zzz".to_owned(), json!(1)),
                kind: "unknown",
            });
            for name in properties.keys() {
                for miss in [near_miss(name), other_case(name)].into_iter().flatten() {
                    if !properties.contains_key(&miss) {
                        let sample = map.get(name).cloned().unwrap_or(json!(1));
                        out.push(Edit {
                            at: at.to_owned(),
                            op: Op::Insert(miss, sample),
                            kind: "unknown",
                        });
                    }
                }
            }
        }
        for (key, child) in map {
            let sub = properties
                .and_then(|p| p.get(key))
                .or_else(|| node.get("additionalProperties").filter(|s| s.is_object()));
            if let Some(sub) = sub {
                edits(generator, sub, child, &format!("{at}/{}", escape(key)), out);
            }
        }
    }
}

/// Up to `CAP` cases for a schema: the minimal and the full valid object, then edits of the
/// full one taken round-robin over their kinds (so each kind is tried), then pairs.
pub(crate) fn cases(schema: &Value, rng: &mut Rng) -> (Vec<Value>, Vec<String>) {
    let mut generator = Gen::default();
    let minimal = generator.valid(schema, false, "");
    let full = generator.valid(schema, true, "");
    let mut all = Vec::new();
    edits(&mut generator, schema, &full, "", &mut all);
    let mut by_kind: BTreeMap<&str, Vec<Edit>> = BTreeMap::new();
    for edit in all.iter().filter(|e| !(e.at.is_empty() && e.kind == "type")) {
        by_kind.entry(edit.kind).or_default().push(edit.clone());
    }
    for group in by_kind.values_mut() {
        rng.shuffle(group);
    }
    let mut out = vec![minimal, full.clone(), json!(null), json!([])];
    let pairs = 6;
    let mut groups: Vec<std::vec::IntoIter<Edit>> = by_kind.into_values().map(Vec::into_iter).collect();
    let mut seen: BTreeSet<String> = out.iter().map(Value::to_string).collect();
    'fill: loop {
        let mut progressed = false;
        for group in &mut groups {
            if out.len() >= CAP - pairs {
                break 'fill;
            }
            if let Some(edit) = group.next() {
                progressed = true;
                let mut case = full.clone();
                if edit.apply(&mut case) && seen.insert(case.to_string()) {
                    out.push(case);
                }
            }
        }
        if !progressed {
            break;
        }
    }
    let nested: Vec<&Edit> = all.iter().filter(|e| !e.at.is_empty()).collect();
    for _ in 0..pairs * 4 {
        if out.len() >= CAP || all.len() < 2 {
            break;
        }
        let a = &all[rng.below(all.len())];
        let b = if nested.is_empty() {
            &all[rng.below(all.len())]
        } else {
            nested[rng.below(nested.len())]
        };
        if a.at == b.at || a.at.starts_with(&b.at) || b.at.starts_with(&a.at) {
            continue;
        }
        let mut case = full.clone();
        if a.apply(&mut case) && b.apply(&mut case) && seen.insert(case.to_string()) {
            out.push(case);
        }
    }
    (out, generator.unsatisfied)
}
