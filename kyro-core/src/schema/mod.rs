//! The canonical schema: how it is generated from Rust types, the closed vocabulary it is
//! held to, and the validator compiled from it.

mod canonical;
mod validate;

pub use canonical::{Role, SchemaError, VOCABULARY, canonicalize};
pub use validate::{CompiledSchema, Violation};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The raw schemars schema of `T`, draft 2020-12 with every subschema inlined.
///
/// [`canonicalize`] turns it into the canonical form served to clients.
pub fn generate<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}
