//! The side effects a call caused, as the runtime and the tools observed them.

use std::sync::Mutex;

use serde::Serialize;

/// A side effect the runtime observed while a tool ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ObservedEffect {
    /// A file created or changed.
    File {
        /// Path relative to its root.
        path: String,
        /// SHA-256 before the change; absent for a new file.
        before_sha256: Option<String>,
        /// SHA-256 after the change; absent for a deletion.
        after_sha256: Option<String>,
    },
    /// A process run.
    Process {
        /// The argument vector.
        argv: Vec<String>,
        /// Exit code, when it exited.
        exit_code: Option<i32>,
        /// The OS sandbox it ran under (`workspace-write, network off (Landlock ABI 6)`),
        /// or why there was none.
        sandbox: String,
    },
    /// A request to another host.
    Request {
        /// The URL.
        url: String,
        /// The HTTP status, when one came back.
        status: Option<u16>,
    },
    /// A request a page tried to make and the network policy refused.
    RefusedRequest {
        /// The URL.
        url: String,
    },
}

/// Collects the effects of one call.
#[derive(Debug, Default)]
pub struct EffectLog {
    effects: Mutex<Vec<ObservedEffect>>,
}

impl EffectLog {
    /// Records an effect.
    pub fn push(&self, effect: ObservedEffect) {
        self.effects.lock().unwrap_or_else(|p| p.into_inner()).push(effect);
    }

    pub(crate) fn take(&self) -> Vec<ObservedEffect> {
        std::mem::take(&mut *self.effects.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
