//! A text file being edited: its content, its hash, and the guard against stale edits.

use crate::Failure;
use kyro_core::{ConfinedPath, ToolError, sha256_hex};

use super::whole::read_text_bytes;

/// A UTF-8 file read whole (after its freshness was checked).
pub(crate) struct TextFile {
    pub path: ConfinedPath,
    pub text: String,
}

impl TextFile {
    /// Reads the file; refuses binary files, and refuses a stale one when `expected` is given.
    pub fn load(path: ConfinedPath, expected: Option<&str>) -> Result<TextFile, ToolError> {
        let bytes = read_text_bytes(&path)?;
        let sha256 = sha256_hex(&bytes);
        if let Some(expected) = expected.filter(|e| *e != sha256) {
            return Err(Failure::StaleFile {
                path: path.given().to_owned(),
                expected: expected.to_owned(),
                actual: sha256,
            }
            .into());
        }
        let text = String::from_utf8(bytes).map_err(|_| Failure::BinaryFile {
            path: path.given().to_owned(),
        })?;
        Ok(TextFile { path, text })
    }

    /// Writes `new_text` atomically (unless `dry_run`: nothing is written) and returns its
    /// SHA-256 and a unified diff.
    pub fn save(&self, new_text: &str, dry_run: bool) -> Result<(String, String), ToolError> {
        if !dry_run {
            self.path
                .write_atomic(new_text.as_bytes(), Some(self.text.as_bytes()))?;
        }
        Ok((
            sha256_hex(new_text.as_bytes()),
            unified_diff(&self.path.display(), &self.text, new_text),
        ))
    }
}

/// Most diff lines shown to a person approving a write.
const PREVIEW_LINES: usize = 200;

/// The diff a write of `new_text` to `path` will make, for the approver: bounded to 200
/// lines, the rest counted.
pub(crate) fn preview_diff(path: &str, old: &str, new: &str) -> String {
    let diff = unified_diff(path, old, new);
    if diff.is_empty() {
        return "no change to the file".to_owned();
    }
    let total = diff.lines().count();
    let mut shown: String = diff.lines().take(PREVIEW_LINES).flat_map(|l| [l, "\n"]).collect();
    if total > PREVIEW_LINES {
        shown.push_str(&format!("… {} more lines of diff\n", total - PREVIEW_LINES));
    }
    shown
}

/// The preview of an edit computed by `edit` from the file's current text: its diff, or
/// why it will fail.
pub(crate) fn preview_edit(
    cx: &kyro_core::ToolContext,
    path: &kyro_core::WorkspacePath,
    expected: Option<&str>,
    edit: impl FnOnce(&str) -> Result<String, ToolError>,
) -> Option<String> {
    let outcome = (|| {
        let file = TextFile::load(cx.path(path)?, expected)?;
        let new_text = edit(&file.text)?;
        Ok::<_, ToolError>(preview_diff(&file.path.display(), &file.text, &new_text))
    })();
    Some(outcome.unwrap_or_else(|error| format!("this call will fail: {error}")))
}

/// A unified diff of two versions of one file, with three lines of context.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Replaces `old` with `new` in `text`: exactly once unless `replace_all`.
pub(crate) fn replace(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    path: &str,
    edit: Option<u64>,
) -> Result<(String, u64), ToolError> {
    let count = text.matches(old).count() as u64;
    match count {
        0 => Err(Failure::NoMatch {
            path: path.to_owned(),
            edit,
        }
        .into()),
        1 => Ok((text.replacen(old, new, 1), 1)),
        _ if replace_all => Ok((text.replace(old, new), count)),
        _ => Err(Failure::AmbiguousMatch {
            path: path.to_owned(),
            edit,
            count,
        }
        .into()),
    }
}
