//! The review queue in the authority database (SQLite): the statements of
//! [`SqliteApprovalStore`](super::SqliteApprovalStore)'s review methods, each run inside the
//! store's immediate write transaction, so every process sharing the file sees one queue.
//! The rows are read back to a [`Review`] here for the PostgreSQL store too.
//!
//! A review's state moves only forward (pending to approved or denied, approved to ran),
//! each move one conditional `UPDATE`: a review is decided once and run once, whichever
//! process asks first.

use kyro_core::Caller;
use kyro_core::review::{DecideError, MOST_PENDING, NewReview, PENDING_PER_CALLER, Review, ReviewState};
use rusqlite::{OptionalExtension, Transaction, params};

/// The table (the authority database's last migration).
pub(super) const TABLE: &str = "CREATE TABLE reviews (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        caller TEXT NOT NULL,
        tool TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        arguments TEXT NOT NULL,
        summary TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        approver TEXT,
        reason TEXT,
        decided_at INTEGER,
        self_review INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX reviews_by_call ON reviews (caller, fingerprint);
    CREATE INDEX reviews_by_state ON reviews (state, caller);
    CREATE INDEX reviews_by_expiry ON reviews (expires_at);";

/// The claimed notices (the authority database's next migration).
pub(super) const NOTICES: &str = "CREATE TABLE review_notices (
        id TEXT NOT NULL,
        state TEXT NOT NULL,
        claimed_at INTEGER NOT NULL,
        PRIMARY KEY (id, state)
    );
    CREATE INDEX review_notices_by_time ON review_notices (claimed_at);";

/// The columns a [`Row`] is read from, in its order (both stores).
pub(super) const COLUMNS: &str = "id, caller, tool, fingerprint, arguments, summary, created_at, expires_at, state, approver, reason, decided_at, self_review";

/// A review as a store keeps it, before it is read back.
pub(super) struct Row {
    pub id: String,
    pub caller: String,
    pub tool: String,
    pub fingerprint: String,
    pub arguments: String,
    pub summary: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub state: String,
    pub approver: Option<String>,
    pub reason: Option<String>,
    pub decided_at: Option<i64>,
    pub self_review: bool,
}

/// A time as a store keeps it (milliseconds, a signed 64-bit integer; later ones are
/// kept as the latest).
pub(super) fn ms(at: u64) -> i64 {
    i64::try_from(at).unwrap_or(i64::MAX)
}

/// Reviews expired before this at `now_ms` are no longer kept.
pub(super) fn forgotten_before(now_ms: u64) -> i64 {
    ms(now_ms).saturating_sub(ms(kyro_core::review::KEPT_AFTER_MS))
}

/// The call's arguments as a store keeps them: JSON text.
pub(super) fn arguments_text(new: &NewReview) -> Result<String, String> {
    serde_json::to_string(&new.arguments).map_err(|e| format!("the review's arguments: {e}"))
}

/// Why a review was refused: the caller's pending reviews, or the store's, at their bound.
pub(super) fn refused(caller: Option<&Caller>) -> String {
    match caller {
        Some(caller) => {
            format!("{caller} has {PENDING_PER_CALLER} calls pending review already; wait for an approver")
        }
        None => format!("{MOST_PENDING} calls are pending review already; wait for an approver"),
    }
}

impl Row {
    /// The review it keeps, its state as of `now_ms` ([`Review::state_at`]); an error for
    /// a row that does not read back (edited by hand).
    pub(super) fn read(self, now_ms: u64) -> Result<Review, String> {
        let Row {
            id,
            caller,
            tool,
            fingerprint,
            arguments,
            summary,
            created_at,
            expires_at,
            state,
            approver,
            reason,
            decided_at,
            self_review,
        } = self;
        let time = |at: i64| u64::try_from(at).map_err(|_| format!("review `{id}`: a time of {at}"));
        let mut review = Review {
            caller: Caller::named(&caller)?,
            tool,
            fingerprint,
            arguments: serde_json::from_str(&arguments).map_err(|e| format!("review `{id}`: its arguments: {e}"))?,
            summary,
            created_at_ms: time(created_at)?,
            expires_at_ms: time(expires_at)?,
            state: ReviewState::parse(&state).ok_or_else(|| format!("review `{id}`: no state `{state}`"))?,
            approver: approver.as_deref().map(Caller::named).transpose()?,
            reason,
            decided_at_ms: decided_at.map(time).transpose()?,
            self_review,
            id,
        };
        review.state = review.state_at(now_ms);
        Ok(review)
    }
}

/// The state a decision sets.
pub(super) fn decided_state(approve: bool) -> ReviewState {
    if approve {
        ReviewState::Approved
    } else {
        ReviewState::Denied
    }
}

/// A decision's answer from what its update gave: the decided row, or the row as it was
/// (`None`: no review `id`), its state as of `now_ms`.
pub(super) fn decision(id: &str, updated: Result<Row, Option<Row>>, now_ms: u64) -> Result<Review, DecideError> {
    match updated {
        Ok(row) => row.read(now_ms).map_err(DecideError::Store),
        Err(None) => Err(DecideError::Unknown(id.to_owned())),
        Err(Some(row)) => Err(DecideError::NotPending {
            id: id.to_owned(),
            state: row.read(now_ms).map_err(DecideError::Store)?.state,
        }),
    }
}

fn row(r: &rusqlite::Row) -> rusqlite::Result<Row> {
    Ok(Row {
        id: r.get(0)?,
        caller: r.get(1)?,
        tool: r.get(2)?,
        fingerprint: r.get(3)?,
        arguments: r.get(4)?,
        summary: r.get(5)?,
        created_at: r.get(6)?,
        expires_at: r.get(7)?,
        state: r.get(8)?,
        approver: r.get(9)?,
        reason: r.get(10)?,
        decided_at: r.get(11)?,
        self_review: r.get(12)?,
    })
}

/// The review standing for `new`'s caller and fingerprint at `now_ms` ([`Review::stands_at`]),
/// else `new` inserted, pending, as `id` (`arguments`: its arguments' JSON); `Err` (the
/// inner one) with the refusal when the caller's or the store's pending reviews are at their
/// bound. Reviews expired [`KEPT_AFTER_MS`](kyro_core::review::KEPT_AFTER_MS) ago go first.
pub(super) fn request(
    tx: &Transaction,
    new: &NewReview,
    arguments: &str,
    id: &str,
    now_ms: u64,
) -> rusqlite::Result<Result<Row, String>> {
    let now = ms(now_ms);
    tx.execute(
        "DELETE FROM reviews WHERE expires_at <= ?1",
        params![forgotten_before(now_ms)],
    )?;
    // Past MOST_SETTLED settled reviews (ran, denied, expired), the oldest go.
    tx.execute(
        "DELETE FROM reviews WHERE seq IN (SELECT seq FROM reviews
         WHERE state = 'ran' OR expires_at <= ?1 ORDER BY seq DESC LIMIT -1 OFFSET ?2)",
        params![now, kyro_core::review::MOST_SETTLED as i64],
    )?;
    let standing = tx
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM reviews WHERE caller = ?1 AND fingerprint = ?2
                 AND state IN ('pending', 'approved', 'denied') AND expires_at > ?3 ORDER BY seq LIMIT 1"
            ),
            params![new.caller.name(), new.fingerprint, now],
            row,
        )
        .optional()?;
    if let Some(standing) = standing {
        return Ok(Ok(standing));
    }
    let (mine, all): (i64, i64) = tx.query_row(
        "SELECT count(*) FILTER (WHERE caller = ?1), count(*) FROM reviews
         WHERE state = 'pending' AND expires_at > ?2",
        params![new.caller.name(), now],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if mine >= PENDING_PER_CALLER as i64 {
        return Ok(Err(refused(Some(&new.caller))));
    }
    if all >= MOST_PENDING as i64 {
        return Ok(Err(refused(None)));
    }
    tx.query_row(
        &format!(
            "INSERT INTO reviews (id, caller, tool, fingerprint, arguments, summary, created_at, expires_at, state, self_review)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', ?9) RETURNING {COLUMNS}"
        ),
        params![
            id,
            new.caller.name(),
            new.tool,
            new.fingerprint,
            arguments,
            new.summary,
            now,
            ms(new.expires_at_ms),
            new.self_review
        ],
        row,
    )
    .map(Ok)
}

/// Review `id`'s row.
pub(super) fn get(tx: &Transaction, id: &str) -> rusqlite::Result<Option<Row>> {
    tx.query_row(
        &format!("SELECT {COLUMNS} FROM reviews WHERE id = ?1"),
        params![id],
        row,
    )
    .optional()
}

/// The rows kept, oldest first: only those pending at `now_ms`, or all.
pub(super) fn list(tx: &Transaction, pending_only: bool, now_ms: u64) -> rusqlite::Result<Vec<Row>> {
    let mut statement = tx.prepare(&format!(
        "SELECT {COLUMNS} FROM reviews
         WHERE NOT ?1 OR (state = 'pending' AND expires_at > ?2) ORDER BY seq"
    ))?;
    let rows = statement.query_map(params![pending_only, ms(now_ms)], row)?;
    rows.collect()
}

/// Decides review `id` if it is pending at `now_ms`, in one conditional update: `Ok` with
/// the decided row, else `Err` with the row as it is (`None`: there is none).
pub(super) fn decide(
    tx: &Transaction,
    id: &str,
    state: ReviewState,
    approver: &Caller,
    reason: Option<&str>,
    now_ms: u64,
) -> rusqlite::Result<Result<Row, Option<Row>>> {
    let decided = tx
        .query_row(
            &format!(
                "UPDATE reviews SET state = ?2, approver = ?3, reason = ?4, decided_at = ?5
                 WHERE id = ?1 AND state = 'pending' AND expires_at > ?5 RETURNING {COLUMNS}"
            ),
            params![id, state.as_str(), approver.name(), reason, ms(now_ms)],
            row,
        )
        .optional()?;
    match decided {
        Some(decided) => Ok(Ok(decided)),
        None => get(tx, id).map(Err),
    }
}

/// Takes review `id` from approved (unexpired at `now_ms`) to ran: whether this did.
pub(super) fn spend(tx: &Transaction, id: &str, now_ms: u64) -> rusqlite::Result<bool> {
    let taken = tx.execute(
        "UPDATE reviews SET state = 'ran' WHERE id = ?1 AND state = 'approved' AND expires_at > ?2",
        params![id, ms(now_ms)],
    )?;
    Ok(taken == 1)
}

/// Claims the notice of review `id` in `state`: whether this did.
pub(super) fn claim(tx: &Transaction, id: &str, state: ReviewState, now_ms: u64) -> rusqlite::Result<bool> {
    tx.execute(
        "DELETE FROM review_notices WHERE claimed_at <= ?1",
        params![ms(now_ms).saturating_sub(ms(kyro_core::review::NOTICES_KEPT_MS))],
    )?;
    let claimed = tx.execute(
        "INSERT OR IGNORE INTO review_notices (id, state, claimed_at) VALUES (?1, ?2, ?3)",
        params![id, state.as_str(), ms(now_ms)],
    )?;
    Ok(claimed == 1)
}
