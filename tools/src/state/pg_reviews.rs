//! The review queue on the shared state (PostgreSQL): the statements of [`PgState`]'s
//! review methods, with the SQLite store's meaning (its rows are read back by
//! [`Row::read`]) across every replica sharing the database.
//!
//! A call is found or put in the queue in one transaction holding a transaction-level
//! advisory lock on its caller (in a key space of the reviews' own): two replicas asked
//! the same call at once make one review, and a caller's pending reviews are counted and
//! added one request at a time, so [`PENDING_PER_CALLER`](kyro_core::review::PENDING_PER_CALLER)
//! holds exactly ([`MOST_PENDING`](kyro_core::review::MOST_PENDING) may be passed by as many
//! other callers as ask at the same moment). A decision and a run are each one conditional
//! `UPDATE`: whichever replica's lands first takes the review, any other finds it taken.

use deadpool_postgres::Transaction;
use kyro_core::Caller;
use kyro_core::review::{MOST_PENDING, NewReview, PENDING_PER_CALLER, ReviewState};

use super::postgres::{PgState, failed};
use super::reviews::{COLUMNS, Row, forgotten_before, ms, refused};

/// The first key of the advisory locks a caller's review requests take (the second is
/// the hash of the caller's name); the grants' locks are single keys, another key space.
const REVIEW_LOCK: i32 = 0x7276_6577;

fn row(r: &tokio_postgres::Row) -> Row {
    Row {
        id: r.get(0),
        caller: r.get(1),
        tool: r.get(2),
        fingerprint: r.get(3),
        arguments: r.get(4),
        summary: r.get(5),
        created_at: r.get(6),
        expires_at: r.get(7),
        state: r.get(8),
        approver: r.get(9),
        reason: r.get(10),
        decided_at: r.get(11),
        self_review: r.get(12),
    }
}

/// [`PgState::review_request`]'s work in its transaction `tx`: `Err` when the store
/// failed, `Ok(Err)` with the refusal at the bounds.
async fn find_or_put(
    tx: &Transaction<'_>,
    new: &NewReview,
    arguments: &str,
    id: &str,
    now_ms: u64,
) -> Result<Result<Row, String>, String> {
    let now = ms(now_ms);
    let caller = new.caller.name();
    // One request of a caller at a time, whichever replica it reaches (the lock ends with
    // the transaction).
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&REVIEW_LOCK, &caller],
    )
    .await
    .map_err(failed)?;
    tx.execute(
        "DELETE FROM kyro_reviews WHERE expires_at <= $1",
        &[&forgotten_before(now_ms)],
    )
    .await
    .map_err(failed)?;
    // Past MOST_SETTLED settled reviews (ran, denied, expired), the oldest go.
    tx.execute(
        "DELETE FROM kyro_reviews WHERE seq IN (SELECT seq FROM kyro_reviews
         WHERE state = 'ran' OR expires_at <= $1 ORDER BY seq DESC OFFSET $2)",
        &[&now, &(kyro_core::review::MOST_SETTLED as i64)],
    )
    .await
    .map_err(failed)?;
    let standing = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM kyro_reviews WHERE caller = $1 AND fingerprint = $2
                 AND state IN ('pending', 'approved', 'denied') AND expires_at > $3 ORDER BY seq LIMIT 1"
            ),
            &[&caller, &new.fingerprint, &now],
        )
        .await
        .map_err(failed)?;
    if let Some(standing) = standing {
        return Ok(Ok(row(&standing)));
    }
    let counted = tx
        .query_one(
            "SELECT count(*) FILTER (WHERE caller = $1), count(*) FROM kyro_reviews
             WHERE state = 'pending' AND expires_at > $2",
            &[&caller, &now],
        )
        .await
        .map_err(failed)?;
    let (mine, all): (i64, i64) = (counted.get(0), counted.get(1));
    if mine >= PENDING_PER_CALLER as i64 {
        return Ok(Err(refused(Some(&new.caller))));
    }
    if all >= MOST_PENDING as i64 {
        return Ok(Err(refused(None)));
    }
    let inserted = tx
        .query_one(
            &format!(
                "INSERT INTO kyro_reviews (id, caller, tool, fingerprint, arguments, summary, created_at, expires_at, state, self_review)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9) RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &caller,
                &new.tool,
                &new.fingerprint,
                &arguments,
                &new.summary,
                &now,
                &ms(new.expires_at_ms),
                &new.self_review,
            ],
        )
        .await
        .map_err(failed)?;
    Ok(Ok(row(&inserted)))
}

impl PgState {
    /// The review standing for `new`'s caller and fingerprint at `now_ms`, else `new`
    /// inserted, pending, as `id` (`arguments`: its arguments' JSON); refused at the
    /// bounds. Reviews expired a while ago go first.
    pub(super) async fn review_request(
        &self,
        new: &NewReview,
        arguments: &str,
        id: &str,
        now_ms: u64,
    ) -> Result<Row, String> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(failed)?;
        // Ended here, committed or rolled back, whatever the answer: a transaction left to
        // its drop ends only when the connection next runs, holding the lock till then.
        match find_or_put(&tx, new, arguments, id, now_ms).await {
            Ok(answer) => {
                tx.commit().await.map_err(failed)?;
                answer
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// Review `id`'s row.
    pub(super) async fn review_get(&self, id: &str) -> Result<Option<Row>, String> {
        let client = self.client().await?;
        let found = client
            .query_opt(&format!("SELECT {COLUMNS} FROM kyro_reviews WHERE id = $1"), &[&id])
            .await
            .map_err(failed)?;
        Ok(found.as_ref().map(row))
    }

    /// The rows kept, oldest first: only those pending at `now_ms`, or all.
    pub(super) async fn review_list(&self, pending_only: bool, now_ms: u64) -> Result<Vec<Row>, String> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM kyro_reviews
                     WHERE NOT $1 OR (state = 'pending' AND expires_at > $2) ORDER BY seq"
                ),
                &[&pending_only, &ms(now_ms)],
            )
            .await
            .map_err(failed)?;
        Ok(rows.iter().map(row).collect())
    }

    /// Decides review `id` if it is pending at `now_ms`, in one conditional update: `Ok`
    /// with the decided row, else `Err` with the row as it is then (`None`: there is none).
    pub(super) async fn review_decide(
        &self,
        id: &str,
        state: ReviewState,
        approver: &Caller,
        reason: Option<&str>,
        now_ms: u64,
    ) -> Result<Result<Row, Option<Row>>, String> {
        let client = self.client().await?;
        let decided = client
            .query_opt(
                &format!(
                    "UPDATE kyro_reviews SET state = $2, approver = $3, reason = $4, decided_at = $5
                     WHERE id = $1 AND state = 'pending' AND expires_at > $5 RETURNING {COLUMNS}"
                ),
                &[&id, &state.as_str(), &approver.name(), &reason, &ms(now_ms)],
            )
            .await
            .map_err(failed)?;
        if let Some(decided) = decided {
            return Ok(Ok(row(&decided)));
        }
        let found = client
            .query_opt(&format!("SELECT {COLUMNS} FROM kyro_reviews WHERE id = $1"), &[&id])
            .await
            .map_err(failed)?;
        Ok(Err(found.as_ref().map(row)))
    }

    /// Takes review `id` from approved (unexpired at `now_ms`) to ran, in one conditional
    /// update: whether this did.
    pub(super) async fn review_spend(&self, id: &str, now_ms: u64) -> Result<bool, String> {
        let client = self.client().await?;
        let taken = client
            .execute(
                "UPDATE kyro_reviews SET state = 'ran' WHERE id = $1 AND state = 'approved' AND expires_at > $2",
                &[&id, &ms(now_ms)],
            )
            .await
            .map_err(failed)?;
        Ok(taken == 1)
    }

    /// Claims the notice of review `id` in `state`: whether this did.
    pub(super) async fn review_claim_notice(
        &self,
        id: &str,
        state: kyro_core::review::ReviewState,
        now_ms: u64,
    ) -> Result<bool, String> {
        let client = self.client().await?;
        let forgotten = ms(now_ms).saturating_sub(ms(kyro_core::review::NOTICES_KEPT_MS));
        client
            .execute("DELETE FROM kyro_review_notices WHERE claimed_at <= $1", &[&forgotten])
            .await
            .map_err(failed)?;
        let claimed = client
            .execute(
                "INSERT INTO kyro_review_notices (id, state, claimed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&id, &state.as_str(), &ms(now_ms)],
            )
            .await
            .map_err(failed)?;
        Ok(claimed == 1)
    }
}
