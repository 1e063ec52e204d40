//! `grep` over a directory: ripgrep's parallel walk, each file searched by the thread that
//! met it, the results put in path order afterwards.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ignore::WalkState;
use ignore::overrides::Override;
use kyro_core::{ConfinedPath, StopSignal, ToolError};

use super::search_file::{FileMatches, Search};
use super::walk::WalkOptions;

/// The most unreadable entries reported.
const MAX_UNREADABLE: usize = 100;

/// Searches every file below `start` that the walk keeps (`excluded` directories are not
/// entered), on ripgrep's parallel walker. Returns the files searched with their matches in
/// path order, whether the search stopped early because the matches kept passed twice the
/// output budget (then which files were searched depends on the threads' pace; the result
/// says it is truncated), and the entries that could not be read, skipped.
pub(super) fn search_tree(
    start: &ConfinedPath,
    options: &WalkOptions,
    excluded: Option<Override>,
    search: &Search<'_>,
    stop: &StopSignal,
) -> Result<(Vec<FileMatches>, bool, Vec<String>), ToolError> {
    let host = start.host_path();
    let mut builder = super::walk::walker(&host, options);
    if let Some(excluded) = excluded {
        builder.overrides(excluded);
    }
    let found = Mutex::new(Vec::new());
    let unreadable = Mutex::new(Vec::new());
    let kept = AtomicUsize::new(0);
    let (over, stopped) = (AtomicBool::new(false), AtomicBool::new(false));
    let failure: Mutex<Option<ToolError>> = Mutex::new(None);
    let skip = |what: String| {
        let mut list = unreadable.lock().unwrap_or_else(|p| p.into_inner());
        if list.len() < MAX_UNREADABLE {
            list.push(what);
        }
    };
    builder.build_parallel().run(|| {
        let mut searcher = search.searcher();
        let (found, kept, over, stopped, failure, skip, host) =
            (&found, &kept, &over, &stopped, &failure, &skip, &host);
        Box::new(move |entry| {
            if stop.check().is_err() {
                stopped.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    skip(e.to_string());
                    return WalkState::Continue;
                }
            };
            if let Some(e) = entry.error() {
                // Its ignore rules could not be read: searched without them, and said.
                skip(e.to_string());
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(relative) = entry.path().strip_prefix(host) else {
                return WalkState::Continue;
            };
            let file = start.join(relative);
            match search.file(&mut searcher, &file) {
                Ok(Some(matches)) => {
                    let cost: usize = matches.matches.iter().map(|m| m.cost()).sum();
                    let total = kept.fetch_add(cost, Ordering::Relaxed) + cost;
                    found.lock().unwrap_or_else(|p| p.into_inner()).push(matches);
                    if total > search.budget() * 2 {
                        over.store(true, Ordering::Relaxed);
                        return WalkState::Quit;
                    }
                }
                Ok(None) => {}
                Err(ToolError::Stopped {}) => {
                    stopped.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                // A file that cannot be opened or read (gone, unreadable) is reported and
                // skipped; a refusal of the confinement ends the search.
                Err(ToolError::Io { path, message, .. }) => skip(format!("{path}: {message}")),
                Err(other) => {
                    *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(other);
                    return WalkState::Quit;
                }
            }
            WalkState::Continue
        })
    });
    if stopped.load(Ordering::Relaxed) {
        return Err(ToolError::Stopped {});
    }
    if let Some(failure) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(failure);
    }
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    // Component by component, as a walk sorted by file name meets them.
    found.sort_by(|a, b| Path::new(&a.relative).cmp(Path::new(&b.relative)));
    let unreadable = unreadable.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((found, over.load(Ordering::Relaxed), unreadable))
}
