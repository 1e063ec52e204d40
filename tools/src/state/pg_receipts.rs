//! Receipts on PostgreSQL: one hash chain for every replica, written before each call is
//! answered. A write that fails keeps its receipts and tries again every second; until
//! they are written no call runs (the log is not [ready](Observer::ready)), and the calls
//! whose receipts wait are answered `receipt_unrecorded` instead of their outcome.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kyro_core::receipt::{CanonicalCall, Decision, Denial, Observer, Receipt};
use kyro_core::{Outcome, Settling, chain};

use super::postgres::{PgState, failed};

/// Receipts of calls refused because receipts could not be written are kept only while
/// fewer than this many wait: past it, a flood of refusals during an outage is counted,
/// not held. Receipts of calls that ran are always kept (their number is bounded by the
/// calls in flight when the store went away: no call runs after).
const MOST_WAITING: usize = 10_000;

/// How long a failed write waits before the next try.
const RETRY: Duration = Duration::from_secs(1);

/// Which receipts [`PgState::query_receipts`] returns; `None` matches any.
#[derive(Debug, Default, Clone)]
pub struct ReceiptFilter {
    /// The caller's name.
    pub caller: Option<String>,
    /// The tool's name.
    pub tool: Option<String>,
    /// The outcome kind.
    pub outcome: Option<String>,
    /// Calls started at or after (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Calls started before.
    pub until_ms: Option<i64>,
}

impl PgState {
    /// The receipt log of this store (an observer for the runtime).
    pub fn receipts(&self) -> PgReceipts {
        PgReceipts(Arc::new(ReceiptQueue {
            state: self.clone(),
            queue: Mutex::default(),
            writing: tokio::sync::Mutex::new(()),
            written: AtomicU64::new(0),
            behind: Mutex::new(None),
            retrying: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        }))
    }

    /// Receipts matching the filter, the last `limit` (by chain order), oldest first: each
    /// as its line in the chain.
    pub fn query_receipts(&self, filter: &ReceiptFilter, limit: i64) -> Result<Vec<String>, String> {
        self.blocking(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT line FROM (SELECT seq, line FROM kyro_receipts
                     WHERE ($1::text IS NULL OR caller = $1) AND ($2::text IS NULL OR tool = $2)
                       AND ($3::text IS NULL OR outcome = $3)
                       AND ($4::bigint IS NULL OR started_at_ms >= $4) AND ($5::bigint IS NULL OR started_at_ms < $5)
                     ORDER BY seq DESC LIMIT $6) latest ORDER BY seq",
                    &[
                        &filter.caller,
                        &filter.tool,
                        &filter.outcome,
                        &filter.since_ms,
                        &filter.until_ms,
                        &limit,
                    ],
                )
                .await
                .map_err(failed)?;
            Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
        })
    }

    /// The receipt of call `call_id`: its caller and its line in the chain.
    pub async fn find_receipt(&self, call_id: &str) -> Result<Option<(String, String)>, String> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT caller, line FROM kyro_receipts WHERE call_id = $1", &[&call_id])
            .await
            .map_err(failed)?;
        Ok(row.map(|row| (row.get(0), row.get(1))))
    }

    /// Reads every receipt in chain order and checks the chain ([`chain::verify`]), and
    /// that its last line is the head the store keeps (receipts removed from the end
    /// leave a chain that holds together but stops short of it).
    pub fn verify_receipts(&self, expected_head: Option<&str>) -> Result<chain::Verified, String> {
        self.blocking(async {
            let mut client = self.client().await?;
            // One snapshot: the head and the rows as they were together.
            let tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(failed)?;
            let kept: String = tx
                .query_one("SELECT head FROM kyro_chain WHERE id = 1", &[])
                .await
                .map_err(failed)?
                .get(0);
            // Read a thousand at a time: memory stays bounded however long the log.
            let portal = tx
                .bind("SELECT line FROM kyro_receipts ORDER BY seq", &[])
                .await
                .map_err(failed)?;
            let mut check = chain::Check::new(expected_head);
            loop {
                let rows = tx.query_portal(&portal, 1000).await.map_err(failed)?;
                if rows.is_empty() {
                    break;
                }
                for row in &rows {
                    check.line(row.get::<_, String>(0).as_bytes());
                }
            }
            let mut verified = check.end();
            if verified.broken.is_none() && verified.head != kept {
                verified.broken = Some((
                    verified.receipts + 1,
                    format!(
                        "the chain ends at {}, but the store's head is {kept}: receipts were removed from its end",
                        verified.head
                    ),
                ));
            }
            Ok(verified)
        })
    }
}

/// One receipt waiting to be written.
struct Queued {
    /// Its place in the order receipts were observed (from 1).
    ticket: u64,
    call_id: String,
    caller: String,
    tool: String,
    outcome: String,
    started_at_ms: i64,
    raw: Vec<u8>,
}

/// The receipts observed and not yet written, in order.
#[derive(Default)]
struct Pending {
    items: Vec<Queued>,
    /// The ticket given last.
    last_ticket: u64,
}

/// The receipts observed and not yet written, and the writing of them.
struct ReceiptQueue {
    state: PgState,
    queue: Mutex<Pending>,
    /// Held by the one settling task writing the queue.
    writing: tokio::sync::Mutex<()>,
    /// The ticket of the last receipt written: receipts are written in ticket order (a
    /// failed batch goes back first in line), so every ticket up to it is kept.
    written: AtomicU64,
    /// Why the last write failed, while its receipts wait in the queue.
    behind: Mutex<Option<String>>,
    /// Whether a task is trying the write again.
    retrying: AtomicBool,
    /// Receipts of refused calls not kept while the store was away.
    dropped: AtomicU64,
}

/// The receipt log on PostgreSQL: a receipt observed is written before its call is
/// answered ([`Observer::settled`]); receipts of calls finishing together are written in
/// one transaction, linked to the chain's head under its row lock, so the replicas'
/// receipts form one chain in commit order. A write that fails is tried again, the same
/// receipts in the same order, until it is written; meanwhile the log is not ready.
pub struct PgReceipts(Arc<ReceiptQueue>);

/// A line on stderr; a closed stderr loses it rather than failing the call.
fn say(what: std::fmt::Arguments<'_>) {
    kyro_core::log::warn(&format!("receipts: {what}"));
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl ReceiptQueue {
    /// Writes what is queued, up to ticket `through` at least (the receipt of the call
    /// asking, and every one before it); on failure puts it back, first in line, and has
    /// it tried again. The whole of it runs on a task of its own, so a settling future
    /// dropped midway (a cancelled parent call's child) loses nothing.
    fn settle(self: Arc<Self>, through: u64) -> Settling {
        Box::pin(async move {
            tokio::spawn(async move { self.settle_now(through).await })
                .await
                .map_err(|e| e.to_string())?
        })
    }

    async fn settle_now(self: Arc<Self>, through: u64) -> Result<(), String> {
        let _writing = self.writing.lock().await;
        if self.written.load(Ordering::SeqCst) >= through {
            // Written by another call's batch already.
            return Ok(());
        }
        let batch = std::mem::take(&mut lock(&self.queue).items);
        let Some(last) = batch.last().map(|q| q.ticket) else {
            return Ok(());
        };
        match self.write(&batch).await {
            Ok(()) => {
                self.written.store(last, Ordering::SeqCst);
                if lock(&self.behind).take().is_some() {
                    say(format_args!("the waiting receipts are written; calls run again"));
                }
                Ok(())
            }
            Err(why) => {
                let waiting = {
                    let mut queue = lock(&self.queue);
                    let later = std::mem::replace(&mut queue.items, batch);
                    queue.items.extend(later);
                    queue.items.len()
                };
                let why = format!("{waiting} receipts wait to be written: {why}");
                if lock(&self.behind).replace(why.clone()).is_none() {
                    say(format_args!("{why}; no call runs until they are written"));
                }
                self.clone().retry();
                Err(why)
            }
        }
    }

    /// Tries the waiting receipts again every second until they are written, on one task.
    fn retry(self: Arc<Self>) {
        if self.retrying.swap(true, Ordering::SeqCst) {
            return;
        }
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RETRY).await;
                let through = lock(&self.queue).last_ticket;
                let _ = self.clone().settle(through).await;
                self.retrying.store(false, Ordering::SeqCst);
                // A write failing between the one above and the flag's reset left the
                // retry to this task: look again, unless another task took it up.
                if lock(&self.behind).is_none() || self.retrying.swap(true, Ordering::SeqCst) {
                    break;
                }
            }
        });
    }

    /// One transaction: each receipt linked to the head and inserted, then the new head.
    /// A receipt already there (a write whose commit was acknowledged to nobody, tried
    /// again) is passed over, not linked twice.
    async fn write(&self, batch: &[Queued]) -> Result<(), String> {
        let mut client = self.state.client().await?;
        let tx = client.transaction().await.map_err(failed)?;
        let mut head: String = tx
            .query_one("SELECT head FROM kyro_chain WHERE id = 1 FOR UPDATE", &[])
            .await
            .map_err(failed)?
            .get(0);
        let insert = tx
            .prepare(
                "INSERT INTO kyro_receipts (call_id, caller, tool, outcome, started_at_ms, line)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (call_id) DO NOTHING",
            )
            .await
            .map_err(failed)?;
        for receipt in batch {
            let line = chain::link(&head, &receipt.raw);
            let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).into_owned();
            let added = tx
                .execute(
                    &insert,
                    &[
                        &receipt.call_id,
                        &receipt.caller,
                        &receipt.tool,
                        &receipt.outcome,
                        &receipt.started_at_ms,
                        &text,
                    ],
                )
                .await
                .map_err(failed)?;
            if added == 1 {
                head = chain::line_hash(&line);
            }
        }
        tx.execute("UPDATE kyro_chain SET head = $1 WHERE id = 1", &[&head])
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }
}

impl Observer for PgReceipts {
    fn observe(&self, receipt: &Receipt, _call: Option<&CanonicalCall>, _outcome: &Outcome) {
        let refused_unrecorded = matches!(
            &receipt.decision,
            Decision::Denied {
                reason: Denial::ReceiptsUnwritable { .. }
            }
        );
        let mut queue = lock(&self.0.queue);
        if refused_unrecorded && queue.items.len() >= MOST_WAITING {
            let dropped = self.0.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                say(format_args!(
                    "{dropped} receipts of calls refused while receipts waited were not kept"
                ));
            }
            return;
        }
        let outcome = serde_json::to_value(receipt.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        // The indexed columns hold what a client named (an unknown tool's name): without
        // NUL, which PostgreSQL's text cannot hold, and short enough for the index. The
        // line keeps the receipt whole.
        let column = |text: &str| text.replace('\0', "").chars().take(256).collect::<String>();
        queue.last_ticket += 1;
        let ticket = queue.last_ticket;
        queue.items.push(Queued {
            ticket,
            call_id: column(&receipt.call_id),
            caller: column(receipt.caller.name()),
            tool: column(&receipt.tool),
            outcome,
            started_at_ms: receipt.started_at_ms as i64,
            raw: serde_json::to_vec(receipt).unwrap_or_else(|_| b"{}".to_vec()),
        });
    }

    fn settled(&self) -> Option<Settling> {
        // While receipts wait, the retry task alone tries the store: a call does not wait
        // on another attempt (a refusal, or a call that was running when the store went).
        if let Some(why) = lock(&self.0.behind).clone() {
            return Some(Box::pin(std::future::ready(Err(why))));
        }
        // Every receipt observed so far: this call's among them.
        let through = lock(&self.0.queue).last_ticket;
        Some(self.0.clone().settle(through))
    }

    fn ready(&self) -> Result<(), String> {
        match lock(&self.0.behind).clone() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}
