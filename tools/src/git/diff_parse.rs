//! Unified diffs as `git diff` prints them, parsed per file and per hunk.

use schemars::JsonSchema;
use serde::Serialize;

/// The changes to one file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileDiff {
    /// Path before (absent for an added file).
    pub old_path: Option<String>,
    /// Path after (absent for a deleted file).
    pub new_path: Option<String>,
    /// True for a binary file (no hunks).
    pub binary: bool,
    /// The hunks.
    pub hunks: Vec<Hunk>,
}

/// One hunk.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hunk {
    /// The `@@ -a,b +c,d @@` line.
    pub header: String,
    /// First old line, 1-based.
    pub old_start: u64,
    /// Old line count.
    pub old_lines: u64,
    /// First new line, 1-based.
    pub new_start: u64,
    /// New line count.
    pub new_lines: u64,
    /// The hunk's lines, each starting with ` `, `+` or `-`.
    pub lines: Vec<String>,
}

fn range(text: &str) -> (u64, u64) {
    let mut parts = text.splitn(2, ',');
    let start = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let count = parts.next().map_or(1, |c| c.parse().unwrap_or(0));
    (start, count)
}

fn path(text: &str, prefix: &str) -> Option<String> {
    let text = text.trim_end();
    (text != "/dev/null").then(|| text.strip_prefix(prefix).unwrap_or(text).to_owned())
}

/// Parses `git diff` output (with `a/` and `b/` prefixes).
pub(crate) fn parse(diff: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let (old, new) = rest.split_once(" b/").unwrap_or((rest, rest));
            files.push(FileDiff {
                old_path: Some(old.strip_prefix("a/").unwrap_or(old).to_owned()),
                new_path: Some(new.to_owned()),
                binary: false,
                hunks: Vec::new(),
            });
            continue;
        }
        let Some(file) = files.last_mut() else { continue };
        if let Some(old) = line.strip_prefix("--- ") {
            file.old_path = path(old, "a/");
        } else if let Some(new) = line.strip_prefix("+++ ") {
            file.new_path = path(new, "b/");
        } else if line.starts_with("Binary files ") {
            file.binary = true;
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            let ranges = rest.split(" @@").next().unwrap_or_default();
            let (old, new) = ranges.split_once(" +").unwrap_or((ranges, "0"));
            let ((old_start, old_lines), (new_start, new_lines)) = (range(old), range(new));
            file.hunks.push(Hunk {
                header: line.to_owned(),
                old_start,
                old_lines,
                new_start,
                new_lines,
                lines: Vec::new(),
            });
        } else if let Some(hunk) = file.hunks.last_mut()
            && (line.starts_with(' ') || line.starts_with('+') || line.starts_with('-') || line.starts_with('\\'))
        {
            hunk.lines.push(line.to_owned());
        } else if line.starts_with("new file mode") {
            file.old_path = None;
        } else if line.starts_with("deleted file mode") {
            file.new_path = None;
        }
    }
    files
}
