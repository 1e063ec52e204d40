//! `kyro grants`: the grants a person gave ("allow this tool from now on"), listed, added
//! and revoked in the workspace's state database, which every kyro serving it reads, or
//! in the PostgreSQL state a team's replicas share (`--state URL`).

use std::path::PathBuf;

use clap::Subcommand;
use kyro_core::grants::{ApprovalStore, Grant, MemoryApprovalStore, NewGrant, now_ms};
use kyro_core::{Caller, Registry};
use kyro_tools::state::{PgState, SqliteApprovalStore};
use serde_json::{Map, Value};

/// The longest a grant may last: thirty days.
const LONGEST_MS: u64 = 30 * 86_400_000;

#[derive(Debug, Subcommand)]
pub(super) enum GrantsCommand {
    /// List the grants in force (the default).
    List {
        /// Only this caller's (`local`, or a name from the HTTP token file).
        #[arg(long)]
        caller: Option<String>,
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let a caller run a tool without being asked, for a while.
    Add {
        /// Tool name or alias.
        tool: String,
        /// Who may (default: `local`, the user running kyro).
        #[arg(long, default_value = "local")]
        caller: String,
        /// How long: `30m`, `8h`, `2d` (at most 30 days).
        #[arg(long = "for", value_name = "DURATION", default_value = "1h", value_parser = duration_ms)]
        lasting: u64,
        /// Only calls whose arguments begin with these (a JSON object: each value equal,
        /// an array a prefix: `{"argv": ["cargo", "test"]}`).
        #[arg(long, value_name = "JSON", value_parser = arguments)]
        arguments: Option<Map<String, Value>>,
    },
    /// Revoke a grant by its id.
    Revoke {
        /// The id `kyro grants list` shows.
        id: String,
    },
}

/// `30m`, `8h`, `2d` in milliseconds.
fn duration_ms(value: &str) -> Result<u64, String> {
    let refused = || format!("`{value}` is not a duration: write a number and m, h or d (`30m`, `8h`, `2d`)");
    let (number, unit) = value.split_at(value.len().saturating_sub(1));
    let number: u64 = number.parse().map_err(|_| refused())?;
    let ms = match unit {
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        "d" => number.checked_mul(86_400_000),
        _ => None,
    }
    .ok_or_else(refused)?;
    if ms == 0 || ms > LONGEST_MS {
        return Err(format!("`{value}`: a grant lasts from a minute to 30 days"));
    }
    Ok(ms)
}

fn arguments(value: &str) -> Result<Map<String, Value>, String> {
    match kyro_core::parse_strict(value) {
        Ok(Value::Object(map)) if !map.is_empty() => Ok(map),
        Ok(_) => Err("--arguments takes a non-empty JSON object".to_owned()),
        Err(e) => Err(format!("--arguments: {e}")),
    }
}

/// Why `kyro grants` did not do what it was asked.
pub(super) enum Refused {
    /// The command line asks for something that cannot be (exit 2).
    Usage(String),
    /// The store failed, or there is no such grant (exit 1).
    Failed(String),
}

/// The approval store of `workspace` (its database in the user's state directory), or of
/// the PostgreSQL state at `state`.
pub(super) fn store(workspace: Option<PathBuf>, state: Option<String>) -> Result<Box<dyn ApprovalStore>, Refused> {
    Ok(match state {
        Some(url) => Box::new(PgState::new(&url).map_err(|e| Refused::Usage(format!("--state: {e}")))?),
        None => {
            let root = workspace.unwrap_or_else(|| PathBuf::from("."));
            let root = root
                .canonicalize()
                .map_err(|e| Refused::Failed(format!("the workspace {}: {e}", root.display())))?;
            Box::new(SqliteApprovalStore::in_workspace(&root))
        }
    })
}

/// The store of a command that reads or changes what is kept, and never makes it. A
/// workspace whose database is not made yet holds nothing: an empty store stands in (no
/// grant to list or revoke, no call to approve, and nothing made). A folder kyro never
/// served (no database, no `.kyro/`) is refused, as the wrong place, exit 1 like any
/// place that does not hold what is asked for (2 is for the command line itself).
pub(super) fn existing_store(
    workspace: Option<PathBuf>,
    state: Option<String>,
) -> Result<Box<dyn ApprovalStore>, Refused> {
    if state.is_some() {
        return store(workspace, state);
    }
    let root = workspace.unwrap_or_else(|| PathBuf::from("."));
    let root = root
        .canonicalize()
        .map_err(|e| Refused::Failed(format!("the workspace {}: {e}", root.display())))?;
    let database = SqliteApprovalStore::database_of(&root).map_err(|e| Refused::Failed(format!("{e}")))?;
    if database.exists() {
        Ok(Box::new(SqliteApprovalStore::in_workspace(&root)))
    } else if root.join(".kyro").is_dir() {
        Ok(Box::new(MemoryApprovalStore::default()))
    } else {
        Err(Refused::Failed(no_state_here(&root)))
    }
}

/// What a command reading kyro's state says in a folder kyro never served.
pub(super) fn no_state_here(root: &std::path::Path) -> String {
    format!(
        "no kyro state here: `{}` does not exist (run in the workspace, or pass --workspace DIR or --state URL)",
        root.join(".kyro").display()
    )
}

/// Runs `kyro grants` in `workspace`; `registry` names the tools a grant may be for.
pub(super) fn run(
    command: Option<GrantsCommand>,
    workspace: Option<PathBuf>,
    state: Option<String>,
    registry: &Registry,
) -> Result<(), Refused> {
    // Only a grant given makes the store; a look or a revocation never does.
    let store = match &command {
        Some(GrantsCommand::Add { .. }) => store(workspace, state)?,
        _ => existing_store(workspace, state)?,
    };
    let command = command.unwrap_or(GrantsCommand::List {
        caller: None,
        json: false,
    });
    match command {
        GrantsCommand::List { caller, json } => {
            let caller = caller
                .as_deref()
                .map(Caller::named)
                .transpose()
                .map_err(Refused::Usage)?;
            let grants = store.grants(caller.as_ref(), now_ms()).map_err(Refused::Failed)?;
            if json {
                out!("{}", serde_json::to_string_pretty(&grants).unwrap_or_default());
            } else if grants.is_empty() {
                out!("no grants in force");
            }
            for grant in grants.iter().filter(|_| !json) {
                out!("{}", line(grant));
            }
            Ok(())
        }
        GrantsCommand::Add {
            tool,
            caller,
            lasting,
            arguments,
        } => {
            let caller = Caller::named(&caller).map_err(Refused::Usage)?;
            let snapshot = registry.snapshot();
            let found = snapshot
                .get(&tool)
                .ok_or_else(|| Refused::Usage(format!("no tool is named `{tool}` (see `kyro tools`)")))?;
            let grant = NewGrant {
                caller,
                tool: found.descriptor().name.clone(),
                arguments,
                expires_at_ms: now_ms() + lasting,
            };
            let grant = store.add_grant(grant).map_err(Refused::Failed)?;
            out!("granted: {}", line(&grant));
            Ok(())
        }
        GrantsCommand::Revoke { id } => match store.revoke_grant(&id).map_err(Refused::Failed)? {
            true => {
                out!("revoked grant {id}");
                Ok(())
            }
            false => Err(Refused::Failed(format!(
                "no grant has the id `{id}` (see `kyro grants list`)"
            ))),
        },
    }
}

/// `3  local  run_command {"argv":["cargo","test"]}  for 59 more minutes`
fn line(grant: &Grant) -> String {
    let left_min = grant.expires_at_ms.saturating_sub(now_ms()).div_ceil(60_000);
    let left = if left_min >= 120 {
        format!("{} more hours", left_min / 60)
    } else {
        format!("{left_min} more minutes")
    };
    let arguments = grant
        .arguments
        .as_ref()
        .map(|a| format!(" {}", Value::Object(a.clone())))
        .unwrap_or_default();
    format!("{}  {}  {}{arguments}  for {left}", grant.id, grant.caller, grant.tool)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_duration_is_minutes_hours_or_days_up_to_thirty_days() {
        assert_eq!(super::duration_ms("30m"), Ok(1_800_000));
        assert_eq!(super::duration_ms("8h"), Ok(28_800_000));
        assert_eq!(super::duration_ms("30d"), Ok(30 * 86_400_000));
        for value in ["", "h", "0m", "31d", "1w", "-1h", "1.5h", "99999999999999999999d"] {
            assert!(super::duration_ms(value).is_err(), "{value}");
        }
    }
}
