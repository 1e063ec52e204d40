//! Background processes of this server, by id: their output buffered, their exit reaped
//! by a task of their own, so none is left a zombie.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::process::{Capped, GroupGuard};

/// Bytes kept of each stream of a background process, of what is not read yet.
pub(crate) const BUFFER: usize = 1024 * 1024;

/// One background process.
pub(crate) struct Background {
    pub pid: u32,
    /// The lineage of the scope that started it: only that scope and its ancestors may
    /// read or stop it.
    pub owner: Vec<u64>,
    /// Who started it: another caller sharing the scope (two clients of one server) does
    /// not reach it.
    pub caller: kyro_core::Caller,
    /// What runs, as the approval prompt of an input names it.
    pub what: String,
    pub output: Mutex<Output>,
    pub guard: Mutex<Option<GroupGuard>>,
    /// The controlling side of its terminal, written to by `write_process_input`; `None`
    /// for a program started without `tty` (its stdin is closed).
    pub terminal: Option<Mutex<std::fs::File>>,
}

/// What a background process printed and how it ended.
pub(crate) struct Output {
    pub stdout: Capped,
    pub stderr: Capped,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The process was reaped and its status recorded (its output may still be coming
    /// from a descendant holding the pipes, when kyro could not contain it).
    pub reaped: bool,
    /// Reaped, and both streams read to their end.
    pub exited: bool,
    /// Bumped at each chunk printed, so a reader waiting for output sees it come and stop.
    pub chunks: u64,
}

fn table() -> &'static Mutex<HashMap<String, Arc<Background>>> {
    static TABLE: OnceLock<Mutex<HashMap<String, Arc<Background>>>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// Registers a process and returns its id (`p1`, `p2`, ...).
pub(crate) fn insert(process: Arc<Background>) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = format!("p{}", NEXT.fetch_add(1, Ordering::Relaxed));
    table()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), process);
    id
}

/// A process by id, if the call may reach it: the caller that started it, from the scope
/// that started it or an ancestor; to anyone else it does not exist.
pub(crate) fn get(cx: &kyro_core::ToolContext, id: &str) -> Option<Arc<Background>> {
    table()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(id)
        .filter(|process| process.owner.contains(&cx.scope().id()) && process.caller == *cx.caller())
        .cloned()
}

/// Forgets a process that has exited and been read.
pub(crate) fn remove(id: &str) {
    table().lock().unwrap_or_else(|p| p.into_inner()).remove(id);
}

impl Output {
    pub fn new() -> Output {
        Output {
            stdout: Capped::new(),
            stderr: Capped::new(),
            exit_code: None,
            signal: None,
            reaped: false,
            exited: false,
            chunks: 0,
        }
    }
}
