//! `glob`: find paths by pattern.

use crate::Failure;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::walk::{WalkOptions, walk};

const DEFAULT_LIMIT: u32 = 1000;

/// Find files whose path under `path` matches a glob (`**/*.rs`, `*.{md,txt}`), newest first.
/// Respects .gitignore and skips hidden entries by default.
#[tool(name = "glob", title = "Find files by pattern", category = "files", effect = "read", aliases = ["find_files"])]
pub struct Glob {
    /// The glob.
    #[schemars(length(min = 1, max = 1024))]
    pub pattern: String,
    /// Workspace-relative directory; default the root.
    pub path: Option<WorkspacePath>,
    /// Include names starting with `.`.
    #[serde(default)]
    pub include_hidden: bool,
    /// Skip what .gitignore and .ignore exclude.
    #[serde(default = "super::yes")]
    pub respect_gitignore: bool,
    /// Match directories too.
    #[serde(default)]
    pub include_directories: bool,
    /// Most paths; default 1000.
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<u32>,
}

/// Matching paths.
#[kyro_core::output]
#[derive(Debug)]
pub struct GlobMatches {
    /// Paths relative to the workspace root, newest first.
    pub paths: Vec<String>,
    /// True when more paths matched than were returned.
    pub truncated: bool,
}

impl Execute for Glob {
    type Output = GlobMatches;

    /// One path a line.
    fn text(g: &GlobMatches) -> Option<String> {
        let mut out = g.paths.join("\n");
        if g.paths.is_empty() {
            out.push_str("(no match)");
        }
        if g.truncated {
            out.push_str("\n(more paths not shown)");
        }
        Some(out)
    }

    async fn run(self, cx: &ToolContext) -> Result<GlobMatches, ToolError> {
        let matcher = globset::GlobBuilder::new(&self.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| Failure::InvalidPattern {
                pattern: self.pattern.clone(),
                message: e.to_string(),
            })?
            .compile_matcher();
        let root = cx.path(&self.path.unwrap_or_else(|| WorkspacePath::new(".")))?;
        if root.entry_type()? != Some(EntryType::Directory) {
            return Err(ToolError::NotADirectory {
                path: root.given().to_owned(),
            });
        }
        let options = WalkOptions {
            include_hidden: self.include_hidden,
            respect_gitignore: self.respect_gitignore,
            max_depth: None,
        };
        let base = root.relative().to_owned();
        let mut found: Vec<(Option<i64>, String)> = walk(&root, &options, cx.stop())?
            .into_iter()
            .filter(|w| w.kind == EntryType::File || (self.include_directories && w.kind == EntryType::Directory))
            .filter(|w| {
                w.path
                    .relative()
                    .strip_prefix(&base)
                    .is_ok_and(|rel| matcher.is_match(rel))
            })
            .map(|w| (w.path.info(false).ok().and_then(|i| i.modified), w.path.display()))
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT) as usize;
        let truncated = found.len() > limit;
        Ok(GlobMatches {
            paths: found.into_iter().take(limit).map(|(_, p)| p).collect(),
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn matches_paths_honouring_gitignore_and_hidden_files() {
        let ws = workspace();
        for (path, body) in [
            ("src/lib.rs", ""),
            ("src/a|b é.rs", ""),
            ("src/inner/mod.rs", ""),
            ("README.md", ""),
            ("target/out.rs", ""),
            (".hidden/h.rs", ""),
            (".gitignore", "target/\n"),
        ] {
            let p = ws.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let mut paths: Vec<String> =
            serde_json::from_value(ok(call(ws.path(), "glob", json!({"pattern": "**/*.rs"})))["paths"].clone())
                .unwrap();
        paths.sort();
        assert_eq!(paths, ["src/a|b é.rs", "src/inner/mod.rs", "src/lib.rs"]);
        let top: Vec<String> = serde_json::from_value(
            ok(call(ws.path(), "glob", json!({"pattern": "*.rs", "path": "src"})))["paths"].clone(),
        )
        .unwrap();
        assert_eq!(top.len(), 2, "{top:?}");
        let everything = ok(call(
            ws.path(),
            "glob",
            json!({"pattern": "**/*.rs", "include_hidden": true, "respect_gitignore": false}),
        ));
        assert_eq!(everything["paths"].as_array().unwrap().len(), 5);
        let limited = ok(call(ws.path(), "glob", json!({"pattern": "**/*.rs", "limit": 1})));
        assert_eq!(limited["truncated"], true);
    }

    #[test]
    fn a_bad_pattern_is_a_typed_failure() {
        let ws = workspace();
        assert!(matches!(
            Failure::of(&failed(call(ws.path(), "glob", json!({"pattern": "a[b"})))),
            Some(Failure::InvalidPattern { .. })
        ));
    }
}
