//! `read_many_files`: several text files at once, each with its own outcome.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::whole::read_prefix;

const DEFAULT_MAX_BYTES: u64 = 256 * 1024;

/// Read several UTF-8 text files, each with its content and SHA-256 or its own error.
/// A path outside the workspace denies the whole call. Content past `max_bytes_per_file` is cut and
/// marked.
#[tool(
    name = "read_many_files",
    title = "Read several files",
    category = "files",
    effect = "read"
)]
pub struct ReadManyFiles {
    /// Workspace-relative paths.
    #[schemars(length(min = 1, max = 100))]
    pub paths: Vec<WorkspacePath>,
    /// Most bytes per file; default 262144.
    #[schemars(range(min = 1, max = 1048576))]
    pub max_bytes_per_file: Option<u64>,
}

/// The files, in the order asked.
#[kyro_core::output]
#[derive(Debug)]
pub struct ManyFiles {
    /// One entry per path.
    pub files: Vec<OneFile>,
}

/// One file's content, or why it could not be read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OneFile {
    /// The path as given.
    pub path: String,
    /// The content (possibly cut), when read.
    pub content: Option<String>,
    /// SHA-256 of the whole file, when read.
    pub sha256: Option<String>,
    /// True when the content was cut at `max_bytes_per_file`, or to keep the whole result
    /// within the output limit (read the file again on its own for the rest).
    pub truncated: bool,
    /// The error kind (`not_found`, `binary_file`, ...), when not read.
    pub error_kind: Option<String>,
    /// The error message, when not read.
    pub error: Option<String>,
}

fn read_one(cx: &ToolContext, path: &WorkspacePath, max: usize) -> Result<OneFile, ToolError> {
    cx.stop().check()?;
    let prefix = read_prefix(&cx.path(path)?, max)?;
    Ok(OneFile {
        path: path.to_string(),
        truncated: prefix.truncated,
        content: Some(prefix.content),
        sha256: Some(prefix.sha256),
        error_kind: None,
        error: None,
    })
}

impl Execute for ReadManyFiles {
    type Output = ManyFiles;

    async fn run(self, cx: &ToolContext) -> Result<ManyFiles, ToolError> {
        let max = self.max_bytes_per_file.unwrap_or(DEFAULT_MAX_BYTES) as usize;
        // Three quarters of the output limit for contents, the rest for JSON escapes.
        let mut room = (cx.output_limit() / 4 * 3) as usize;
        let files = self
            .paths
            .iter()
            .map(|path| {
                let one = read_one(cx, path, max.min(room));
                if let Ok(OneFile {
                    content: Some(text), ..
                }) = &one
                {
                    room -= text.len();
                }
                one.unwrap_or_else(|error| OneFile {
                    path: path.to_string(),
                    content: None,
                    sha256: None,
                    truncated: false,
                    error_kind: error.to_json()["kind"].as_str().map(str::to_owned),
                    error: Some(error.to_string()),
                })
            })
            .collect();
        Ok(ManyFiles { files })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{call, ok, workspace};

    #[test]
    fn reads_each_file_and_reports_each_failure_apart() {
        let ws = workspace();
        std::fs::write(ws.path().join("a"), "a|b\r\n").unwrap();
        std::fs::write(ws.path().join("empty"), "").unwrap();
        std::fs::write(ws.path().join("bin"), b"\0\x01").unwrap();
        let r = ok(call(
            ws.path(),
            "read_many_files",
            json!({"paths": ["a", "empty", "bin", "missing"]}),
        ));
        let files = r["files"].as_array().unwrap();
        assert_eq!(files[0]["content"], "a|b\r\n");
        assert_eq!(files[1]["content"], "");
        assert_eq!(files[2]["error_kind"], "binary_file");
        assert_eq!(files[3]["error_kind"], "not_found");
        assert!(files[3]["content"].is_null());
    }

    #[test]
    fn a_path_outside_the_roots_denies_the_call_before_anything_is_read() {
        let ws = workspace();
        std::fs::write(ws.path().join("a"), "a").unwrap();
        match call(ws.path(), "read_many_files", json!({"paths": ["a", "../outside"]})) {
            kyro_core::Outcome::Denied {
                reason: kyro_core::receipt::Denial::Path { pointer, .. },
                ..
            } => assert_eq!(pointer, "/paths/1"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_file_is_hashed_whole_but_only_its_first_bytes_are_kept() {
        let ws = workspace();
        let text = "line of text\n".repeat(200_000);
        std::fs::write(ws.path().join("big"), &text).unwrap();
        let r = ok(call(
            ws.path(),
            "read_many_files",
            json!({"paths": ["big"], "max_bytes_per_file": 100}),
        ));
        assert_eq!(r["files"][0]["content"], &text[..100]);
        assert_eq!(r["files"][0]["truncated"], true);
        assert_eq!(r["files"][0]["sha256"], kyro_core::sha256_hex(text.as_bytes()));
        // A NUL past the kept part still makes the file binary.
        std::fs::write(ws.path().join("late_nul"), format!("{text}\0")).unwrap();
        let r = ok(call(
            ws.path(),
            "read_many_files",
            json!({"paths": ["late_nul"], "max_bytes_per_file": 100}),
        ));
        assert_eq!(r["files"][0]["error_kind"], "binary_file");
    }

    #[test]
    fn the_files_share_the_output_limit_instead_of_passing_it() {
        let ws = workspace();
        let text = "x".repeat(300 * 1024);
        let mut paths = Vec::new();
        for i in 0..20 {
            std::fs::write(ws.path().join(format!("f{i}")), &text).unwrap();
            paths.push(format!("f{i}"));
        }
        // 20 files of 300 KiB, 256 KiB each asked: 5 MiB, over the 4 MiB output limit.
        let r = ok(call(ws.path(), "read_many_files", json!({"paths": paths})));
        let files = r["files"].as_array().unwrap();
        let total: usize = files.iter().map(|f| f["content"].as_str().unwrap().len()).sum();
        assert!(total <= 3 * 1024 * 1024, "{total}");
        assert!(files.iter().all(|f| f["truncated"] == true));
        assert_eq!(files[19]["content"], "", "the last ones are left for another call");
        assert_eq!(
            files[19]["sha256"], files[0]["sha256"],
            "but each is still hashed whole"
        );
    }

    #[test]
    fn content_is_cut_at_a_character_boundary() {
        let ws = workspace();
        std::fs::write(ws.path().join("u"), "ééé").unwrap();
        let r = ok(call(
            ws.path(),
            "read_many_files",
            json!({"paths": ["u"], "max_bytes_per_file": 3}),
        ));
        assert_eq!(r["files"][0]["content"], "é");
        assert_eq!(r["files"][0]["truncated"], true);
    }
}
