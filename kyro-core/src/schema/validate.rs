//! The validator compiled from a canonical schema (JSON Schema's interpreter, for schemas
//! that arrive at run time), and the violations it reports.

use serde_json::Value;

use super::Violation;
use super::error::{SchemaError, escape};

/// A canonical schema compiled once, checked many times.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    /// Compiles `schema` as draft 2020-12 with formats enforced.
    pub fn compile(schema: &Value) -> Result<CompiledSchema, SchemaError> {
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| SchemaError::Malformed { message: e.to_string() })?;
        Ok(CompiledSchema {
            schema: schema.clone(),
            validator,
        })
    }

    /// The schema this was compiled from.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether `instance` satisfies the schema, integer literals included.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance) && {
            let mut found = Vec::new();
            integer_literals(&self.schema, instance, String::new(), &mut found);
            found.is_empty()
        }
    }

    /// Every violation, sorted by pointer; empty when valid.
    ///
    /// On top of JSON Schema, a number written with a fraction or exponent (`1.0`, `1e3`)
    /// where only integers are allowed is a violation: 2020-12 calls it an integer, serde
    /// does not, and kyro never lets the two disagree.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        let mut found: Vec<Violation> = self
            .validator
            .iter_errors(instance)
            .map(|e| {
                Violation::new(
                    e.instance_path().to_string(),
                    super::message::of_error(&e, &self.schema),
                )
            })
            .collect();
        integer_literals(&self.schema, instance, String::new(), &mut found);
        found.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        found.dedup();
        found
    }
}

fn allows(schema: &Value, ty: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => false,
    }
}

/// Whether a value holds a number written as a float with no fraction (`1.0`, `1e3`): the
/// only case [`integer_literals`] can report, checked first without allocating.
fn has_integral_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => !(n.is_i64() || n.is_u64()) && n.as_f64().is_some_and(|f| f.fract() == 0.0),
        Value::Array(items) => items.iter().any(has_integral_float),
        Value::Object(fields) => fields.values().any(has_integral_float),
        _ => false,
    }
}

fn integer_literals(schema: &Value, instance: &Value, pointer: String, out: &mut Vec<Violation>) {
    if !has_integral_float(instance) {
        return;
    }
    match instance {
        // A fractional value is already a type violation; only integral non-integer
        // literals (`1.0`, `1e3`) need reporting here.
        Value::Number(n)
            if allows(schema, "integer")
                && !allows(schema, "number")
                && !(n.is_i64() || n.is_u64())
                && n.as_f64().is_some_and(|f| f.fract() == 0.0) =>
        {
            out.push(Violation::new(
                pointer.clone(),
                format!("{n} is not an integer literal; write it without a fraction or exponent"),
            ));
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for (key, value) in fields {
                let sub = properties
                    .and_then(|p| p.get(key))
                    .or_else(|| schema.get("additionalProperties").filter(|s| s.is_object()));
                if let Some(sub) = sub {
                    integer_literals(sub, value, format!("{pointer}/{}", escape(key)), out);
                }
            }
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            for (i, value) in items.iter().enumerate() {
                let sub = prefix.and_then(|p| p.get(i)).or_else(|| schema.get("items"));
                if let Some(sub) = sub {
                    integer_literals(sub, value, format!("{pointer}/{i}"), out);
                }
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            // Only a branch that could take the value decides; the value is refused when
            // every such branch refuses its literal.
            let per_branch: Vec<Vec<Violation>> = branches
                .iter()
                .filter(|branch| could_take(branch, instance))
                .map(|branch| {
                    let mut found = Vec::new();
                    integer_literals(branch, instance, pointer.clone(), &mut found);
                    found
                })
                .collect();
            if !per_branch.is_empty() && per_branch.iter().all(|f| !f.is_empty()) {
                out.extend(per_branch.into_iter().next().unwrap_or_default());
            }
        }
    }
}

/// Whether `branch` is a candidate for `instance`: its type admits the value and, for
/// objects, every `const` property it pins (a tag) matches.
fn could_take(branch: &Value, instance: &Value) -> bool {
    let type_ok = match instance {
        Value::Null => allows(branch, "null"),
        Value::Bool(_) => allows(branch, "boolean"),
        Value::Number(_) => allows(branch, "number") || allows(branch, "integer"),
        Value::String(_) => allows(branch, "string"),
        Value::Array(_) => allows(branch, "array"),
        Value::Object(_) => allows(branch, "object"),
    };
    if !type_ok {
        return false;
    }
    let tags = branch.get("properties").and_then(Value::as_object);
    match (instance, tags) {
        (Value::Object(fields), Some(properties)) => properties.iter().all(|(key, sub)| match sub.get("const") {
            Some(tag) => fields.get(key) == Some(tag),
            None => true,
        }),
        _ => true,
    }
}
