//! `grep`: search file contents with ripgrep's own crates.

use crate::Failure;
use grep_regex::RegexMatcherBuilder;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::search_file::{LineMatch, Search};
use super::walk::WalkOptions;

const DEFAULT_MAX_RESULTS: u32 = 200;

/// Search file contents like ripgrep: matching lines with path, line number and context.
/// Skips ignored, hidden and binary files by default.
#[tool(name = "grep", title = "Search file contents", category = "files", effect = "read", aliases = ["search_text"], task = "optional")]
pub struct Grep {
    /// Regex (Rust syntax), or text with `fixed_strings`.
    #[schemars(length(min = 1, max = 4096))]
    pub pattern: String,
    /// Workspace-relative file or directory; default the root.
    pub path: Option<WorkspacePath>,
    /// The pattern is literal text.
    #[serde(default)]
    pub fixed_strings: bool,
    /// `sensitive` (default), `insensitive` or `smart` (insensitive unless the pattern has
    /// uppercase).
    #[serde(default)]
    pub case: Case,
    /// Context lines per match; default 0.
    #[schemars(range(max = 20))]
    pub context: Option<u32>,
    /// Only files matching one of these globs (`*.rs`, `src/**`).
    #[serde(default)]
    pub include: Vec<String>,
    /// Skip files matching these globs.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Include names starting with `.`.
    #[serde(default)]
    pub include_hidden: bool,
    /// Skip what .gitignore and .ignore exclude.
    #[serde(default = "super::yes")]
    pub respect_gitignore: bool,
    /// Most lines; default 200.
    #[schemars(range(min = 1, max = 5000))]
    pub max_results: Option<u32>,
}

/// Letter-case matching.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    /// Exact case.
    #[default]
    Sensitive,
    /// Any case.
    Insensitive,
    /// Insensitive unless the pattern has an uppercase letter.
    Smart,
}

/// Matching lines.
#[kyro_core::output]
#[derive(Debug)]
pub struct GrepMatches {
    /// Matches in path order, then line order.
    pub matches: Vec<LineMatch>,
    /// Files searched.
    pub files_searched: u64,
    /// True when more lines matched than were returned.
    pub truncated: bool,
    /// Entries that could not be read (`path: why`), skipped; at most 100.
    pub unreadable: Vec<String>,
}

/// The `exclude` globs as ignore overrides rooted at the workspace root, so that an
/// excluded directory is never entered (a bare pattern matches at any depth, as in
/// ripgrep's `--glob '!PATTERN'`).
fn excludes(root: &std::path::Path, patterns: &[String]) -> Result<Option<ignore::overrides::Override>, ToolError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for pattern in patterns {
        builder
            .add(&format!("!{pattern}"))
            .map_err(|e| Failure::InvalidPattern {
                pattern: pattern.clone(),
                message: e.to_string(),
            })?;
    }
    builder.build().map(Some).map_err(|e| {
        Failure::InvalidPattern {
            pattern: patterns.join(", "),
            message: e.to_string(),
        }
        .into()
    })
}

fn globs(patterns: &[String]) -> Result<Option<globset::GlobSet>, ToolError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = globset::GlobSetBuilder::new();
    for pattern in patterns {
        // A bare pattern (`*.rs`) matches at any depth, as in ripgrep's --glob.
        let full = if pattern.contains('/') {
            pattern.clone()
        } else {
            format!("**/{pattern}")
        };
        set.add(globset::Glob::new(&full).map_err(|e| Failure::InvalidPattern {
            pattern: pattern.clone(),
            message: e.to_string(),
        })?);
    }
    set.build().map(Some).map_err(|e| {
        Failure::InvalidPattern {
            pattern: patterns.join(", "),
            message: e.to_string(),
        }
        .into()
    })
}

impl Execute for Grep {
    type Output = GrepMatches;

    /// `path:line: text` per match, context lines as `path-line- text`, as grep prints.
    fn text(m: &GrepMatches) -> Option<String> {
        let mut out = String::new();
        for found in &m.matches {
            let before = found.line_number.saturating_sub(found.before.len() as u64);
            for (i, line) in found.before.iter().enumerate() {
                out.push_str(&format!("{}-{}- {line}\n", found.path, before + i as u64));
            }
            out.push_str(&format!("{}:{}: {}\n", found.path, found.line_number, found.line));
            for (i, line) in found.after.iter().enumerate() {
                out.push_str(&format!(
                    "{}-{}- {line}\n",
                    found.path,
                    found.line_number + 1 + i as u64
                ));
            }
        }
        out.push_str(&format!(
            "({} matching lines in {} files searched{})",
            m.matches.len(),
            m.files_searched,
            if m.truncated { "; more not shown" } else { "" }
        ));
        Some(out)
    }

    async fn run(self, cx: &ToolContext) -> Result<GrepMatches, ToolError> {
        let mut builder = RegexMatcherBuilder::new();
        builder.fixed_strings(self.fixed_strings);
        match self.case {
            Case::Sensitive => {}
            Case::Insensitive => {
                builder.case_insensitive(true);
            }
            Case::Smart => {
                builder.case_smart(true);
            }
        }
        let matcher = builder.build(&self.pattern).map_err(|e| Failure::InvalidPattern {
            pattern: self.pattern.clone(),
            message: e.to_string(),
        })?;
        let include = globs(&self.include)?;
        let exclude = globs(&self.exclude)?;
        let context = self.context.unwrap_or(0) as usize;
        let start = cx.path(&self.path.unwrap_or_else(|| WorkspacePath::new(".")))?;
        let limit = self.max_results.unwrap_or(DEFAULT_MAX_RESULTS) as usize;
        // Three quarters of the output limit for the lines, the rest for JSON escapes.
        let budget = (cx.output_limit() / 4 * 3) as usize;
        let search = Search {
            matcher: &matcher,
            context,
            include: include.as_ref(),
            exclude: exclude.as_ref(),
            limit,
            budget,
        };
        let (found, mut truncated, unreadable) = match start.entry_type()? {
            Some(EntryType::Directory) => {
                let options = WalkOptions {
                    include_hidden: self.include_hidden,
                    respect_gitignore: self.respect_gitignore,
                    max_depth: None,
                };
                let root = cx.path(&WorkspacePath::new("."))?.host_path();
                let excluded = excludes(&root, &self.exclude)?;
                super::search_tree::search_tree(&start, &options, excluded, &search, cx.stop())?
            }
            Some(EntryType::File) => (
                search.file(&mut search.searcher(), &start)?.into_iter().collect(),
                false,
                Vec::new(),
            ),
            Some(_) => {
                return Err(ToolError::NotAFile {
                    path: start.given().to_owned(),
                });
            }
            None => {
                return Err(ToolError::NotFound {
                    path: start.given().to_owned(),
                });
            }
        };
        let searched = found.len() as u64;
        let mut matches = Vec::new();
        let mut bytes_left = budget;
        'files: for file in found {
            truncated |= file.over;
            for m in file.matches {
                let cost = m.cost();
                if matches.len() >= limit || cost > bytes_left {
                    truncated = true;
                    break 'files;
                }
                bytes_left -= cost;
                matches.push(m);
            }
        }
        Ok(GrepMatches {
            matches,
            files_searched: searched,
            truncated,
            unreadable,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    fn setup() -> tempfile::TempDir {
        let ws = workspace();
        for (path, body) in [
            ("src/a.rs", "fn main() {\r\n    let x = 1; // TODO fix|me\r\n}\r\n"),
            ("src/b.txt", "todo: café 😀\nnothing\n"),
            ("target/gen.rs", "TODO generated\n"),
            (".gitignore", "target/\n"),
            ("bin.dat", "TODO\0binary"),
        ] {
            let p = ws.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        ws
    }

    /// An entry the walk cannot read (here a directory whose .gitignore does not parse) is
    /// reported and skipped, the rest still searched; an excluded directory is never
    /// entered, so its fault never shows.
    #[test]
    fn an_unreadable_entry_is_reported_and_an_excluded_directory_never_entered() {
        let ws = setup();
        std::fs::create_dir_all(ws.path().join("vendor")).unwrap();
        std::fs::create_dir_all(ws.path().join("vendor")).unwrap();
        std::fs::write(ws.path().join("vendor/.gitignore"), "{a\n").unwrap();
        std::fs::write(ws.path().join("vendor/v.rs"), "TODO vendored\n").unwrap();
        let r = ok(call(ws.path(), "grep", json!({"pattern": "TODO"})));
        let unreadable = r["unreadable"].as_array().unwrap();
        assert_eq!(unreadable.len(), 1, "{r}");
        assert!(unreadable[0].as_str().unwrap().contains("vendor"), "{r}");
        assert_eq!(
            lines(&r),
            [
                "src/a.rs:2:    let x = 1; // TODO fix|me",
                "vendor/v.rs:1:TODO vendored"
            ]
        );
        let r = ok(call(
            ws.path(),
            "grep",
            json!({"pattern": "TODO", "exclude": ["vendor"]}),
        ));
        assert_eq!(r["unreadable"], json!([]), "{r}");
        assert_eq!(lines(&r), ["src/a.rs:2:    let x = 1; // TODO fix|me"]);
    }

    /// Many files searched on several threads still come back in path order, component by
    /// component (`d/x` before `d-x`), as one sorted walk gives them.
    #[test]
    fn matches_come_in_path_order_whatever_thread_found_them() {
        let ws = workspace();
        let mut expected = Vec::new();
        for d in ["d", "d-x", "d.y", "e"] {
            for f in 0..30 {
                let path = format!("{d}/f{f:02}.txt");
                let p = ws.path().join(&path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, "hit\n").unwrap();
                expected.push(format!("{path}:1:hit"));
            }
        }
        let r = ok(call(ws.path(), "grep", json!({"pattern": "hit", "max_results": 5000})));
        assert_eq!(lines(&r), expected);
        assert_eq!(r["files_searched"], 120);
    }

    fn lines(result: &serde_json::Value) -> Vec<String> {
        result["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{}:{}:{}",
                    m["path"].as_str().unwrap(),
                    m["line_number"],
                    m["line"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn finds_lines_skipping_ignored_and_binary_files() {
        let ws = setup();
        let r = ok(call(ws.path(), "grep", json!({"pattern": "TODO"})));
        assert_eq!(lines(&r), ["src/a.rs:2:    let x = 1; // TODO fix|me"]);
        let r = ok(call(
            ws.path(),
            "grep",
            json!({"pattern": "todo", "case": "insensitive"}),
        ));
        assert_eq!(lines(&r).len(), 2);
        let r = ok(call(
            ws.path(),
            "grep",
            json!({"pattern": "café 😀", "fixed_strings": true}),
        ));
        assert_eq!(lines(&r), ["src/b.txt:1:todo: café 😀"]);
        let r = ok(call(
            ws.path(),
            "grep",
            json!({"pattern": "TODO", "respect_gitignore": false}),
        ));
        assert_eq!(lines(&r).len(), 2, "target/ searched, the binary file still skipped");
    }

    #[test]
    fn matches_stop_at_the_output_limit_instead_of_failing_the_call() {
        let ws = workspace();
        // 5,000 matching lines of 1,900 bytes: 9.5 MB of lines, over the 4 MiB limit.
        let line = format!("needle {}\n", "x".repeat(1892));
        std::fs::write(ws.path().join("big.txt"), line.repeat(5000)).unwrap();
        let r = ok(call(
            ws.path(),
            "grep",
            json!({"pattern": "needle", "max_results": 5000}),
        ));
        let found = r["matches"].as_array().unwrap().len();
        assert!(found > 1000 && found < 5000, "{found}");
        assert_eq!(r["truncated"], true);
    }

    #[test]
    fn context_include_exclude_and_limits() {
        let ws = setup();
        let r = ok(call(ws.path(), "grep", json!({"pattern": "let x", "context": 1})));
        assert_eq!(r["matches"][0]["before"], json!(["fn main() {"]));
        assert_eq!(r["matches"][0]["after"], json!(["}"]));
        let r = ok(call(ws.path(), "grep", json!({"pattern": "o", "include": ["*.txt"]})));
        assert!(lines(&r).iter().all(|l| l.starts_with("src/b.txt")));
        let r = ok(call(ws.path(), "grep", json!({"pattern": "o", "exclude": ["*.txt"]})));
        assert!(lines(&r).iter().all(|l| l.starts_with("src/a.rs")));
        let r = ok(call(ws.path(), "grep", json!({"pattern": "o", "max_results": 1})));
        assert_eq!(lines(&r).len(), 1);
        assert_eq!(r["truncated"], true);
        let r = ok(call(
            ws.path(),
            "grep",
            json!({"pattern": "nothing", "path": "src/b.txt"}),
        ));
        assert_eq!(r["files_searched"], 1);
    }

    #[test]
    fn a_very_long_line_is_cut_and_marked() {
        let ws = workspace();
        std::fs::write(ws.path().join("long"), format!("{}needle", "é".repeat(5000))).unwrap();
        let r = ok(call(ws.path(), "grep", json!({"pattern": "needle"})));
        assert!(
            r["matches"][0]["line"]
                .as_str()
                .unwrap()
                .ends_with("[line cut at 2000 bytes]")
        );
    }

    #[test]
    fn a_bad_regex_is_a_typed_failure() {
        let ws = setup();
        assert!(matches!(
            Failure::of(&failed(call(ws.path(), "grep", json!({"pattern": "("})))),
            Some(Failure::InvalidPattern { .. })
        ));
        assert!(matches!(
            Failure::of(&failed(call(
                ws.path(),
                "grep",
                json!({"pattern": "x", "include": ["a[b"]})
            ))),
            Some(Failure::InvalidPattern { .. })
        ));
    }
}
