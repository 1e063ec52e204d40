//! `kyro approvals`: the queue of calls waiting for a named approver's review (the rule
//! `review`), in the workspace's state database or the PostgreSQL state a team's replicas
//! share (`--state URL`): listed, shown, approved and denied. The same queue the HTTP
//! server's inbox (`/approvals`) serves.

use std::path::PathBuf;

use clap::Subcommand;
use kyro_core::Caller;
use kyro_core::grants::{ApprovalStore, now_ms};
use kyro_core::review::{Decided, Review, clean_reason, decide};

use super::grants::{Refused, existing_store};

#[derive(Debug, Subcommand)]
pub(super) enum ApprovalsCommand {
    /// List the calls pending review (the default).
    List {
        /// Every review kept (decided, ran and expired ones too), not only the pending.
        #[arg(long)]
        all: bool,
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one: its caller, tool, every argument and the preview (a diff, a command line).
    Show {
        /// The approval id.
        id: String,
    },
    /// Approve a pending call: it runs once, when it is called again (or at once, when it
    /// waits as a task).
    Approve {
        /// The approval id.
        id: String,
        /// Why, recorded in the call's receipt.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deny a pending call: it is answered `denied` with the reason, and never runs.
    Deny {
        /// The approval id.
        id: String,
        /// Why, told to the caller.
        #[arg(long)]
        reason: Option<String>,
    },
}

/// Runs `kyro approvals` on the workspace's queue, or the shared state's.
pub(super) fn run(
    command: Option<ApprovalsCommand>,
    workspace: Option<PathBuf>,
    state: Option<String>,
) -> Result<(), Refused> {
    // The queue is made by the server that asks; a look or a decision never makes it.
    let store = existing_store(workspace, state)?;
    let command = command.unwrap_or(ApprovalsCommand::List {
        all: false,
        json: false,
    });
    let now = now_ms();
    match command {
        ApprovalsCommand::List { all, json } => {
            let reviews = store.reviews(!all, now).map_err(Refused::Failed)?;
            if json {
                out!("{}", serde_json::to_string_pretty(&reviews).unwrap_or_default());
            } else if reviews.is_empty() {
                out!(
                    "{}",
                    if all {
                        "no approvals kept"
                    } else {
                        "no calls pending review"
                    }
                );
            }
            for review in reviews.iter().filter(|_| !json) {
                out!("{}", line(review, now));
            }
            Ok(())
        }
        ApprovalsCommand::Show { id } => {
            let review = find(store.as_ref(), &id, now)?;
            out!("{}", line(&review, now));
            out!("fingerprint {}", review.fingerprint);
            if let Some(approver) = &review.approver {
                let reason = review.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                out!("decided by {approver}{reason}");
            }
            out!("{}", review.summary);
            Ok(())
        }
        ApprovalsCommand::Approve { id, reason } => decided(store.as_ref(), &id, true, reason),
        ApprovalsCommand::Deny { id, reason } => decided(store.as_ref(), &id, false, reason),
    }
}

fn find(store: &dyn ApprovalStore, id: &str, now: u64) -> Result<Review, Refused> {
    store
        .review(id, now)
        .map_err(Refused::Failed)?
        .ok_or_else(|| Refused::Failed(format!("no approval `{id}` (see `kyro approvals list --all`)")))
}

/// Who decides on the command line: `cli:NAME`, the account running `kyro approvals` (its
/// name in the password database, not the environment's `USER`); whoever can open the
/// state can decide, and receipts name the account.
fn approver() -> Caller {
    // SAFETY: getuid cannot fail; getpwuid's record is read at once, on this thread,
    // before any other call could replace it.
    let name = unsafe {
        let uid = libc::getuid();
        let record = libc::getpwuid(uid);
        if record.is_null() || (*record).pw_name.is_null() {
            format!("uid{uid}")
        } else {
            std::ffi::CStr::from_ptr((*record).pw_name)
                .to_string_lossy()
                .into_owned()
        }
    };
    Caller::named(&format!("cli:{name}")).unwrap_or_else(|_| Caller::local())
}

fn decided(store: &dyn ApprovalStore, id: &str, approve: bool, reason: Option<String>) -> Result<(), Refused> {
    let decision = Decided {
        approve,
        approver: approver(),
        reason: clean_reason(reason.as_deref()),
    };
    let review = decide(store, id, decision, now_ms()).map_err(|e| Refused::Failed(e.to_string()))?;
    let done = if approve { "approved" } else { "denied" };
    let by = review.approver.as_ref().map_or("", |a| a.name());
    out!("{done} {}: {} by {} ({by})", review.id, review.tool, review.caller);
    Ok(())
}

/// `3f2a…  pending  alice  write_file  12 min ago  expires in 23 h`
fn line(review: &Review, now: u64) -> String {
    let age_min = now.saturating_sub(review.created_at_ms) / 60_000;
    let left_h = review.expires_at_ms.saturating_sub(now).div_ceil(3_600_000);
    format!(
        "{}  {}  {}  {}  {age_min} min ago  expires in {left_h} h",
        review.id,
        review.state.as_str(),
        review.caller,
        review.tool
    )
}
