//! How the browser reports: its failures as typed tool errors, and the requests a page
//! made during a call.

use std::sync::{Arc, Mutex};

use crate::Failure;
use kyro_core::ToolError;

/// A browser operation that failed, and why.
pub(crate) fn error(operation: &str, message: impl std::fmt::Display) -> ToolError {
    Failure::Browser {
        operation: operation.to_owned(),
        message: message.to_string(),
    }
    .into()
}

/// Requests the page made during a call: the URL, and why it was refused if it was.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;
