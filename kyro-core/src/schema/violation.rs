//! A reason arguments were refused.

use serde::Serialize;

/// One reason the arguments were refused, at a JSON pointer into them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// JSON pointer to the offending value (`""` is the whole object).
    pub pointer: String,
    /// What was wrong, in words a model can act on.
    pub message: String,
}

impl Violation {
    /// A violation at `pointer`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Violation {
        Violation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}
