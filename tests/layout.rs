//! The shape of the whole house, held by a test: across kyro-core, kyro-tools, kyro and
//! kyro-macros, no module depends on itself through others, and no source file passes 600
//! lines (inline test modules count).
//!
//! Dependencies are read with `syn` from every `use` and every path in the code (outside
//! `#[cfg(test)]` items): `crate::`, `super::`, `self::` and a child module's name, grouped
//! and multi-line `use` trees included. A path names the module it reaches, modules first
//! (so `crate::tool::Hints` is the module `tool`, whatever the crate root re-exports under
//! the name `tool`); an item a module re-exports is followed to the module that defines it.
//! Parent and child are modules like any others: a parent that uses its child, and a child
//! that uses its parent's own items, make a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::visit::Visit;

const MAX_LINES: usize = 600;

/// A crate's modules: module path (`policy::scope`, `` for the root) -> its source.
type Sources = BTreeMap<String, String>;

/// The `src/` of every crate in the workspace, read from disk.
fn workspace() -> Vec<(&'static str, Sources)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["kyro-core/src", "tools/src", "src", "kyro-macros/src"]
        .into_iter()
        .map(|dir| (dir, read_crate(&root.join(dir))))
        .collect()
}

fn read_crate(src: &Path) -> Sources {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
        .into_iter()
        .map(|path| {
            (
                module_of(path.strip_prefix(src).unwrap()),
                std::fs::read_to_string(&path).unwrap(),
            )
        })
        .collect()
}

/// `policy/scope.rs` -> `policy::scope`; `policy/mod.rs` -> `policy`; `lib.rs` -> ``.
fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts.join("::")
}

fn join(parts: &[String]) -> String {
    parts.join("::")
}

fn split(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_owned).collect()
    }
}

/// Every path a file names (use trees expanded), outside `#[cfg(test)]` items.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
    /// `pub use` re-exports: the name given -> the path it stands for.
    reexports: BTreeMap<String, Vec<String>>,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string() == "test"))
}

fn expand(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            expand(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            if n.ident != "self" {
                path.push(n.ident.to_string());
            }
            out.push((path, Some(n.ident.to_string())));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                expand(item, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut expanded = Vec::new();
        expand(&item.tree, &mut Vec::new(), &mut expanded);
        let public = !matches!(item.vis, syn::Visibility::Inherited);
        for (path, name) in expanded {
            // A re-export is an alias, followed where a path names it, not a dependency
            // of the module making it (a facade over its children).
            match (public, name) {
                (true, Some(name)) => {
                    self.reexports.insert(name, path);
                }
                (true, None) => {}
                (false, _) => self.found.push(path),
            }
        }
    }

    /// `pub(crate)`, `pub(super)`, `pub(in path)` name who may see an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.found
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Paths inside macro bodies (`format!`, `json!`) are tokens: read `crate::a::b`
        // sequences from them too.
        let tokens: Vec<String> = mac.tokens.to_string().split_whitespace().map(str::to_owned).collect();
        for (at, token) in tokens.iter().enumerate() {
            if matches!(token.as_str(), "crate" | "super") && tokens.get(at + 1).is_some_and(|t| t == "::") {
                let mut path = vec![token.clone()];
                let mut next = at + 2;
                while let Some(segment) = tokens.get(next) {
                    if !segment.chars().all(|c| c.is_alphanumeric() || c == '_') {
                        break;
                    }
                    path.push(segment.clone());
                    if tokens.get(next + 1).is_some_and(|t| t == "::") {
                        next += 2;
                    } else {
                        break;
                    }
                }
                self.found.push(path);
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// The module -> modules it depends on, of one crate.
fn dependencies(sources: &Sources) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let parsed: BTreeMap<String, Paths> = sources
        .iter()
        .map(|(module, text)| {
            let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{module}: {e}"));
            let mut paths = Paths::default();
            paths.visit_file(&file);
            (module.clone(), paths)
        })
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, paths) in &parsed {
        let here = split(module);
        for path in &paths.found {
            let Some(absolute) = absolute(&here, path, &modules) else {
                continue;
            };
            if let Some(target) = resolve(&absolute, &modules, &parsed, 0)
                && target != *module
            {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

/// `path` as written in module `here`, made absolute (segments from the crate root); `None`
/// for paths into other crates, locals and prelude names.
fn absolute(here: &[String], path: &[String], modules: &BTreeSet<String>) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => {
            let mut base = here.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        // A child module's name, as uniform paths read it (a lone name is a local).
        child if path.len() > 1 => {
            let mut candidate = here.to_vec();
            candidate.push(child.to_owned());
            if !modules.contains(&join(&candidate)) {
                return None;
            }
            here.to_vec()
        }
        _ => return None,
    };
    let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
    base.extend(path[skip..].iter().cloned());
    Some(base)
}

/// The module an absolute path reaches: its longest prefix that is a module, then, when
/// the next segment is an item that module re-exports, the module that item comes from.
fn resolve(
    absolute: &[String],
    modules: &BTreeSet<String>,
    parsed: &BTreeMap<String, Paths>,
    depth: usize,
) -> Option<String> {
    let mut length = absolute.len();
    while length > 0 && !modules.contains(&join(&absolute[..length])) {
        length -= 1;
    }
    let module = join(&absolute[..length]);
    if depth < 8
        && let Some(item) = absolute.get(length)
        && let Some(target) = parsed.get(&module).and_then(|p| p.reexports.get(item))
    {
        let from = split(&module);
        if let Some(target) = absolute_of_reexport(&from, target, modules)
            && let Some(found) = resolve(&target, modules, parsed, depth + 1)
        {
            return Some(found);
        }
    }
    Some(module)
}

fn absolute_of_reexport(from: &[String], target: &[String], modules: &BTreeSet<String>) -> Option<Vec<String>> {
    absolute(from, target, modules)
}

/// Every circle of `edges`, each as the modules on it (one per strongly connected set).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components.
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        for target in state.edges.get(node).into_iter().flatten() {
            let target = target.as_str();
            if !state.index.contains_key(target) {
                visit(state, target);
                let low = state.low[target].min(state.low[node]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(target) {
                let low = state.index[target].min(state.low[node]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top.to_owned());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found
}

/// What is wrong with one crate's layout: its circles and its long files.
fn problems(name: &str, sources: &Sources) -> Vec<String> {
    let mut found: Vec<String> = circles(&dependencies(sources))
        .into_iter()
        .map(|circle| {
            let named: Vec<&str> = circle.iter().map(|m| if m.is_empty() { "(root)" } else { m }).collect();
            format!("{name}: an import circle through {}", named.join(", "))
        })
        .collect();
    for (module, text) in sources {
        let lines = text.lines().count();
        if lines > MAX_LINES {
            let module = if module.is_empty() { "the crate root" } else { module };
            found.push(format!("{name}: {module} is over {MAX_LINES} lines"));
        }
    }
    found
}

/// The whole house: every crate's sources, no exceptions.
#[test]
fn no_import_circle_and_no_file_over_600_lines() {
    let found: BTreeSet<String> = workspace()
        .iter()
        .flat_map(|(name, sources)| problems(name, sources))
        .collect();
    assert!(found.is_empty(), "layout problems:\n{found:#?}");
}

#[test]
fn a_planted_circle_and_a_long_file_are_found() {
    let sources: Sources = [
        ("", "pub mod a;\npub mod b;\npub mod c;\npub use c::Thing;\n".to_owned()),
        // a -> b through a grouped, multi-line use; b -> a through the root's re-export of
        // c? No: b -> c directly, c -> a through `super`.
        ("a", "use crate::{\n    b::{One, Two},\n};\n".to_owned()),
        (
            "b",
            "pub struct One;\npub struct Two;\nfn f() -> crate::Thing { todo!() }\n".to_owned(),
        ),
        (
            "c",
            "pub struct Thing;\nfn g() { let _ = super::a::helper; }\n".to_owned(),
        ),
        ("long", "// line\n".repeat(MAX_LINES + 1)),
    ]
    .into_iter()
    .map(|(m, t)| (m.to_owned(), t))
    .collect();
    let found = problems("planted", &sources);
    assert_eq!(
        found,
        [
            "planted: an import circle through a, b, c".to_owned(),
            format!("planted: long is over {MAX_LINES} lines"),
        ],
        "b reaches c through the root's re-export, c reaches a through super"
    );
    // A parent that uses its child, and a child that uses the parent's own item.
    let family: Sources = [
        (
            "",
            "mod child;\nfn f() { child::run(); }\npub struct Shared;\n".to_owned(),
        ),
        ("child", "pub fn run() {}\nfn g(_: super::Shared) {}\n".to_owned()),
    ]
    .into_iter()
    .map(|(m, t)| (m.to_owned(), t))
    .collect();
    assert_eq!(
        problems("family", &family),
        ["family: an import circle through (root), child".to_owned()]
    );
    // Tests do not count: a circle only a test module makes is none.
    let tested: Sources = [
        ("", "mod a;\nmod b;\n".to_owned()),
        ("a", "pub fn x() { crate::b::y(); }\n".to_owned()),
        (
            "b",
            "pub fn y() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::x;\n}\n".to_owned(),
        ),
    ]
    .into_iter()
    .map(|(m, t)| (m.to_owned(), t))
    .collect();
    assert!(problems("tested", &tested).is_empty());
}
