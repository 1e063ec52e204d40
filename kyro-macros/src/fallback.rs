//! On error: the user's struct unchanged (minus our attributes) plus the errors, so the
//! user sees our messages and not a cascade of "cannot find" follow-ups.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::strip_tool_attrs;

/// The plain struct followed by the compile errors.
pub fn emit(item: &syn::DeriveInput, error: syn::Error) -> TokenStream {
    let plain = strip_tool_attrs(item);
    let errors = error.to_compile_error();
    quote! {
        #plain
        #errors
    }
}
