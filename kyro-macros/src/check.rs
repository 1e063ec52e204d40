//! The rules: everything the canonical schema could not state faithfully is refused here,
//! at the token that is wrong.

use std::collections::HashMap;

use syn::ext::IdentExt;
use syn::{GenericArgument, LitStr, PathArguments, Type};

use crate::ast::{Field, Tool};
use crate::attr;
use crate::errors::Errors;

pub const EFFECTS: &[&str] = &["read", "write", "exec", "network", "state", "none"];
pub const APPROVALS: &[&str] = &["auto", "required"];

/// Serde container keys that keep schema and serde in agreement.
const SERDE_CONTAINER_OK: &[&str] = &["deny_unknown_fields", "default"];
/// Serde field keys that keep schema and serde in agreement.
const SERDE_FIELD_OK: &[&str] = &[
    "default",
    "skip",
    "skip_deserializing",
    "skip_serializing",
    "skip_serializing_if",
];

pub fn all(errors: &Errors, tool: &Tool) {
    container(errors, tool);
    if let Some(fields) = &tool.fields {
        for field in fields {
            one_field(errors, field);
        }
        field_aliases(errors, fields);
    }
}

fn container(errors: &Errors, tool: &Tool) {
    let item = tool.item;
    if !item.generics.params.is_empty() {
        errors.at(
            &item.generics,
            "a tool's arguments cannot be generic: the schema is generated once per tool; use concrete types",
        );
    }
    if tool.description.is_none() && tool.description_tokens.is_none() {
        errors.at(
            tool.ident,
            "a tool needs a doc comment: it becomes the tool's description (write `/// Verb first: what it does and returns.`)",
        );
    }
    match &tool.name {
        Some(name) => check_name(errors, name, "tool name"),
        None => errors.at_span(tool.span(), "missing `name`: write #[tool(name = \"my_tool\", ...)]"),
    }
    match &tool.category {
        Some(category) => {
            if !category.value().split('.').all(is_snake) {
                errors.at(
                    category,
                    "`category` must be snake_case, like \"files\" (or a family's toolset, like \"browser.vision\")",
                );
            }
        }
        None => errors.at_span(
            tool.span(),
            "missing `category`: write #[tool(category = \"files\", ...)]",
        ),
    }
    match &tool.effect {
        Some(effect) if !EFFECTS.contains(&effect.value().as_str()) => errors.at(
            effect,
            format_args!(
                "unknown effect `{}`; expected one of read, write, exec, network, state or none",
                effect.value()
            ),
        ),
        Some(_) => {}
        None => errors.at_span(
            tool.span(),
            "missing `effect`: write #[tool(effect = \"read\", ...)] (read, write, exec, network, state or none)",
        ),
    }
    if let Some(approval) = tool
        .approval
        .as_ref()
        .filter(|a| !APPROVALS.contains(&a.value().as_str()))
    {
        errors.at(
            approval,
            format_args!("unknown approval `{}`; expected auto or required", approval.value()),
        );
    }
    if let Some(task) = tool.task.as_ref() {
        match task.value().as_str() {
            "optional" | "forbidden" => {}
            "required" => errors.at(
                task,
                "a tool cannot require a task: a client without the tasks extension must still be able to call it; write `task = \"optional\"`",
            ),
            other => errors.at(task, format_args!("unknown task `{other}`; expected optional or forbidden")),
        }
    }
    if let (Some(inline), Some(task)) = (tool.inline.as_ref().filter(|b| b.value), tool.task.as_ref())
        && task.value() == "optional"
    {
        errors.at(
            inline,
            "a tool that may run as a task cannot run inline: a task is long work, which runs on the blocking pool; drop `inline` or `task`",
        );
    }
    check_hints(errors, tool);
    if let Some(title) = tool.title.as_ref().filter(|t| t.value().trim().is_empty()) {
        errors.at(title, "`title` cannot be empty");
    }
    let mut seen: Vec<String> = tool.name.iter().map(LitStr::value).collect();
    for alias in &tool.aliases {
        check_name(errors, alias, "alias");
        let value = alias.value();
        if tool.name.as_ref().is_some_and(|n| n.value() == value) {
            errors.at(alias, format_args!("alias `{value}` is the tool's own name; remove it"));
        } else if seen.contains(&value) {
            errors.at(
                alias,
                format_args!("alias `{value}` is given twice; remove the duplicate"),
            );
        }
        seen.push(value);
    }
    if let Some(capabilities) = &tool.capabilities {
        let mut seen = Vec::new();
        for capability in capabilities {
            if seen.contains(&capability.value()) {
                errors.at(capability, "capability given twice; remove the duplicate");
            } else if !capability_name(&capability.value()) {
                errors.at(
                    capability,
                    format_args!(
                        "`{}` is not a capability name; write lowercase words joined by dots, like `fs.read` or `greet.send`",
                        capability.value()
                    ),
                );
            }
            seen.push(capability.value());
        }
    }
    for key in &tool.serde {
        match key.key.as_str() {
            k if SERDE_CONTAINER_OK.contains(&k) => {}
            "untagged" => errors.at_span(
                key.span,
                "`#[serde(untagged)]` is ambiguous: serde picks the first match while the schema accepts any; use a tagged enum field",
            ),
            "rename_all" => errors.at_span(
                key.span,
                "`#[serde(rename_all)]` is not supported: argument keys are the field names; name the fields in snake_case",
            ),
            other => errors.at_span(
                key.span,
                format_args!("`#[serde({other})]` is not supported on tool arguments: the schema could not state it"),
            ),
        }
    }
}

fn one_field(errors: &Errors, field: &Field) {
    if field.doc.is_none() {
        errors.at(
            field.ident,
            "every argument needs a doc comment: it becomes the property description",
        );
    }
    let keys: Vec<&str> = field.serde.iter().map(|k| k.key.as_str()).collect();
    for key in &field.serde {
        match key.key.as_str() {
            k if SERDE_FIELD_OK.contains(&k) => {}
            "flatten" => errors.at_span(
                key.span,
                "`#[serde(flatten)]` is not supported: the schema cannot close a flattened object; declare the fields here",
            ),
            "alias" => errors.at_span(
                key.span,
                "`#[serde(alias)]` is invisible to the schema; write #[tool(alias = \"...\")] instead",
            ),
            "rename" => errors.at_span(
                key.span,
                "`#[serde(rename)]` is not supported: the argument key is the field name; rename the field",
            ),
            "deserialize_with" | "with" => {
                if !attr::has_schemars_key(&field.field.attrs, &["schema_with", "with"]) {
                    errors.at_span(
                        key.span,
                        format_args!(
                            "`#[serde({})]` changes what deserializes without changing the schema; add #[schemars(schema_with = \"...\")] describing exactly what it accepts",
                            key.key
                        ),
                    );
                }
            }
            other => errors.at_span(
                key.span,
                format_args!("`#[serde({other})]` is not supported on tool arguments: the schema could not state it"),
            ),
        }
    }
    if !keys.contains(&"skip") && !keys.contains(&"skip_deserializing") {
        field_type(errors, &field.field.ty, field.any_value, false);
    }
}

/// Walks a field type for what serde and the schema would disagree on.
fn field_type(errors: &Errors, ty: &Type, any_value: bool, inside_option: bool) {
    let path = match ty {
        Type::Path(p) if p.qself.is_none() => &p.path,
        Type::Reference(r) => return field_type(errors, &r.elem, any_value, false),
        Type::Array(a) => return field_type(errors, &a.elem, any_value, false),
        Type::Slice(s) => return field_type(errors, &s.elem, any_value, false),
        _ => return,
    };
    let Some(last) = path.segments.last() else {
        return;
    };
    let name = last.ident.to_string();
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let args: Vec<&Type> = match &last.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    match name.as_str() {
        "f32" => errors.at(ty, "`f32` silently becomes infinity past its range; use `f64`"),
        "u128" | "i128" => errors.at(
            ty,
            "128-bit integers do not survive JSON numbers; use a 64-bit integer or a string",
        ),
        "Value" if !any_value && (segments.len() == 1 || segments.iter().any(|s| s == "serde_json")) => {
            errors.at(
                ty,
                "an untyped `serde_json::Value` argument has no schema; use a typed struct, or opt in with #[tool(any_value)]",
            );
        }
        "Option" => {
            if inside_option {
                errors.at(
                    ty,
                    "`Option<Option<T>>` cannot tell null from missing; use an enum that names both cases",
                );
            }
            for arg in &args {
                field_type(errors, arg, any_value, true);
            }
            return;
        }
        "HashMap" | "BTreeMap" | "IndexMap" => {
            if let Some(key) = args.first().filter(|k| !is_string(k)) {
                errors.at(
                    key,
                    "map keys must be `String`: JSON object keys are strings and other key types disagree with the schema",
                );
            }
            if let Some(value) = args.get(1) {
                field_type(errors, value, any_value, false);
            }
            return;
        }
        _ => {}
    }
    for arg in &args {
        field_type(errors, arg, any_value, false);
    }
}

fn is_string(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "String"))
}

fn field_aliases(errors: &Errors, fields: &[Field]) {
    let mut owners: HashMap<String, String> = fields
        .iter()
        .map(|f| (f.ident.unraw().to_string(), f.ident.unraw().to_string()))
        .collect();
    for field in fields {
        for alias in &field.aliases {
            let value = alias.value();
            if !is_snake(&value) && !is_camel(&value) {
                errors.at(
                    alias,
                    "an argument alias must be snake_case or camelCase, like \"file_path\" or \"filePath\"",
                );
            }
            match owners.get(&value) {
                Some(owner) if field.ident.unraw() == owner.as_str() && value == *owner => {
                    errors.at(
                        alias,
                        format_args!("alias `{value}` is the field's own name; remove it"),
                    );
                }
                Some(owner) => errors.at(
                    alias,
                    format_args!("alias `{value}` collides with argument `{owner}`; pick another alias"),
                ),
                None => {
                    owners.insert(value, field.ident.unraw().to_string());
                }
            }
        }
    }
}

fn check_name(errors: &Errors, name: &LitStr, what: &str) {
    let value = name.value();
    let bytes = value.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_');
    if !ok {
        errors.at(
            name,
            format_args!(
                "{what} `{value}` must match ^[a-z][a-z0-9_]{{0,63}}$: lowercase letters, digits and `_`, starting with a letter"
            ),
        );
    }
}

fn is_snake(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// `startX`, `filePath`: what other servers name their arguments.
fn is_camel(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty() && bytes[0].is_ascii_lowercase() && bytes.iter().all(u8::is_ascii_alphanumeric)
}

/// Whether a field holds workspace paths: `WorkspacePath`, or an `Option` or `Vec` of them.
pub fn holds_workspace_path(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    if last.ident == "WorkspacePath" {
        return true;
    }
    if last.ident != "Option" && last.ident != "Vec" {
        return false;
    }
    match &last.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().any(|g| match g {
            GenericArgument::Type(t) => holds_workspace_path(t),
            _ => false,
        }),
        _ => false,
    }
}

/// A capability name: lowercase words joined by dots, at most 64 bytes (the rule
/// `kyro_core::Capability` applies).
fn capability_name(name: &str) -> bool {
    name.len() <= 64
        && name.split('.').all(|word| {
            word.starts_with(|c: char| c.is_ascii_lowercase())
                && word
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// The stated hints must agree with the effect and with each other: a tool whose effect
/// changes something (write, exec, state) cannot say it is read-only, one whose effect
/// changes nothing (read, none) cannot say it is not, and only a tool that changes
/// something can be destructive.
fn check_hints(errors: &Errors, tool: &Tool) {
    let [read_only, destructive, ..] = &tool.hints;
    let effect = tool.effect.as_ref().map(LitStr::value);
    let changes = matches!(effect.as_deref(), Some("write" | "exec" | "state"));
    let reads = matches!(effect.as_deref(), Some("read" | "none"));
    if let Some(stated) = read_only {
        let effect = effect.as_deref().unwrap_or_default();
        if stated.value && changes {
            errors.at(
                stated,
                format_args!(
                    "a tool with effect `{effect}` changes its environment, so it cannot be read_only; \
                     use effect = \"read\" (or \"network\" for a network read)"
                ),
            );
        } else if !stated.value && reads {
            errors.at(
                stated,
                format_args!(
                    "a tool with effect `{effect}` changes nothing, so read_only = false contradicts it; \
                     give it the effect of what it changes"
                ),
            );
        }
    }
    let read_only = read_only.as_ref().map_or(reads, |b| b.value);
    if let Some(stated) = destructive.as_ref().filter(|d| d.value && read_only) {
        errors.at(
            stated,
            "a read-only tool cannot be destructive; remove `destructive` or `read_only`",
        );
    }
}
