//! Progress a tool reports, forwarded to the client as `notifications/progress`.

use rmcp::Peer;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};

/// Forwards progress reports to the client in order, as `notifications/progress`.
pub(super) struct ProgressForwarder {
    reports: tokio::sync::mpsc::UnboundedSender<(f64, Option<f64>, Option<String>)>,
}

impl ProgressForwarder {
    pub(super) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> ProgressForwarder {
        let (reports, mut queue) = tokio::sync::mpsc::unbounded_channel::<(f64, Option<f64>, Option<String>)>();
        tokio::spawn(async move {
            while let Some((progress, total, message)) = queue.recv().await {
                let mut param = ProgressNotificationParam::new(token.clone(), progress);
                param.total = total;
                param.message = message;
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        ProgressForwarder { reports }
    }
}

impl kyro_core::Progress for ProgressForwarder {
    fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let _ = self.reports.send((done, total, message.map(str::to_owned)));
    }
}
