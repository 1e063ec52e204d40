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
        self.found
            .iter()
            .find_map(|(k, v, _)| v.as_ref().filter(|_| k == key).and_then(lit_str))
            .map(LitStr::value)
    }
}

/// `value` as a string literal, seen through the invisible groups a `macro_rules!`
/// fragment (`$name:literal`, `$e:expr`) leaves around it, as serde sees through them.
fn lit_str(mut value: &Expr) -> Option<&LitStr> {
    while let Expr::Group(group) = value {
        value = &group.expr;
    }
    match value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s), ..
        }) => Some(s),
        _ => None,
    }
}

/// `impl Check` for an `#[input]` or `#[tool]` type; `closed` when unknown fields are
/// refused whatever the type says (`#[tool]` adds `deny_unknown_fields`).
pub fn emit(item: &DeriveInput, kc: &TokenStream, closed: bool) -> TokenStream {
    let ident = &item.ident;
    let (impl_generics, type_generics, where_clause) = item.generics.split_for_impl();
    let serde = keys(&item.attrs, "serde");
    let schemars = keys(&item.attrs, "schemars");
    let plain = serde.only(SERDE_CONTAINER) && schemars.only(SCHEMARS_QUIET) && item.generics.params.is_empty();
    let body = match &item.data {
        syn::Data::Struct(data) if plain => match &data.fields {
            Fields::Named(named) => object(named, &serde, closed, kc),
            _ => None,
        },
        syn::Data::Enum(data) if plain => choices(data, &serde, kc),
        _ => None,
    };
    let (complete, check, take) = body.unwrap_or_else(|| (quote!(false), quote!(), quote!()));
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

            #take
        }
    }
}

/// The const `#[tool]` puts in `Tool`: its check, run once its completeness is known.
pub fn tool_check(ident: &syn::Ident, kc: &TokenStream) -> TokenStream {
    quote! {
        const CHECK: ::core::option::Option<#kc::check::CheckFn> = ::core::option::Option::Some({
            fn generated(
                value: &#kc::__private::Json,
            ) -> ::core::option::Option<::core::result::Result<#kc::Typed, ::std::vec::Vec<#kc::Violation>>> {
                static COMPLETE: ::std::sync::OnceLock<bool> = ::std::sync::OnceLock::new();
                // Incomplete: the schema's validator decides where there is one; without,
                // the check does what it can, and serde the rest.
                if !*COMPLETE.get_or_init(<#ident as #kc::__private::Check>::complete) && #kc::check::INTERPRETS {
                    return ::core::option::Option::None;
                }
                ::core::option::Option::Some(#kc::check::tool_arguments::<#ident>(value))
            }
            generated
        });
    }
}

fn object(
    named: &syn::FieldsNamed,
    serde: &Keys,
    closed: bool,
    kc: &TokenStream,
) -> Option<(TokenStream, TokenStream, TokenStream)> {
    // Keys a check cannot tell from the field names (a flattened field's, a rename per
    // direction): no check, serde (or the schema's validator) decides.
    if named.named.iter().any(|f| {
        let fs = keys(&f.attrs, "serde");
        fs.unreadable || fs.has("flatten") || (fs.has("rename") && fs.string("rename").is_none())
    }) {
        return None;
    }
    let rename_all = rename_all(serde)?;
    let all_default = serde.has("default");
    // serde's default for what it did not read: `default = "path"`'s, else `Default`'s.
    let container_default = match serde.string("default") {
        Some(path) => {
            let path = syn::parse_str::<syn::ExprPath>(&path).ok()?;
            quote!(#path())
        }
        None => quote!(::core::default::Default::default()),
    };
    let mut complete = vec![quote!(true)];
    let mut names = Vec::new();
    let mut checks = Vec::new();
    let mut missing = Vec::new();
    // The take: each field's value (`None` until seen), its arm, and how the struct is made.
    let mut slots = Vec::new();
    let mut takes = Vec::new();
    let mut made = Vec::new();
    for field in &named.named {
        let fs = keys(&field.attrs, "serde");
        let fschemars = keys(&field.attrs, "schemars");
        let member = field.ident.as_ref().expect("named");
        // What serde puts in a field it did not read: the container's default's, the
        // field's default, `None` for an `Option`.
        let absent = if let Some(path) = fs.string("default") {
            match syn::parse_str::<syn::ExprPath>(&path) {
                Ok(path) => quote!(#path()),
                Err(_) => quote!(return ::core::option::Option::None),
            }
        } else if fs.has("default") {
            quote!(::core::default::Default::default())
        } else if all_default {
            quote!(container.#member)
        } else if fs.has("skip") || fs.has("skip_deserializing") {
            quote!(::core::default::Default::default())
        } else if is_option(&field.ty) && !fs.has("with") && !fs.has("deserialize_with") {
            // (serde requires a field it reads `with` its own deserializer, `Option` or not.)
            quote!(::core::option::Option::None)
        } else {
            quote!(return ::core::option::Option::None)
        };
        if fs.has("skip") || fs.has("skip_deserializing") {
            made.push(quote!(#member: #absent));
            continue;
        }
        let ty = &field.ty;
        let ident = field.ident.as_ref().expect("named").unraw().to_string();
        let name = fs
            .string("rename")
            .unwrap_or_else(|| rename_field(&ident, rename_all.as_deref()));
        let rules = rules(&fschemars, kc);
        // A field serde reads its own way (`with`, `deserialize_with`, ...) or whose schema
        // rules the check does not follow: the key is known, the value left to serde (and,
        // with the `interpreter` feature, the whole call to the schema's validator).
        let opaque = !fs.only(SERDE_FIELD) || rules.is_none();
        if opaque {
            complete.push(quote!(false));
        }
        let rules = rules.unwrap_or_else(|| quote!(&#kc::__private::Rules::NONE));
        complete.push(quote!((&#kc::__private::CheckProbe::<#ty>::new()).complete()));
        let required = !all_default && !fs.has("default") && !is_option(ty);
        let index = names.len();
        let slot = quote::format_ident!("field_{}", index);
        slots.push(quote!(let mut #slot: ::core::option::Option<#ty> = ::core::option::Option::None;));
        if opaque {
            checks.push(quote!(#name => seen[#index] = true,));
            takes.push(quote!(#name => seen[#index] = true,));
        } else {
            checks.push(quote! {
                #name => {
                    seen[#index] = true;
                    c.at(#name, |c| (&#kc::__private::CheckProbe::<#ty>::new()).check(v, #rules, c))
                }
            });
            takes.push(quote! {
                #name => {
                    seen[#index] = true;
                    #slot = c.at(#name, |c| (&#kc::__private::CheckProbe::<#ty>::new()).take(v, #rules, c));
                }
            });
        }
        made.push(quote! {
            #member: match (#slot, seen[#index]) {
                (::core::option::Option::Some(taken), _) => taken,
                // Sent and not read (a part serde reads): serde reads the whole.
                (::core::option::Option::None, true) => return ::core::option::Option::None,
                (::core::option::Option::None, false) => #absent,
            }
        });
        if required {
            missing.push(quote!(if !seen[#index] { c.missing(#name) }));
        }
        names.push(name);
    }
    // One pass over the object's own entries: each key matched against the fields' names
    // (no lookup per field), then the required ones not seen. Unknown keys are refused as
    // serde refuses them (`deny_unknown_fields`) and as the canonical schema does (closed
    // where it lists properties); a type with neither takes any.
    let count = names.len();
    let closed = closed || serde.has("deny_unknown_fields") || count > 0;
    let refuse_unknown = closed.then(|| quote!(c.unknown(&unknown, &[#(#names),*]);));
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
        #refuse_unknown
        #(#missing)*
    };
    let container = all_default.then(|| quote!(let container: Self = #container_default;));
    let take = quote! {
        #[allow(unused_variables, unused_mut, unreachable_code, clippy::needless_return, clippy::question_mark)]
        fn take(
            value: &#kc::__private::Json,
            rules: &#kc::__private::Rules,
            c: &mut #kc::__private::Checker,
        ) -> ::core::option::Option<Self> {
            #[allow(unused_imports)]
            use #kc::__private::{Checked as _, Unchecked as _};
            let before = c.found();
            let ::core::option::Option::Some(map) = c.object(value) else {
                return ::core::option::Option::None;
            };
            let mut seen = [false; #count];
            #(#slots)*
            let mut unknown: ::std::vec::Vec<&str> = ::std::vec::Vec::new();
            for (key, v) in map {
                match key.as_str() {
                    #(#takes)*
                    other => unknown.push(other),
                }
            }
            #refuse_unknown
            #(#missing)*
            if c.found() > before {
                return ::core::option::Option::None;
            }
            #container
            ::core::option::Option::Some(Self { #(#made,)* })
        }
    };
    Some((quote!(#(#complete)&&*), check, take))
}

fn choices(data: &syn::DataEnum, serde: &Keys, kc: &TokenStream) -> Option<(TokenStream, TokenStream, TokenStream)> {
    let rename_all = rename_all(serde)?;
    let mut names = Vec::new();
    let mut variants = Vec::new();
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
        variants.push(&variant.ident);
    }
    let take = quote! {
        fn take(
            value: &#kc::__private::Json,
            rules: &#kc::__private::Rules,
            c: &mut #kc::__private::Checker,
        ) -> ::core::option::Option<Self> {
            c.choice(value, &[#(#names),*]);
            match value.as_str() {
                #(::core::option::Option::Some(#names) => ::core::option::Option::Some(Self::#variants),)*
                _ => ::core::option::Option::None,
            }
        }
    };
    Some((quote!(true), quote!(c.choice(value, &[#(#names),*]);), take))
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
                let pattern = inner
                    .found
                    .iter()
                    .find_map(|(k, v, _)| v.as_ref().filter(|_| k == "pattern").and_then(lit_str).cloned());
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

/// Whether a field's type is `Option<..>`: serde and schemars treat it as not required
/// (seen through the invisible group a `macro_rules!` `$t:ty` leaves, and parentheses).
fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Group(group) => is_option(&group.elem),
        Type::Paren(paren) => is_option(&paren.elem),
        Type::Path(p) => p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option"),
        _ => false,
    }
}

/// The rule serde renames by when it deserializes: `rename_all = "rule"`, or the
/// `deserialize` one of `rename_all(serialize = "..", deserialize = "..")` (none when only
/// `serialize` is given); `None` when it cannot be read (no check is generated).
fn rename_all(serde: &Keys) -> Option<Option<String>> {
    let Some((_, value, args)) = serde.found.iter().find(|(k, ..)| k == "rename_all") else {
        return Some(None);
    };
    match (value, args) {
        (Some(_), _) => serde.string("rename_all").map(Some),
        (None, Some(args)) => {
            let inner = keys_of(args)?;
            if !inner.only(&["serialize", "deserialize"])
                || (inner.has("deserialize") && inner.string("deserialize").is_none())
            {
                return None;
            }
            Some(inner.string("deserialize"))
        }
        (None, None) => None,
    }
}

/// A field's name under `rename_all`, as serde renames a field (ASCII case only).
fn rename_field(field: &str, rule: Option<&str>) -> String {
    let pascal = || {
        let mut out = String::new();
        let mut upper = true;
        for c in field.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.push(c.to_ascii_uppercase());
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
                .map(|f| std::iter::once(f.to_ascii_lowercase()).chain(chars).collect())
                .unwrap_or_default()
        }
        Some("kebab-case") => field.replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => field.to_ascii_uppercase().replace('_', "-"),
        _ => field.to_owned(),
    }
}

/// A variant's name under `rename_all`, as serde renames a variant (ASCII case only).
fn rename_variant(variant: &str, rule: Option<&str>) -> String {
    let snake = || {
        let mut out = String::new();
        for (i, c) in variant.char_indices() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
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
                .map(|f| std::iter::once(f.to_ascii_lowercase()).chain(chars).collect())
                .unwrap_or_default()
        }
        Some("snake_case") => snake(),
        Some("SCREAMING_SNAKE_CASE") => snake().to_ascii_uppercase(),
        Some("kebab-case") => snake().replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => snake().to_ascii_uppercase().replace('_', "-"),
        _ => variant.to_owned(),
    }
}
