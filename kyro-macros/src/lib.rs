//! The `#[tool]` attribute: turns a documented argument struct into a kyro tool.
//!
//! It adds `Deserialize`, `JsonSchema` and `deny_unknown_fields`, and implements
//! `kyro_core::Tool` with the name, aliases, effect and description written in the
//! attribute and doc comments. It refuses, at the offending token and all at once, whatever
//! the canonical schema could not state faithfully. It is not for use without `kyro-core`.
//!
//! Three passes: [`ast`] parses into our own model, [`check`] applies the rules across
//! fields, [`expand`] emits tokens; [`errors`] collects every mistake and [`fallback`]
//! re-emits the plain struct when there are any.

mod ast;
mod attr;
mod check;
mod errors;
mod expand;
mod fallback;

use proc_macro::TokenStream;

/// Declares a tool. See the crate documentation of `kyro-core` for a complete example.
///
/// Keys: `name`, `category`, `effect` (read | write | exec | network | state | none),
/// `aliases = [...]`, optional `title`, `capabilities = [...]` and `approval`
/// (auto | required). On fields: `#[tool(alias = "...")]`, and `#[tool(any_value)]` to
/// accept an untyped `serde_json::Value`.
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
