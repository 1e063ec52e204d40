//! rmcp's session store on the state replicas share (`--state`): a pre-2026 session opened
//! on one replica is restored on another (rmcp replays the client's `initialize`), so such
//! clients need no affinity either. Whose a session is stays the bounds' business
//! ([`super::http_limits`]): a replica takes a session over only for the caller that
//! opened it.

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};

/// The sessions of the shared state.
pub(crate) struct SharedSessions(pub kyro_tools::state::PgState);

#[async_trait::async_trait]
impl SessionStore for SharedSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        match self.0.session_load(session_id).await? {
            Some((Some(_), Some(initialize))) => Ok(Some(serde_json::from_str(&initialize)?)),
            // A session whose caller was never recorded is restored for nobody.
            _ => Ok(None),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        Ok(self.0.session_store(session_id, &serde_json::to_string(state)?).await?)
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.0.session_delete(session_id).await?)
    }
}
