//! The requests rmcp holds, by id: how many (the bound on requests in flight) and which ids
//! a new request may not take.
//!
//! rmcp keys what it knows of a running request by its id alone: a second request under the
//! same id would run too, and one of the two answers would be lost (or given to the other).
//! So an id is taken from the moment its request goes to rmcp until its answer is on its way
//! to the client, and a request that would reuse it is answered at the edge instead.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many ids of cancelled requests stay taken (the most recent ones). rmcp drops the
/// answer of a request cancelled while it runs, so no answer says when its handler is done;
/// until then a new request under its id would get the old one's answer.
const CANCELLED_KEPT: usize = 1024;

/// The requests rmcp holds: one permit each, by id, given back with the answer.
#[derive(Clone)]
pub(super) struct InFlight {
    /// Room for requests in flight.
    pub(super) permits: Arc<Semaphore>,
    ids: Arc<Mutex<Ids>>,
}

#[derive(Default)]
struct Ids {
    /// Requests with rmcp, not yet answered or cancelled, with their room.
    running: HashMap<String, OwnedSemaphorePermit>,
    /// Requests cancelled while with rmcp (at most [`CANCELLED_KEPT`]), oldest first.
    cancelled: VecDeque<String>,
    /// The same ids, to look up.
    cancelled_set: HashSet<String>,
}

impl InFlight {
    pub(super) fn new(max: usize) -> InFlight {
        InFlight {
            permits: Arc::new(Semaphore::new(max.max(1))),
            ids: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ids> {
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a request under `id` (an [`super::id_key`]) would share its id with one rmcp
    /// holds.
    pub(super) fn taken(&self, id: &str) -> bool {
        let ids = self.lock();
        ids.running.contains_key(id) || ids.cancelled_set.contains(id)
    }

    /// Counts `id` in with its permit (the reader refuses an id already [`taken`]).
    ///
    /// [`taken`]: InFlight::taken
    pub(super) fn admit(&self, id: String, permit: OwnedSemaphorePermit) {
        self.lock().running.insert(id, permit);
    }

    /// rmcp answered `id`: the id is free from now on, before the answer can reach the
    /// client (which may then use it again); its room is the permit returned, for the
    /// caller to drop once the answer is queued for stdout. An unknown id is nothing.
    pub(super) fn answered(&self, id: &str) -> Option<OwnedSemaphorePermit> {
        self.lock().running.remove(id)
    }

    /// The client cancelled `id`: its room is given back; the id stays taken (among the
    /// last [`CANCELLED_KEPT`]), since its handler may still be finishing.
    pub(super) fn cancelled(&self, id: &str) {
        let mut ids = self.lock();
        if ids.running.remove(id).is_none() || !ids.cancelled_set.insert(id.to_owned()) {
            return;
        }
        ids.cancelled.push_back(id.to_owned());
        if ids.cancelled.len() > CANCELLED_KEPT
            && let Some(oldest) = ids.cancelled.pop_front()
        {
            ids.cancelled_set.remove(&oldest);
        }
    }
}
