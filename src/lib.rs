#![doc = include_str!("../README.md")]
//!
//! # The library
//!
//! `kyro` is what a tool author depends on: the [`prelude`] (`#[tool]`, `#[output]`,
//! [`Execute`](prelude::Execute), [`ToolContext`](prelude::ToolContext),
//! [`ToolError`](prelude::ToolError), [`WorkspacePath`](prelude::WorkspacePath)),
//! [`catalog!`], the [`Server`] that serves a catalog over MCP, the [`inventory`] renderer
//! and the provider [`dialects`]. With `default-features = false` nothing of the built-in
//! tools is compiled; the default feature `builtins` adds them, as [`builtins`] and as
//! catalogs to add next to an author's own.
#![deny(missing_docs)]

// Lets `#[tool]` and `#[output]` name `::kyro::__core` from this crate's own code.
extern crate self as kyro;

pub mod compat;
#[path = "providers/mod.rs"]
pub mod dialects;
mod frames;
pub mod inventory;
pub mod mcp;
pub mod selection;
mod server;
pub mod text_arguments;
pub mod upstream;

pub use kyro_core::{
    Call, Observer, Outcome, OutcomeKind, Policy, Receipt, Registry, Runtime, ToolDescriptor, ToolEntry, Workspace,
    catalog,
};
pub use server::{ServeError, Server, load_policy};

/// The built-in tools (the `builtins` feature): [`builtins::BUILTINS`], every one, and
/// [`builtins::catalogs`], one catalog per family.
#[cfg(feature = "builtins")]
pub use kyro_tools as builtins;

/// JSON values, for [`ToolError::with_data`](prelude::ToolError::with_data) and
/// `#[tool(any_value)]` fields, without a serde_json dependency of the author's own.
pub use serde_json;

/// What a tool author writes with: `use kyro::prelude::*;`.
pub mod prelude {
    pub use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, output, tool};
}

/// The core the generated code names; not part of the public API.
#[doc(hidden)]
pub use kyro_core as __core;
