//! `kyro receipts`: the workspace's receipt log, or the one a team's replicas share in
//! PostgreSQL, queried (by caller, tool, outcome and time) and its hash chain verified.

use std::collections::VecDeque;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use kyro_core::chain::Verified;
use kyro_core::grants::now_ms;
use kyro_tools::state::{PgState, ReceiptFilter};
use serde_json::Value;

/// Most bytes of one receipt read; a longer line is skipped.
const MAX_LINE: u64 = 16 * 1024 * 1024;

/// Which receipts `kyro receipts` lists: oldest first, the last `--limit` that match.
#[derive(Debug, clap::Args)]
pub(super) struct ListArgs {
    /// Only this caller's (`local`, a token file's name, an OAuth subject).
    #[arg(long)]
    caller: Option<String>,
    /// Only calls of this tool.
    #[arg(long)]
    tool: Option<String>,
    /// Only this outcome (`ok`, `denied`, `approval_required`, `failed`, ...).
    #[arg(long)]
    outcome: Option<String>,
    /// Only calls started since: `30m`, `8h`, `2d` ago, or a UTC time
    /// (`2026-12-05T09:00:00Z`, `2026-12-05`).
    #[arg(long, value_name = "WHEN", value_parser = when_ms)]
    since: Option<u64>,
    /// Only calls started before (the same forms).
    #[arg(long, value_name = "WHEN", value_parser = when_ms)]
    until: Option<u64>,
    /// How many of the latest that match.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Print them as JSON lines, as the log holds them.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub(super) enum ReceiptsCommand {
    /// Check the log's hash chain: every receipt carries the hash of the one before, so
    /// one removed, altered or moved is found; `--head` (a head this printed before)
    /// also finds receipts removed from the end. Exit 1 when the chain is broken.
    Verify {
        /// A head printed by an earlier verify, which the log must still hold.
        #[arg(long, value_name = "HASH")]
        head: Option<String>,
    },
}

/// Where the receipts are.
pub(super) enum Log {
    /// The workspace's `.kyro/receipts.jsonl`.
    File(PathBuf),
    /// The PostgreSQL state at this URL.
    Shared(String),
}

impl Log {
    /// `--state` when given, else `--workspace` (default the current directory).
    pub(super) fn of(workspace: Option<PathBuf>, state: Option<String>) -> Log {
        match state {
            Some(url) => Log::Shared(url),
            None => Log::File(workspace.unwrap_or_else(|| PathBuf::from("."))),
        }
    }
}

/// Runs `kyro receipts` on `log`: the exit status, or a failure to print.
pub(super) fn run(command: Option<ReceiptsCommand>, list: ListArgs, log: Log) -> Result<bool, String> {
    match command {
        Some(ReceiptsCommand::Verify { head }) => {
            let (found, place) = match &log {
                Log::File(root) => (
                    kyro_core::chain::verify(open(root)?, head.as_deref()).map_err(|e| e.to_string())?,
                    "line {} of .kyro/receipts.jsonl",
                ),
                Log::Shared(url) => (
                    PgState::new(url)?.verify_receipts(head.as_deref())?,
                    "counted in the order the store holds them",
                ),
            };
            Ok(report(&found, place))
        }
        None => {
            let kept = match &log {
                Log::File(root) => latest(open(root)?, &list)?,
                Log::Shared(url) => {
                    let filter = ReceiptFilter {
                        caller: list.caller.clone(),
                        tool: list.tool.clone(),
                        outcome: list.outcome.clone(),
                        since_ms: list.since.map(|ms| ms as i64),
                        until_ms: list.until.map(|ms| ms as i64),
                    };
                    let limit = i64::try_from(list.limit).unwrap_or(i64::MAX);
                    PgState::new(url)?.query_receipts(&filter, limit)?
                }
            };
            for raw in kept {
                if list.json {
                    println!("{raw}");
                } else {
                    let receipt = serde_json::from_str(&raw).unwrap_or(Value::Null);
                    println!("{}", summary(&receipt));
                }
            }
            Ok(true)
        }
    }
}

/// The workspace's log; an empty one when the workspace has none yet (no call was
/// recorded); refused in a folder kyro never served (no `.kyro/`). Nothing is made.
fn open(root: &Path) -> Result<Box<dyn BufRead>, String> {
    match kyro_core::receipt::read_receipt_log(root) {
        Ok(log) => Ok(Box::new(log)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && root.join(".kyro").is_dir() => {
            Ok(Box::new(std::io::empty()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
            Err(super::grants::no_state_here(&root))
        }
        Err(e) => Err(format!("the receipt log of `{}`: {e}", root.display())),
    }
}

/// Prints what verify found (`place` names where the n-th receipt is); whether intact.
fn report(found: &Verified, place: &str) -> bool {
    println!(
        "{} receipts ({} written before the chain began); head {}",
        found.receipts, found.unlinked, found.head
    );
    let mut intact = true;
    if let Some((n, problem)) = &found.broken {
        println!(
            "broken at receipt {n} ({}): {problem}",
            place.replace("{}", &n.to_string())
        );
        intact = false;
    }
    if found.head_found == Some(false) {
        println!("the head given is not in the log: receipts were removed from its end (or it is another log)");
        intact = false;
    }
    if intact {
        println!("the chain is intact");
    }
    intact
}

/// The last `--limit` receipts of a JSONL log that match, oldest first, as their lines.
fn latest(mut log: impl BufRead, list: &ListArgs) -> Result<Vec<String>, String> {
    let ListArgs {
        caller,
        tool,
        outcome,
        since,
        until,
        limit,
        ..
    } = list;
    let mut kept = VecDeque::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = log.by_ref().take(MAX_LINE).read_until(b'\n', &mut line);
        if read.map_err(|e| e.to_string())? == 0 {
            break;
        }
        let Ok(receipt) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let text = |key: &str| receipt[key].as_str().unwrap_or_default().to_owned();
        let started = receipt["started_at_ms"].as_u64().unwrap_or(0);
        let matches = caller.as_ref().is_none_or(|c| *c == text("caller"))
            && tool.as_ref().is_none_or(|t| *t == text("tool"))
            && outcome.as_ref().is_none_or(|o| *o == text("outcome"))
            && since.is_none_or(|s| started >= s)
            && until.is_none_or(|u| started < u);
        if !matches || *limit == 0 {
            continue;
        }
        if kept.len() == *limit {
            kept.pop_front();
        }
        kept.push_back(String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).into_owned());
    }
    Ok(kept.into())
}

/// One receipt in a line: when, who, what, how it ended, how long, its id.
fn summary(receipt: &Value) -> String {
    let text = |key: &str| receipt[key].as_str().unwrap_or("-").to_owned();
    let mut outcome = text("outcome");
    if let Some(kind) = receipt["error_kind"].as_str() {
        outcome = format!("{outcome}:{kind}");
    }
    format!(
        "{} {} {} {} {}ms {}",
        utc(receipt["started_at_ms"].as_u64().unwrap_or(0)),
        text("caller"),
        text("tool"),
        outcome,
        receipt["duration_us"].as_u64().unwrap_or(0) / 1000,
        text("call_id"),
    )
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since the epoch of a civil date (Howard Hinnant's days_from_civil).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `30m`, `8h`, `2d` ago, or a UTC time `YYYY-MM-DD[THH:MM[:SS]][Z]`, in milliseconds.
fn when_ms(value: &str) -> Result<u64, String> {
    let refused = || format!("`{value}` is not a time: write `30m`, `8h`, `2d` (ago) or `2026-12-05T09:00:00Z`");
    if let Some(unit) = value.chars().last().filter(|c| "mhd".contains(*c))
        && let Ok(number) = value[..value.len() - 1].parse::<u64>()
    {
        let ms = number
            * match unit {
                'm' => 60_000,
                'h' => 3_600_000,
                _ => 86_400_000,
            };
        return Ok(now_ms().saturating_sub(ms));
    }
    let value = value.trim_end_matches('Z');
    let (date, time) = value.split_once('T').unwrap_or((value, "00:00:00"));
    let numbers = |text: &str, sep: char| -> Option<Vec<i64>> { text.split(sep).map(|n| n.parse().ok()).collect() };
    let (Some(date), Some(time)) = (numbers(date, '-'), numbers(time, ':')) else {
        return Err(refused());
    };
    let ([year, month, day], [hour, minute, rest @ ..]) = (date.as_slice(), time.as_slice()) else {
        return Err(refused());
    };
    let second = rest.first().copied().unwrap_or(0);
    let fits = (1..=12).contains(month) && (1..=31).contains(day) && *hour < 24 && *minute < 60 && second < 61;
    if !fits || rest.len() > 1 || *year < 1970 {
        return Err(refused());
    }
    let secs = days_from_civil(*year, *month, *day) * 86_400 + hour * 3600 + minute * 60 + second;
    Ok(secs as u64 * 1000)
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_read_and_print_in_utc() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        let ms = super::when_ms("2026-12-05T09:30:15Z").unwrap();
        assert_eq!(super::utc(ms), "2026-12-05T09:30:15Z");
        assert_eq!(
            super::utc(super::when_ms("2024-02-29").unwrap()),
            "2024-02-29T00:00:00Z"
        );
        for bad in ["yesterday", "2026-13-01", "2026-12-05T25:00", "5x", "1969-01-01"] {
            assert!(super::when_ms(bad).is_err(), "{bad}");
        }
        assert!(super::when_ms("2h").unwrap() < kyro_core::grants::now_ms());
    }
}
