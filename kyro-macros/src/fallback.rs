//! On error: the user's struct unchanged (minus our attributes) plus the errors, so the
//! user sees our messages and not a cascade of "cannot find" follow-ups.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::{TOOL, strip_attrs};

/// The plain struct followed by the compile errors. Without the derives, `serde` and
/// `schemars` attributes would be errors of their own, so they go too.
pub fn emit(item: &syn::DeriveInput, error: syn::Error) -> TokenStream {
    let plain = strip_attrs(item, &[TOOL, "serde", "schemars"]);
    let errors = error.to_compile_error();
    quote! {
        #plain
        #errors
    }
}
