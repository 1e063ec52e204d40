//! Where the generated code finds kyro: `::kyro_core` for crates that depend on the core,
//! `::kyro::__core` for tool authors who depend on `kyro` alone, under whatever name the
//! dependency was given in Cargo.toml.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;

/// The path of kyro-core as the crate being compiled can name it, as tokens and as the
/// string serde's and schemars' `crate = "..."` take.
pub struct CorePath {
    pub tokens: TokenStream,
    pub text: String,
}

pub fn core() -> CorePath {
    let text = match crate_name("kyro-core") {
        Ok(FoundCrate::Itself) => "::kyro_core".to_owned(),
        Ok(FoundCrate::Name(name)) => format!("::{name}"),
        Err(_) => match crate_name("kyro") {
            Ok(FoundCrate::Itself) => "::kyro::__core".to_owned(),
            Ok(FoundCrate::Name(name)) => format!("::{name}::__core"),
            Err(_) => "::kyro_core".to_owned(),
        },
    };
    let segments = text
        .split("::")
        .filter(|s| !s.is_empty())
        .map(|s| syn::Ident::new(s, Span::call_site()));
    CorePath {
        tokens: quote!(#(::#segments)*),
        text,
    }
}
