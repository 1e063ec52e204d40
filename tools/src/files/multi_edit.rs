//! `multi_edit`: several exact replacements in one file, all or none.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::edit_file::Edited;
use super::text_file::replace;

/// Apply exact text replacements to one file in order, all or none; each edit sees the previous result.
/// One that misses (or is not unique without `replace_all`) is named.
#[tool(
    name = "multi_edit",
    title = "Edit file (several changes)",
    category = "files",
    effect = "write"
)]
pub struct MultiEdit {
    /// Workspace-relative path.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// The edits, in order.
    #[schemars(length(min = 1, max = 100))]
    pub edits: Vec<Replacement>,
    /// SHA-256 from the last read; refused if the file changed.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub expected_sha256: Option<String>,
    /// Only return the diff; write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// One edit.
#[kyro_core::input]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    /// Exact text to replace.
    #[schemars(length(min = 1))]
    pub old_text: String,
    /// Replacement text.
    pub new_text: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
}

impl Execute for MultiEdit {
    type Output = Edited;

    async fn run(self, cx: &ToolContext) -> Result<Edited, ToolError> {
        super::edit_file::edit(
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

impl MultiEdit {
    /// The text after every edit in order, and the replacements made.
    fn apply(&self, original: &str) -> Result<(String, u64), ToolError> {
        let mut text = original.to_owned();
        let mut replacements = 0;
        for (i, edit) in self.edits.iter().enumerate() {
            let (next, count) = replace(
                &text,
                &edit.old_text,
                &edit.new_text,
                edit.replace_all,
                self.path.as_str(),
                Some(i as u64),
            )?;
            text = next;
            replacements += count;
        }
        Ok((text, replacements))
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn applies_edits_in_order() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "one two three").unwrap();
        let edited = ok(call(
            ws.path(),
            "multi_edit",
            json!({"path": "f", "edits": [
                {"old_text": "one", "new_text": "1|"},
                {"old_text": "1| two", "new_text": "12"},
                {"old_text": "e", "new_text": "E", "replace_all": true}
            ]}),
        ));
        assert_eq!(std::fs::read_to_string(ws.path().join("f")).unwrap(), "12 thrEE");
        assert_eq!(edited["replacements"], 4);
    }

    #[test]
    fn one_failing_edit_leaves_the_file_unchanged_and_is_named() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "one two").unwrap();
        let error = failed(call(
            ws.path(),
            "multi_edit",
            json!({"path": "f", "edits": [
                {"old_text": "one", "new_text": "1"},
                {"old_text": "missing", "new_text": "x"}
            ]}),
        ));
        assert_eq!(
            error,
            Failure::NoMatch {
                path: "f".into(),
                edit: Some(1)
            }
            .into()
        );
        assert_eq!(std::fs::read_to_string(ws.path().join("f")).unwrap(), "one two");
    }

    #[test]
    fn an_empty_edit_list_is_invalid() {
        let ws = workspace();
        let outcome = call(ws.path(), "multi_edit", json!({"path": "f", "edits": []}));
        assert!(matches!(outcome, kyro_core::Outcome::InvalidArguments { .. }));
    }
}
