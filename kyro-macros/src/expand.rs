//! Tokens out: the struct with its derives, and the `Tool` impl holding the spec.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::LitStr;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::ast::Tool;
use crate::attr::strip_tool_attrs;

pub fn emit(tool: &Tool) -> TokenStream {
    let core = crate::paths::core();
    let kc = &core.tokens;
    let serde_crate = format!("{}::__private::serde", core.text);
    let schemars_crate = format!("{}::__private::schemars", core.text);
    let mut item = strip_tool_attrs(tool.item);
    let ident = tool.ident;
    let has_deny = tool.serde.iter().any(|k| k.key == "deny_unknown_fields");
    let deny = (!has_deny).then(|| quote!(deny_unknown_fields,));
    let derive: syn::Attribute = syn::parse_quote! {
        #[derive(#kc::__private::serde::Deserialize, #kc::__private::schemars::JsonSchema)]
    };
    let serde: syn::Attribute = syn::parse_quote! {
        #[serde(#deny crate = #serde_crate)]
    };
    let schemars: syn::Attribute = syn::parse_quote! {
        #[schemars(crate = #schemars_crate)]
    };
    item.attrs.splice(0..0, [derive, serde, schemars]);

    let name = tool.name.as_ref().expect("checked");
    let category = tool.category.as_ref().expect("checked");
    let effect = variant(tool.effect.as_ref().expect("checked"));
    let title = option(tool.title.as_ref().map(|t| quote!(#t)));
    let aliases = &tool.aliases;
    let approval = option(tool.approval.as_ref().map(|a| {
        let v = variant(a);
        quote!(#kc::Approval::#v)
    }));
    let task = tool.task.as_ref().is_some_and(|t| t.value() == "optional");
    let inline = tool.inline.as_ref().is_some_and(|b| b.value);
    let capabilities = option(
        tool.capabilities
            .as_ref()
            .map(|caps| quote!(&[#(#kc::Capability::named(#caps)),*])),
    );
    let [read_only, destructive, idempotent, open_world] =
        tool.hints.clone().map(|hint| option(hint.map(|b| quote!(#b))));
    let description = match &tool.description_tokens {
        Some(tokens) => tokens.clone(),
        None => {
            let text = tool.description.as_deref().expect("checked");
            quote!(#text)
        }
    };
    let arg_aliases = tool.fields.iter().flatten().flat_map(|f| {
        let field = f.ident.unraw().to_string();
        f.aliases
            .iter()
            .map(move |alias| quote!(#kc::ArgAlias { alias: #alias, field: #field }))
    });
    let path_args = tool
        .fields
        .iter()
        .flatten()
        .filter(|f| crate::check::holds_workspace_path(&f.field.ty))
        .map(|f| f.ident.unraw().to_string());
    let check_impl = crate::checks::emit(tool.item, kc, true);
    let tool_check = crate::checks::tool_check(ident, kc);
    // Spanned at the struct's name, so a missing `Execute` impl is reported there.
    let tool_impl = quote_spanned! {ident.span()=>
        impl #kc::Tool for #ident {
            const SPEC: #kc::ToolSpec = #kc::ToolSpec {
                name: #name,
                title: #title,
                aliases: &[#(#aliases),*],
                category: #category,
                effect: #kc::Effect::#effect,
                approval: #approval,
                task: #task,
                inline: #inline,
                capabilities: #capabilities,
                description: #description,
                arg_aliases: &[#(#arg_aliases),*],
                path_args: &[#(#path_args),*],
                hints: #kc::Hints {
                    read_only: #read_only,
                    destructive: #destructive,
                    idempotent: #idempotent,
                    open_world: #open_world,
                },
                package: #kc::Package {
                    name: ::core::env!("CARGO_PKG_NAME"),
                    version: ::core::env!("CARGO_PKG_VERSION"),
                    description: ::core::env!("CARGO_PKG_DESCRIPTION"),
                },
            };
            #tool_check
        }
    };
    // Each field's type is checked for what kyro reads and describes first, so a type
    // without `#[input]` is named with the fix before serde's and schemars' own errors.
    let checked = tool
        .fields
        .iter()
        .flatten()
        .filter(|f| !f.serde.iter().any(|k| k.key == "deserialize_with" || k.key == "with"));
    let field_checks = checked.map(|f| {
        let ty = &f.field.ty;
        quote_spanned! {ty.span()=>
            (&#kc::__private::ArgumentProbe::<#ty>::new()).check();
        }
    });
    let argument_check = quote! {
        const _: () = {
            #[allow(unused_imports)]
            use #kc::__private::{Holdable as _, NotHoldable as _};
            #[allow(dead_code)]
            fn check() {
                #(#field_checks)*
            }
        };
    };
    // Recorded apart from `Tool` (no trait bound), so a tool missing from every catalog
    // is found by the inventory test and at start.
    let type_name = ident.unraw().to_string();
    let defined = quote! {
        const _: () = {
            #[#kc::__private::linkme::distributed_slice(#kc::__private::DEFINED)]
            #[linkme(crate = #kc::__private::linkme)]
            static DEFINED: #kc::__private::Defined = #kc::__private::Defined {
                name: #name,
                type_name: #type_name,
                package: ::core::env!("CARGO_PKG_NAME"),
            };
        };
    };
    quote! {
        #argument_check
        #item
        #tool_impl
        #check_impl
        #defined
    }
}

fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// `"read"` -> `Read`.
fn variant(lit: &LitStr) -> syn::Ident {
    let value = lit.value();
    let mut chars = value.chars();
    let capitalized: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    syn::Ident::new(&capitalized, lit.span())
}
