//! Walking a confined directory the way ripgrep does (`ignore`): .gitignore and hidden-file
//! rules, symlinks never followed, entries reported relative to the workspace root.

use kyro_core::{ConfinedPath, EntryType, StopSignal, ToolError};

/// How to walk.
pub(crate) struct WalkOptions {
    pub include_hidden: bool,
    pub respect_gitignore: bool,
    pub max_depth: Option<usize>,
}

/// One entry met on a walk.
pub(crate) struct Walked {
    /// The entry, confined beneath the same root as the start.
    pub path: ConfinedPath,
    /// Depth below the start (1 for its children).
    pub depth: usize,
    /// What it is, symlinks not followed.
    pub kind: EntryType,
}

/// A walk of `host` as `options` say, symlinks never followed (ripgrep's rules).
pub(crate) fn walker(host: &std::path::Path, options: &WalkOptions) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(host);
    builder
        .follow_links(false)
        .hidden(!options.include_hidden)
        .git_ignore(options.respect_gitignore)
        .git_global(false)
        .git_exclude(options.respect_gitignore)
        .ignore(options.respect_gitignore)
        .parents(options.respect_gitignore)
        .require_git(false)
        .max_depth(options.max_depth);
    builder
}

/// Every entry below `start` (not `start` itself), in sorted order; ends with
/// [`ToolError::Stopped`] as soon as `stop` is set.
pub(crate) fn walk(start: &ConfinedPath, options: &WalkOptions, stop: &StopSignal) -> Result<Vec<Walked>, ToolError> {
    let host = start.host_path();
    let mut builder = walker(&host, options);
    builder.sort_by_file_name(|a, b| a.cmp(b));
    let mut out = Vec::new();
    for entry in builder.build() {
        stop.check()?;
        let entry = entry.map_err(|e| ToolError::Io {
            operation: "walk".into(),
            path: start.given().to_owned(),
            message: e.to_string(),
        })?;
        if entry.depth() == 0 {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&host) else {
            continue;
        };
        let kind = match entry.file_type() {
            Some(t) if t.is_symlink() => EntryType::Symlink,
            Some(t) if t.is_dir() => EntryType::Directory,
            Some(t) if t.is_file() => EntryType::File,
            _ => EntryType::Other,
        };
        out.push(Walked {
            path: start.join(relative),
            depth: entry.depth(),
            kind,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kyro_core::policy::Access;
    use kyro_core::{Policy, Registry, Runtime, Workspace};
    use std::sync::Arc;

    #[test]
    fn a_walk_ends_as_soon_as_it_is_told_to_stop() {
        let ws = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(ws.path().join(format!("{i}.txt")), "x").unwrap();
        }
        let registry = Arc::new(Registry::with_catalog(&[]).unwrap());
        let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &Policy::default()).unwrap();
        let start = runtime.scope().confine(".", Access::Read).unwrap();
        let options = WalkOptions {
            include_hidden: false,
            respect_gitignore: true,
            max_depth: None,
        };
        let running = StopSignal::default();
        assert_eq!(walk(&start, &options, &running).unwrap().len(), 20);
        running.stop();
        assert!(matches!(walk(&start, &options, &running), Err(ToolError::Stopped {})));
    }
}
