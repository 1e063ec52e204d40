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
//! catalogs to add next to an author's own, and a family's feature (`files`, `web`,
//! `browser`, `state`, ...) only that family and its own dependencies.
#![deny(missing_docs)]
#![deny(unreachable_pub)]

// Lets `#[tool]` and `#[output]` name `::kyro::__core` from this crate's own code.
extern crate self as kyro;

mod args;
#[cfg(all(feature = "builtins", feature = "http", feature = "upstream"))]
mod cli;
mod config;
pub mod dialects;
mod frames;
pub mod inventory;
mod mcp;
mod selection;
mod server;
#[cfg(all(feature = "builtins", feature = "http", feature = "upstream"))]
mod text_arguments;
mod upstream;

pub use args::{ServeArgs, SessionArgs};
pub use config::{ServerSettings, Transport, load_policy};
pub use kyro_core::{
    Call, Defined, Observer, Outcome, OutcomeKind, Policy, Receipt, Registry, Runtime, ToolDescriptor, ToolEntry,
    Workspace, catalog, left_out,
};
pub use mcp::TextMode;
#[cfg(feature = "http")]
pub use mcp::{HttpAuth, HttpAuthFlags};
#[cfg(feature = "oauth")]
pub use mcp::{OAuth, OAuthFlags, ScopePolicy};
pub use selection::{CatalogFlags, CatalogMode, CatalogSelection, DEFAULT_TOOLSETS, SelectionError};
pub use server::{Identity, ServeError, Server, Started};
pub use upstream::UpstreamSandbox;
#[cfg(feature = "upstream")]
pub use upstream::UpstreamSpec;

/// The `kyro` binary's `main`: its command line over this library. Not part of the API.
#[cfg(all(feature = "builtins", feature = "http", feature = "upstream"))]
#[doc(hidden)]
pub fn __main() -> std::process::ExitCode {
    cli::run()
}

/// The built-in tools (the `builtins` feature, or one family's: `files`, `shell`, `git`,
/// `web`, `github`, `browser`, `state`): [`builtins::BUILTINS`], every one compiled, and
/// [`builtins::catalogs`], one catalog per family.
#[cfg(any(
    feature = "files",
    feature = "shell",
    feature = "git",
    feature = "web",
    feature = "browser",
    feature = "state"
))]
pub use kyro_tools as builtins;

/// JSON values, for [`ToolError::with_data`](prelude::ToolError::with_data) and
/// `#[tool(any_value)]` fields, without a serde_json dependency of the author's own.
pub use serde_json;

/// What a tool author writes with: `use kyro::prelude::*;`.
pub mod prelude {
    pub use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, input, output, tool};
}

/// The core the generated code names; not part of the public API.
#[doc(hidden)]
pub use kyro_core as __core;
