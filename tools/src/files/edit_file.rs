//! `edit_file`: replace an exact, unique piece of text in a file.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::text_file::{TextFile, replace};

/// Replace exact text in a UTF-8 file: `old_text` must occur exactly once (add surrounding lines to
/// make it unique) unless `replace_all`. Returns a diff.
#[tool(name = "edit_file", title = "Edit file", category = "files", effect = "write", aliases = ["str_replace"])]
pub struct EditFile {
    /// Workspace-relative path.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// Exact text to replace, whitespace and line endings included.
    #[schemars(length(min = 1))]
    pub old_text: String,
    /// Replacement text.
    pub new_text: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
    /// SHA-256 from the last read; refused if the file changed.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub expected_sha256: Option<String>,
    /// Only return the diff; write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// The result of an edit.
#[kyro_core::output]
#[derive(Debug)]
pub struct Edited {
    /// The path as given.
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: u64,
    /// SHA-256 of the new content.
    pub sha256: String,
    /// Unified diff of the change.
    pub diff: String,
    /// True when nothing was written (`dry_run`): `sha256` is what the file would hash to.
    pub dry_run: bool,
}

impl Execute for EditFile {
    type Output = Edited;

    async fn run(self, cx: &ToolContext) -> Result<Edited, ToolError> {
        edit(
            cx,
            &self.path,
            (self.expected_sha256.as_deref(), self.dry_run),
            |text| self.apply(text),
        )
    }

    fn preview(&self, cx: &ToolContext) -> Option<String> {
        super::text_file::preview_edit(cx, &self.path, self.expected_sha256.as_deref(), |text| {
            self.apply(text).map(|(new_text, _)| new_text)
        })
    }
}

/// Every text edit's run: the file loaded (checked against `expected_sha256` when given),
/// `apply` turning its text into the new text and the number of replacements, the result
/// saved atomically (not on a `dry_run`), and the diff.
pub(super) fn edit(
    cx: &ToolContext,
    path: &WorkspacePath,
    (expected_sha256, dry_run): (Option<&str>, bool),
    apply: impl FnOnce(&str) -> Result<(String, u64), ToolError>,
) -> Result<Edited, ToolError> {
    let file = TextFile::load(cx.path(path)?, expected_sha256)?;
    let (new_text, replacements) = apply(&file.text)?;
    let (sha256, diff) = file.save(&new_text, dry_run)?;
    Ok(Edited {
        path: path.as_str().to_owned(),
        replacements,
        sha256,
        diff,
        dry_run,
    })
}

impl EditFile {
    /// The new text and the number of replacements.
    fn apply(&self, text: &str) -> Result<(String, u64), ToolError> {
        replace(
            text,
            &self.old_text,
            &self.new_text,
            self.replace_all,
            self.path.as_str(),
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use kyro_core::sha256_hex;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn replaces_a_unique_match_and_keeps_everything_else() {
        let ws = workspace();
        std::fs::write(ws.path().join("f.txt"), "a|b\r\nhé 😀\nend").unwrap();
        let edited = ok(call(
            ws.path(),
            "edit_file",
            json!({"path": "f.txt", "old_text": "hé 😀", "new_text": "ok|\r\n"}),
        ));
        assert_eq!(
            std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
            "a|b\r\nok|\r\n\nend"
        );
        assert_eq!(edited["replacements"], 1);
        assert_eq!(edited["sha256"], sha256_hex("a|b\r\nok|\r\n\nend".as_bytes()));
        assert!(edited["diff"].as_str().unwrap().contains("-hé 😀"));
    }

    #[test]
    fn a_dry_run_shows_the_diff_and_writes_nothing() {
        let ws = workspace();
        std::fs::write(ws.path().join("f.txt"), "one\ntwo\n").unwrap();
        let args = |dry: bool| json!({"path": "f.txt", "old_text": "two", "new_text": "2", "dry_run": dry});
        let shown = ok(call(ws.path(), "edit_file", args(true)));
        assert_eq!(std::fs::read_to_string(ws.path().join("f.txt")).unwrap(), "one\ntwo\n");
        assert!(shown["diff"].as_str().unwrap().contains("-two\n+2"), "{shown}");
        assert_eq!(shown["dry_run"], true);
        let done = ok(call(ws.path(), "edit_file", args(false)));
        assert_eq!(std::fs::read_to_string(ws.path().join("f.txt")).unwrap(), "one\n2\n");
        assert_eq!(
            (done["diff"].clone(), done["sha256"].clone()),
            (shown["diff"].clone(), shown["sha256"].clone())
        );
        assert_eq!(done["dry_run"], false);
        // multi_edit too.
        let multi = json!({"path": "f.txt", "edits": [{"old_text": "one", "new_text": "1"}], "dry_run": true});
        let shown = ok(call(ws.path(), "multi_edit", multi));
        assert!(shown["diff"].as_str().unwrap().contains("-one\n+1"), "{shown}");
        assert_eq!(std::fs::read_to_string(ws.path().join("f.txt")).unwrap(), "one\n2\n");
    }

    #[test]
    fn an_ambiguous_match_needs_replace_all() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "x x x").unwrap();
        assert_eq!(
            failed(call(
                ws.path(),
                "edit_file",
                json!({"path": "f", "old_text": "x", "new_text": "y"})
            )),
            Failure::AmbiguousMatch {
                path: "f".into(),
                edit: None,
                count: 3
            }
            .into()
        );
        assert_eq!(std::fs::read_to_string(ws.path().join("f")).unwrap(), "x x x");
        let all = ok(call(
            ws.path(),
            "edit_file",
            json!({"path": "f", "old_text": "x", "new_text": "y", "replace_all": true}),
        ));
        assert_eq!(all["replacements"], 3);
        assert_eq!(std::fs::read_to_string(ws.path().join("f")).unwrap(), "y y y");
    }

    #[test]
    fn a_missing_match_a_stale_file_and_a_binary_file_are_refused() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "abc").unwrap();
        std::fs::write(ws.path().join("bin"), b"a\0b").unwrap();
        assert_eq!(
            failed(call(
                ws.path(),
                "edit_file",
                json!({"path": "f", "old_text": "zzz", "new_text": "y"})
            )),
            Failure::NoMatch {
                path: "f".into(),
                edit: None
            }
            .into()
        );
        let stale = "0".repeat(64);
        assert!(matches!(
            Failure::of(&failed(call(
                ws.path(),
                "edit_file",
                json!({"path": "f", "old_text": "a", "new_text": "y", "expected_sha256": stale})
            ))),
            Some(Failure::StaleFile { .. })
        ));
        assert_eq!(
            Failure::of(&failed(call(
                ws.path(),
                "edit_file",
                json!({"path": "bin", "old_text": "a", "new_text": "y"})
            ))),
            Some(Failure::BinaryFile { path: "bin".into() })
        );
        assert_eq!(std::fs::read_to_string(ws.path().join("f")).unwrap(), "abc");
    }
}
