//! The check `#[tool]` makes of each field's type, so that a type kyro cannot read and
//! describe (an enum without `#[input]`, most often) is named with its fix first, before
//! the errors serde and schemars give for the same cause.
//!
//! It picks a method by autoref: `Holdable` applies to a probe of a type that deserializes
//! and has a schema; otherwise `NotHoldable` does, whose bound no type meets.

use std::marker::PhantomData;

/// A field type, probed.
pub struct ArgumentProbe<T>(PhantomData<T>);

impl<T> ArgumentProbe<T> {
    /// The probe.
    pub const fn new() -> Self {
        ArgumentProbe(PhantomData)
    }
}

impl<T> Default for ArgumentProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Picked for a type kyro reads and describes.
pub trait Holdable {
    /// Nothing to say.
    fn check(&self) {}
}

impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> Holdable for ArgumentProbe<T> {}

/// Picked otherwise: its bound fails with the message below.
pub trait NotHoldable<T> {
    /// Fails to compile, naming the fix.
    fn check(&self)
    where
        T: ToolArgument,
    {
    }
}

impl<T> NotHoldable<T> for &ArgumentProbe<T> {}

/// Met by no type: only reached for a field type that cannot be an argument.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: kyro can neither read it from JSON nor describe it in the schema",
    label = "a field of this type",
    note = "put `#[input]` (from kyro's prelude) on the definition of the enum or struct this field holds; it derives both through kyro, so your crate needs neither serde nor schemars",
    note = "the errors below about `Deserialize` and `JsonSchema` have this same cause"
)]
pub trait ToolArgument {}
