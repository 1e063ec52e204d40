//! The check an argument type gets (`kyro_core::check::Check`): a struct with named fields
//! checks its object (unknown fields, required ones, each field under its `#[schemars]`
//! rules), an enum of unit variants checks its choices. A shape this does not generate
//! (`flatten`, a tagged enum, a field `with` its own deserializer, a tuple struct) gets a
//! check that says it is incomplete, and the tool's schema decides for it.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Attribute, DeriveInput, Expr, Fields, LitStr, Type};

/// serde's and schemars' keys a generated check follows or that change nothing it checks.
const SERDE_CONTAINER: &[&str] = &["rename_all", "deny_unknown_fields", "default", "crate", "expecting"];
const SERDE_FIELD: &[&str] = &[
    "rename",
    "default",
    "alias",
    "skip",
    "skip_deserializing",
    "skip_serializing",
    "skip_serializing_if",
];
const SERDE_VARIANT: &[&str] = &["rename", "alias", "skip", "skip_deserializing", "skip_serializing"];
const SCHEMARS_QUIET: &[&str] = &[
    "crate",
    "description",
    "title",
    "example",
    "examples",
    "deprecated",
    "inline",
    "rename",
];

/// A `#[serde]` or `#[schemars]` attribute's keys with their values, where given.
struct Keys {
    found: Vec<(String, Option<Expr>, Option<TokenStream>)>,
    unreadable: bool,
}

fn keys(attrs: &[Attribute], of: &str) -> Keys {
    let mut found = Vec::new();
    let mut unreadable = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident(of)) {
        let parsed = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            if meta.input.peek(syn::Token![=]) {
                let value: Expr = meta.value()?.parse()?;
                found.push((key, Some(value), None));
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                found.push((key, None, Some(content.parse::<TokenStream>()?)));
            } else {
                found.push((key, None, None));
            }
            Ok(())
        });
        unreadable |= parsed.is_err();
    }
    Keys { found, unreadable }
}

impl Keys {
    fn only(&self, allowed: &[&str]) -> bool {
        !self.unreadable && self.found.iter().all(|(k, ..)| allowed.contains(&k.as_str()))
    }

    fn has(&self, key: &str) -> bool {
        self.found.iter().any(|(k, ..)| k == key)
    }

    fn string(&self, key: &str) -> Option<String> {
        self.found.iter().find_map(|(k, v, _)| match v {
            Some(Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s), ..
            })) if k == key => Some(s.value()),
            _ => None,
        })
    }
}

/// `impl Check` for an `#[input]` or `#[tool]` type.
pub fn emit(item: &DeriveInput, kc: &TokenStream) -> TokenStream {
    let ident = &item.ident;
    let (impl_generics, type_generics, where_clause) = item.generics.split_for_impl();
    let serde = keys(&item.attrs, "serde");
    let schemars = keys(&item.attrs, "schemars");
    let plain = serde.only(SERDE_CONTAINER) && schemars.only(SCHEMARS_QUIET) && item.generics.params.is_empty();
    let body = match &item.data {
        syn::Data::Struct(data) if plain => match &data.fields {
            Fields::Named(named) => Some(object(named, &serde, kc)),
            _ => None,
        },
        syn::Data::Enum(data) if plain => choices(data, &serde),
        _ => None,
    };
    let (complete, check) = body.unwrap_or_else(|| (quote!(false), quote!()));
    quote! {
        impl #impl_generics #kc::__private::Check for #ident #type_generics #where_clause {
            fn complete() -> bool {
                #[allow(unused_imports)]
                use #kc::__private::{Checked as _, Unchecked as _};
                #complete
            }

            #[allow(unused_variables)]
            fn check(
                value: &#kc::__private::Json,
                rules: &#kc::__private::Rules,
                c: &mut #kc::__private::Checker,
            ) {
                #[allow(unused_imports)]
                use #kc::__private::{Checked as _, Unchecked as _};
                #check
            }
        }
    }
}

/// The const `#[tool]` puts in `Tool`: its check, run once its completeness is known.
pub fn tool_check(ident: &syn::Ident, kc: &TokenStream) -> TokenStream {
    quote! {
        const CHECK: ::core::option::Option<#kc::check::CheckFn> = ::core::option::Option::Some({
            fn generated(
                value: &#kc::__private::Json,
            ) -> ::core::option::Option<::std::vec::Vec<#kc::Violation>> {
                static COMPLETE: ::std::sync::OnceLock<bool> = ::std::sync::OnceLock::new();
                if !*COMPLETE.get_or_init(<#ident as #kc::__private::Check>::complete) {
                    return ::core::option::Option::None;
                }
                ::core::option::Option::Some(#kc::check::arguments::<#ident>(value))
            }
            generated
        });
    }
}

fn object(named: &syn::FieldsNamed, serde: &Keys, kc: &TokenStream) -> (TokenStream, TokenStream) {
    let rename_all = serde.string("rename_all");
    let all_default = serde.has("default");
    let mut complete = vec![quote!(true)];
    let mut names = Vec::new();
    let mut checks = Vec::new();
    let mut missing = Vec::new();
    for field in &named.named {
        let fs = keys(&field.attrs, "serde");
        let fschemars = keys(&field.attrs, "schemars");
        if fs.has("skip") || fs.has("skip_deserializing") {
            continue;
        }
        let ty = &field.ty;
        let ident = field.ident.as_ref().expect("named").unraw().to_string();
        let name = fs
            .string("rename")
            .unwrap_or_else(|| rename_field(&ident, rename_all.as_deref()));
        let rules = rules(&fschemars, kc);
        if !fs.only(SERDE_FIELD) || (fs.has("rename") && fs.string("rename").is_none()) || rules.is_none() {
            complete.push(quote!(false));
        }
        let rules = rules.unwrap_or_else(|| quote!(&#kc::__private::Rules::NONE));
        complete.push(quote!((&#kc::__private::CheckProbe::<#ty>::new()).complete()));
        let required = !all_default && !fs.has("default") && !is_option(ty);
        let index = names.len();
        checks.push(quote! {
            #name => {
                seen[#index] = true;
                c.at(#name, |c| (&#kc::__private::CheckProbe::<#ty>::new()).check(v, #rules, c))
            }
        });
        if required {
            missing.push(quote!(if !seen[#index] { c.missing(#name) }));
        }
        names.push(name);
    }
    // One pass over the object's own entries: each key matched against the fields' names
    // (no lookup per field), then the required ones not seen.
    let count = names.len();
    let check = quote! {
        let ::core::option::Option::Some(map) = c.object(value) else {
            return;
        };
        let mut seen = [false; #count];
        let mut unknown: ::std::vec::Vec<&str> = ::std::vec::Vec::new();
        for (key, v) in map {
            match key.as_str() {
                #(#checks)*
                other => unknown.push(other),
            }
        }
        c.unknown(&unknown, &[#(#names),*]);
        #(#missing)*
    };
    (quote!(#(#complete)&&*), check)
}

fn choices(data: &syn::DataEnum, serde: &Keys) -> Option<(TokenStream, TokenStream)> {
    let rename_all = serde.string("rename_all");
    let mut names = Vec::new();
    for variant in &data.variants {
        let vs = keys(&variant.attrs, "serde");
        if !matches!(variant.fields, Fields::Unit) || !vs.only(SERDE_VARIANT) {
            return None;
        }
        if vs.has("skip") || vs.has("skip_deserializing") {
            continue;
        }
        let ident = variant.ident.unraw().to_string();
        names.push(match vs.string("rename") {
            Some(name) => name,
            None if vs.has("rename") => return None,
            None => rename_variant(&ident, rename_all.as_deref()),
        });
    }
    Some((quote!(true), quote!(c.choice(value, &[#(#names),*]);)))
}

/// The field's `#[schemars(length, range, regex, inner)]` as `&Rules`; `None` for a key
/// the check does not follow.
fn rules(schemars: &Keys, kc: &TokenStream) -> Option<TokenStream> {
    if schemars.unreadable {
        return None;
    }
    let mut parts = Vec::new();
    for (key, _, args) in &schemars.found {
        match (key.as_str(), args) {
            (quiet, _) if SCHEMARS_QUIET.contains(&quiet) => {}
            ("length" | "range" | "regex" | "inner", Some(args)) => parts.push((key.clone(), args.clone())),
            _ => return None,
        }
    }
    let mut fields = Vec::new();
    for (key, args) in parts {
        let inner: Keys = keys_of(&args)?;
        match key.as_str() {
            "length" => {
                for (k, v, _) in &inner.found {
                    let v = v.as_ref()?;
                    match k.as_str() {
                        "min" => fields.push(quote!(min_length: ::core::option::Option::Some((#v) as u64))),
                        "max" => fields.push(quote!(max_length: ::core::option::Option::Some((#v) as u64))),
                        "equal" => fields.push(quote!(
                            min_length: ::core::option::Option::Some((#v) as u64),
                            max_length: ::core::option::Option::Some((#v) as u64)
                        )),
                        _ => return None,
                    }
                }
            }
            "range" => {
                for (k, v, _) in &inner.found {
                    let v = v.as_ref()?;
                    match k.as_str() {
                        "min" => fields.push(quote!(min: ::core::option::Option::Some((#v) as f64))),
                        "max" => fields.push(quote!(max: ::core::option::Option::Some((#v) as f64))),
                        _ => return None,
                    }
                }
            }
            "regex" => {
                let pattern = inner.found.iter().find_map(|(k, v, _)| match v {
                    Some(Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s), ..
                    })) if k == "pattern" => Some(s.clone()),
                    _ => None,
                });
                let pattern: LitStr = pattern.filter(|_| inner.found.len() == 1)?;
                fields.push(quote!(pattern: ::core::option::Option::Some({
                    static PATTERN: #kc::__private::Pattern = #kc::__private::Pattern::new(#pattern);
                    &PATTERN
                })));
            }
            _ => {
                // `inner(...)`: the items' rules, themselves a schemars list.
                let wrapped: Attribute = syn::parse_quote!(#[schemars(#args)]);
                let items = rules(&keys(&[wrapped], "schemars"), kc)?;
                fields.push(quote!(inner: ::core::option::Option::Some({
                    static INNER: #kc::__private::Rules = *#items;
                    &INNER
                })));
            }
        }
    }
    Some(quote!(&#kc::__private::Rules { #(#fields,)* ..#kc::__private::Rules::NONE }))
}

/// The keys inside `length(...)`, `range(...)`, `regex(...)`.
fn keys_of(args: &TokenStream) -> Option<Keys> {
    let wrapped: Attribute = syn::parse_quote!(#[k(#args)]);
    let found = keys(&[wrapped], "k");
    (!found.unreadable).then_some(found)
}

/// Whether a field's type is `Option<..>`: serde and schemars treat it as not required.
fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// A field's name under `rename_all`, as serde renames a field.
fn rename_field(field: &str, rule: Option<&str>) -> String {
    let pascal = || {
        let mut out = String::new();
        let mut upper = true;
        for c in field.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.extend(c.to_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    };
    match rule {
        Some("UPPERCASE" | "SCREAMING_SNAKE_CASE") => field.to_ascii_uppercase(),
        Some("PascalCase") => pascal(),
        Some("camelCase") => {
            let p = pascal();
            let mut chars = p.chars();
            chars
                .next()
                .map(|f| f.to_lowercase().chain(chars).collect())
                .unwrap_or_default()
        }
        Some("kebab-case") => field.replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => field.to_ascii_uppercase().replace('_', "-"),
        _ => field.to_owned(),
    }
}

/// A variant's name under `rename_all`, as serde renames a variant.
fn rename_variant(variant: &str, rule: Option<&str>) -> String {
    let snake = || {
        let mut out = String::new();
        for (i, c) in variant.char_indices() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        }
        out
    };
    match rule {
        Some("lowercase") => variant.to_ascii_lowercase(),
        Some("UPPERCASE") => variant.to_ascii_uppercase(),
        Some("camelCase") => {
            let mut chars = variant.chars();
            chars
                .next()
                .map(|f| f.to_lowercase().chain(chars).collect())
                .unwrap_or_default()
        }
        Some("snake_case") => snake(),
        Some("SCREAMING_SNAKE_CASE") => snake().to_ascii_uppercase(),
        Some("kebab-case") => snake().replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => snake().to_ascii_uppercase().replace('_', "-"),
        _ => variant.to_owned(),
    }
}
