//! The canonical schema: how it is generated from Rust types, the closed vocabulary it is
//! held to, and the validator compiled from it.

mod canonical;
mod error;
pub mod message;
#[cfg(feature = "interpreter")]
mod validate;
mod violation;

pub use canonical::{Origin, Role, VOCABULARY, canonicalize, canonicalize_from};
pub use error::SchemaError;
#[cfg(feature = "interpreter")]
pub use validate::CompiledSchema;
pub use violation::Violation;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The raw input schema of `T` (what deserializes), draft 2020-12, every subschema inlined.
///
/// [`canonicalize`] turns it into the canonical form served to clients.
pub fn generate_input<T: JsonSchema>() -> Value {
    settings().into_generator().into_root_schema_for::<T>().to_value()
}

/// The raw output schema of `T` (what serializes): fields skipped when empty are optional.
pub fn generate_output<T: JsonSchema>() -> Value {
    settings()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    })
}
