//! The `#[tool]` attribute: turns a documented argument struct into a kyro tool.
//!
//! It adds `Deserialize`, `JsonSchema` and `deny_unknown_fields`, and implements
//! `kyro_core::Tool` with the name, aliases, effect and description written in the
//! attribute and doc comments. It refuses, at the offending token and all at once, whatever
//! the canonical schema could not state faithfully. It is not for use without `kyro-core`.
//!
//! Three passes: `ast` parses into our own model, `check` applies the rules across
//! fields, `expand` emits tokens; `errors` collects every mistake and `fallback`
//! re-emits the plain struct when there are any.

mod ast;
mod attr;
mod check;
mod checks;
mod errors;
mod expand;
mod fallback;
mod paths;

use proc_macro::TokenStream;
use quote::ToTokens;

/// Declares a tool. See the crate documentation of `kyro-core` for a complete example.
///
/// Keys: `name`, `category`, `effect` (read | write | exec | network | state | none),
/// `aliases = [...]`, optional `title`, `capabilities = [...]`, `approval`
/// (auto | required), and the MCP annotation hints `read_only`, `destructive`, `idempotent`
/// and `open_world` (true | false; each defaults from the effect, and must agree with it:
/// a `write` tool cannot be `read_only`, a read-only tool cannot be `destructive`). On
/// fields: `#[tool(alias = "...")]`, and `#[tool(any_value)]` to accept an untyped
/// `serde_json::Value`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match syn::parse::<syn::DeriveInput>(item) {
        Ok(item) => item,
        Err(err) => return err.to_compile_error().into(),
    };
    match expand_tool(args.into(), &item) {
        Ok(tokens) => tokens.into(),
        Err(err) => fallback::emit(&item, err).into(),
    }
}

fn expand_tool(args: proc_macro2::TokenStream, item: &syn::DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let errors = errors::Errors::default();
    let input = ast::Tool::from_syn(&errors, args, item);
    check::all(&errors, &input);
    errors.finish()?;
    Ok(expand::emit(&input))
}

/// The item of an attribute that takes no arguments (`#[input]`, `#[output]`).
fn bare_item(name: &str, args: TokenStream, item: TokenStream) -> syn::Result<syn::DeriveInput> {
    let args = proc_macro2::TokenStream::from(args);
    if !args.is_empty() {
        return Err(syn::Error::new_spanned(
            args,
            format!("`{name}` takes no arguments; write `#[{name}]`"),
        ));
    }
    syn::parse::<syn::DeriveInput>(item)
}

/// Makes a type part of a tool's arguments: an enum of choices, a nested object, a newtype.
/// Adds `Deserialize` and `JsonSchema` through kyro's own paths, so the author's crate
/// needs neither serde nor schemars; doc comments become the input schema's descriptions,
/// and `#[serde(...)]` attributes (`rename_all`, `default`) apply as usual.
///
/// ```ignore
/// /// How names are matched.
/// #[input]
/// #[serde(rename_all = "snake_case")]
/// pub enum Mode {
///     /// The whole name.
///     Exact,
///     /// Its beginning.
///     Prefix,
/// }
/// ```
#[proc_macro_attribute]
pub fn input(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match bare_item("input", args, item) {
        Ok(item) => item,
        Err(err) => return err.to_compile_error().into(),
    };
    if let syn::Data::Union(union) = &item.data {
        return syn::Error::new_spanned(union.union_token, "`#[input]` takes a struct or an enum, not a union")
            .to_compile_error()
            .into();
    }
    let core = paths::core();
    let kc = &core.tokens;
    let serde_crate = format!("{}::__private::serde", core.text);
    let schemars_crate = format!("{}::__private::schemars", core.text);
    let check = checks::emit(&item, kc, false);
    quote::quote! {
        #[derive(#kc::__private::serde::Deserialize, #kc::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #item
        #check
    }
    .into()
}

/// Makes a struct a tool's output, or part of one: adds `Serialize` and `JsonSchema`
/// through kyro's own paths, so the author's crate needs neither serde nor schemars, and
/// marks a struct with named fields as an object (`ObjectOutput`), which `Execute::Output`
/// requires. Doc comments become the output schema's descriptions. On an enum or a tuple
/// struct it adds the derives only (fine for a field's type, refused as a whole output).
///
/// ```ignore
/// /// The counts.
/// #[output]
/// pub struct Counts {
///     /// Lines in the file.
///     pub lines: u64,
/// }
/// ```
#[proc_macro_attribute]
pub fn output(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match bare_item("output", args, item) {
        Ok(item) => item,
        Err(err) => return err.to_compile_error().into(),
    };
    let core = paths::core();
    let kc = &core.tokens;
    let serde_crate = format!("{}::__private::serde", core.text);
    let schemars_crate = format!("{}::__private::schemars", core.text);
    // A struct with named fields serializes to an object, unless serde is told otherwise.
    let transparent = item
        .attrs
        .iter()
        .any(|attr| attr.path().is_ident("serde") && attr.to_token_stream().to_string().contains("transparent"));
    let object =
        matches!(&item.data, syn::Data::Struct(s) if matches!(s.fields, syn::Fields::Named(_))) && !transparent;
    let marker = object.then(|| {
        let name = &item.ident;
        let (impl_generics, type_generics, where_clause) = item.generics.split_for_impl();
        quote::quote! {
            // Not offered in the help of another tool's refused output: the author reads
            // what may be returned, not a list of every output type compiled.
            #[diagnostic::do_not_recommend]
            impl #impl_generics #kc::ObjectOutput for #name #type_generics #where_clause {}
        }
    });
    quote::quote! {
        #[derive(#kc::__private::serde::Serialize, #kc::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #item
        #marker
    }
    .into()
}
