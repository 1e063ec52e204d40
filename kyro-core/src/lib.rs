//! The tool runtime: descriptors, canonical schemas, validation, the registry and the one
//! call boundary ([`Runtime::execute_call`]).
//!
//! It knows no tool and no transport: the built-in tools live in `kyro-tools`, the CLI and
//! the MCP server in the `kyro` binary. Tools are written as argument structs carrying
//! [`tool`](macro@tool) and implementing [`Execute`]; a crate lists its tools once with
//! [`catalog!`], which refuses duplicate names at compile time.
#![deny(missing_docs)]

// Lets the `#[tool]` expansion's `::kyro_core::` paths resolve inside this crate's tests.
extern crate self as kyro_core;

mod approver;
mod argument;
mod arguments;
pub mod authority;
mod authorize;
mod boundary;
mod caller;
mod catalog;
pub mod chain;
pub mod check;
mod checked;
pub mod closest;
#[cfg(feature = "interpreter")]
pub mod compat;
mod confined;
mod context;
mod defined;
mod denial;
mod descriptor;
pub mod discovery;
mod effect;
mod error;
mod executor;
pub mod grants;
pub mod log;
mod observed;
mod offload;
mod outcome;
pub mod policy;
mod prepared;
pub mod receipt;
mod registry;
pub mod review;
mod runtime;
pub mod sandbox;
pub mod schema;
mod schema_text;
mod size;
mod stop;
mod tool;

pub use approver::{Approver, ApproverHandle, Asked};
pub use arguments::{ArgumentsError, parse_arguments, parse_strict};
pub use caller::Caller;
pub use confined::{ConfinedPath, Entry, EntryType, Info, sha256_hex};
pub use context::{Narrowed, ToolContext, Workspace, WorkspacePath};
pub use defined::{Defined, left_out, left_out_message};
pub use descriptor::{Annotations, ArgumentAlias, Catalog, Hints, ToolDescriptor};
pub use effect::{Approval, Capability, Effect};
pub use error::ToolError;
pub use kyro_macros::{input, output, tool};
pub use outcome::{Call, Outcome, OutcomeKind, Progress, ProgressSink, TaskHook, TaskWaiting};
pub use policy::{ApprovalToken, Policy};
pub use receipt::{Execution, Observer, Receipt, Settling};
pub use registry::{CustomTool, KEPT_VERSIONS, RegisteredTool, Registry, RegistryError, Snapshot, ToolDefinition};
pub use runtime::Runtime;
pub use schema::Violation;
pub use schema_text::Schema;
pub use stop::{OnStop, StopSignal};
pub use tool::{ArgAlias, BoxFuture, Execute, ObjectOutput, Package, Tool, ToolEntry, ToolSpec, Typed};

/// Items the generated code names by absolute path; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::argument::{ArgumentProbe, Holdable, NotHoldable, ToolArgument};
    pub use crate::catalog::{DuplicateName, find_duplicate};
    pub use crate::check::{Check, CheckProbe, Checked, Checker, Json, Pattern, Rules, Unchecked};
    pub use crate::defined::{DEFINED, Defined};
    pub use linkme;
    pub use schemars;
    pub use serde;
}
