//! Attribute parsing: the `#[tool(...)]` keys, field attributes, doc comments and the serde
//! attributes the checks need to see.

use proc_macro2::{Span, TokenStream};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Token};

use crate::errors::Errors;

pub const TOOL: &str = "tool";
pub const NAME: &str = "name";
pub const TITLE: &str = "title";
pub const CATEGORY: &str = "category";
pub const EFFECT: &str = "effect";
pub const ALIASES: &str = "aliases";
pub const CAPABILITIES: &str = "capabilities";
pub const APPROVAL: &str = "approval";
pub const TASK: &str = "task";
pub const INLINE: &str = "inline";
pub const READ_ONLY: &str = "read_only";
pub const DESTRUCTIVE: &str = "destructive";
pub const IDEMPOTENT: &str = "idempotent";
pub const OPEN_WORLD: &str = "open_world";
/// The annotation hint keys, in the order `Hints` lists them.
pub const HINTS: [&str; 4] = [READ_ONLY, DESTRUCTIVE, IDEMPOTENT, OPEN_WORLD];
pub const ALIAS: &str = "alias";
pub const ANY_VALUE: &str = "any_value";

/// The container keys, for messages.
pub const CONTAINER_KEYS: &str = "name, category, effect, aliases, title, capabilities, approval, task, inline, read_only, destructive, idempotent or open_world";

/// A `key` found in a `serde` attribute, with the span of its path.
pub struct SerdeKey {
    pub key: String,
    pub span: Span,
}

/// Reads `#[serde(...)]` keys (values are skipped).
pub fn serde_keys(errors: &Errors, attrs: &[Attribute]) -> Vec<SerdeKey> {
    let mut keys = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            keys.push(SerdeKey {
                key,
                span: meta.path.span(),
            });
            skip_value(meta.input)
        });
        if let Err(err) = result {
            errors.push(err);
        }
    }
    keys
}

/// Whether a `#[schemars(...)]` attribute carries one of `keys`.
pub fn has_schemars_key(attrs: &[Attribute], keys: &[&str]) -> bool {
    let mut found = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("schemars")) {
        let _ = attr.parse_nested_meta(|meta| {
            if keys.iter().any(|k| meta.path.is_ident(k)) {
                found = true;
            }
            skip_value(meta.input)
        });
    }
    found
}

/// Skips `= expr` or `(...)` after a nested-meta key.
pub fn skip_value(input: ParseStream) -> syn::Result<()> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        input.parse::<Expr>()?;
    } else if input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// A string literal value: `key = "..."`.
pub fn lit_str(errors: &Errors, key: &str, expr: &Expr) -> Option<LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.clone()),
        other => {
            errors.at(
                other,
                format_args!("`{key}` takes a string literal, like {key} = \"...\""),
            );
            None
        }
    }
}

/// A boolean literal value: `key = true`.
pub fn lit_bool(errors: &Errors, key: &str, expr: &Expr) -> Option<syn::LitBool> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Some(b.clone()),
        other => {
            errors.at(other, format_args!("`{key}` takes true or false, like {key} = true"));
            None
        }
    }
}

/// An array of string literals: `key = ["a", "b"]`.
pub fn lit_str_array(errors: &Errors, key: &str, expr: &Expr) -> Vec<LitStr> {
    match expr {
        Expr::Array(array) => array.elems.iter().filter_map(|e| lit_str(errors, key, e)).collect(),
        other => {
            errors.at(
                other,
                format_args!("`{key}` takes an array of string literals, like {key} = [\"...\"]"),
            );
            Vec::new()
        }
    }
}

/// The doc comment: one leading space dropped per line, trimmed, markdown kept.
pub fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect();
    let doc = lines.join("\n").trim().to_owned();
    (!doc.is_empty()).then_some(doc)
}

/// The doc attributes as one `concat!(...)` (lines joined by newlines), when one of them is
/// a macro such as `include_str!`; `None` when every doc attribute is a literal.
pub fn doc_tokens(attrs: &[Attribute]) -> Option<TokenStream> {
    let values: Vec<&Expr> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => Some(&nv.value),
            _ => None,
        })
        .collect();
    if !values.iter().any(|v| matches!(v, Expr::Macro(_))) {
        return None;
    }
    let parts = values.iter().map(|value| match value {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => {
            let line = s.value();
            let line = line.strip_prefix(' ').unwrap_or(&line).to_owned();
            quote::quote!(#line)
        }
        other => quote::quote!(#other),
    });
    let mut joined = Vec::new();
    for (i, part) in parts.enumerate() {
        if i > 0 {
            joined.push(quote::quote!("\n"));
        }
        joined.push(part);
    }
    Some(quote::quote!(::core::concat!(#(#joined),*)))
}

/// The struct with every `#[tool(...)]` field attribute removed.
pub fn strip_tool_attrs(item: &syn::DeriveInput) -> syn::DeriveInput {
    strip_attrs(item, &[TOOL])
}

/// The item without the attributes named in `names`, on the item and on its fields.
pub fn strip_attrs(item: &syn::DeriveInput, names: &[&str]) -> syn::DeriveInput {
    let keep = |a: &Attribute| !names.iter().any(|n| a.path().is_ident(n));
    let mut item = item.clone();
    item.attrs.retain(keep);
    if let syn::Data::Struct(data) = &mut item.data {
        for field in data.fields.iter_mut() {
            field.attrs.retain(keep);
        }
    }
    item
}
