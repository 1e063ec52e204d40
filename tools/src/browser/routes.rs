//! The browser's routes as data: what a paused request becomes, and the table
//! `browser_route` fills and every page's interception reads.

use std::sync::{Arc, Mutex};

/// What a paused request becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// It goes on to the network (through the proxy).
    Continue,
    /// It fails, as blocked.
    Fail,
    /// kyro answers it: status, content type, body in base64.
    Fulfill {
        status: u16,
        content_type: String,
        body: String,
    },
}

/// One route.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub pattern: String,
    pub glob: globset::GlobMatcher,
    pub decision: Decision,
}

/// The browser's routes, in the order added; the last added that matches decides.
pub(crate) type Routes = Arc<Mutex<Vec<Route>>>;

/// What the routes make of a request to `url`, if one matches.
pub(crate) fn routed(routes: &Routes, url: &str) -> Option<Decision> {
    let routes = routes.lock().unwrap_or_else(|e| e.into_inner());
    routes
        .iter()
        .rev()
        .find(|r| r.glob.is_match(url))
        .map(|r| r.decision.clone())
}
