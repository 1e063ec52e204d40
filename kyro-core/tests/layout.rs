//! The shape of kyro-core, held by a test: no module depends on itself through others (a
//! parent re-exporting its children is not a dependency back), and no source file passes
//! 600 lines. Dependencies are read from the source: `crate::` and `super::` paths outside
//! `#[cfg(test)] mod tests`, with the crate root's re-exports resolved to their modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const MAX_LINES: usize = 600;

/// Every source file of kyro-core: its path relative to `src/` and its text.
fn sources() -> Vec<(std::path::PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path.strip_prefix(&src).unwrap().to_path_buf(), text));
            }
        }
    }
    files
}

/// Module name (`policy::scope`) -> source text without its test module.
fn modules() -> BTreeMap<String, String> {
    sources()
        .into_iter()
        .map(|(relative, text)| {
            let name = relative.with_extension("").to_string_lossy().replace('/', "::");
            let name = name.strip_suffix("::mod").unwrap_or(&name).to_owned();
            let text = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => text[..at].to_owned(),
                None => text,
            };
            (name, text)
        })
        .collect()
}

fn identifiers_after<'a>(text: &'a str, prefix: &'a str) -> impl Iterator<Item = Vec<&'a str>> + 'a {
    text.match_indices(prefix).filter_map(move |(at, _)| {
        let before = text[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let rest = &text[at + prefix.len()..];
        let path: Vec<&str> = rest
            .split("::")
            .map(|segment| {
                let end = segment
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(segment.len());
                &segment[..end]
            })
            .take_while(|segment| !segment.is_empty())
            .collect();
        (!path.is_empty()).then_some(path)
    })
}

/// The crate root's `pub use module::{A, B}` re-exports: item -> module.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("pub use ")) {
        let line = line.trim_end_matches(';');
        let Some((module, items)) = line.split_once("::") else {
            continue;
        };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            map.insert(item.to_owned(), module.to_owned());
        }
    }
    map
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let reexported = reexports(&modules["lib"]);
    let mut graph = BTreeMap::new();
    for (name, text) in modules.iter().filter(|(n, _)| n.as_str() != "lib") {
        let resolve = |path: &[&str]| -> Option<String> {
            let first = reexported.get(path[0]).map(String::as_str).unwrap_or(path[0]);
            let nested = path.get(1).map(|second| format!("{first}::{second}"));
            match nested {
                Some(nested) if modules.contains_key(&nested) => Some(nested),
                _ => modules.contains_key(first).then(|| first.to_owned()),
            }
        };
        let mut deps = BTreeSet::new();
        deps.extend(identifiers_after(text, "crate::").filter_map(|p| resolve(&p)));
        if let Some((parent, _)) = name.rsplit_once("::") {
            for path in identifiers_after(text, "super::") {
                let child = format!("{parent}::{}", path[0]);
                deps.insert(if modules.contains_key(&child) {
                    child
                } else {
                    parent.to_owned()
                });
            }
        }
        deps.remove(name);
        deps.remove("__private");
        graph.insert(name.clone(), deps);
    }
    graph
}

#[test]
fn no_module_reaches_itself_through_others() {
    let graph = graph();
    for start in graph.keys() {
        // Depth-first from each module's dependencies, looking for the way back.
        let mut stack: Vec<Vec<&str>> = graph[start].iter().map(|d| vec![start.as_str(), d.as_str()]).collect();
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap();
            if last == start {
                panic!("module cycle: {}", path.join(" -> "));
            }
            if !seen.insert(last) {
                continue;
            }
            for next in graph.get(last).into_iter().flatten() {
                let mut longer = path.clone();
                longer.push(next);
                stack.push(longer);
            }
        }
    }
    assert!(graph.len() > 15, "the modules were read: {:?}", graph.keys());
}

#[test]
fn no_source_file_passes_600_lines() {
    for (path, text) in sources() {
        let lines = text.lines().count();
        assert!(lines <= MAX_LINES, "src/{} has {lines} lines", path.display());
    }
}
