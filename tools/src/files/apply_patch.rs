//! `apply_patch`: a unified diff over one or more files, applied all or none.

use crate::Failure;
use kyro_core::{ConfinedPath, EntryType, Execute, ToolContext, ToolError, WorkspacePath, sha256_hex, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::codex_patch::{self, FileChange};
use super::whole::read_text_bytes;

/// Apply a unified diff (`diff -u` or `git diff`; `/dev/null` creates or deletes) or a Codex
/// envelope (`*** Begin Patch`, `*** Add File:`, `*** Delete File:`, `*** Update File:`, `*** Move
/// to:`, `@@` hunks found by content) to workspace files, all or nothing.
#[tool(name = "apply_patch", title = "Apply patch", category = "files", effect = "write", aliases = ["patch"])]
pub struct ApplyPatch {
    /// The diff or envelope.
    #[schemars(length(min = 1, max = 4194304))]
    pub patch: String,
    /// SHA-256s from the last read; a changed file refuses the whole patch.
    #[serde(default)]
    pub expected_sha256: Vec<ExpectedHash>,
}

/// A file's hash when read.
#[kyro_core::input]
#[derive(Debug)]
#[serde(deny_unknown_fields)]
pub struct ExpectedHash {
    /// Path as in the patch (no `a/` or `b/`).
    pub path: String,
    /// Its SHA-256.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub sha256: String,
}

/// What the patch did.
#[kyro_core::output]
#[derive(Debug)]
pub struct Patched {
    /// One entry per file, in patch order.
    pub files: Vec<PatchedFile>,
}

/// One file of a patch.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatchedFile {
    /// The path, relative to the workspace root.
    pub path: String,
    /// What happened to it.
    pub operation: PatchOperation,
    /// SHA-256 of the new content; absent for a deletion.
    pub sha256: Option<String>,
    /// The path it moved from, for a move.
    pub from: Option<String>,
}

/// What a patch did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PatchOperation {
    /// Changed in place.
    Modified,
    /// Created.
    Created,
    /// Deleted.
    Deleted,
    /// Moved (and perhaps changed).
    Moved,
}

/// A file's change, checked and computed, not yet written.
struct Stage {
    path: ConfinedPath,
    operation: PatchOperation,
    original: String,
    patched: String,
    /// For a move: where it was.
    from: Option<ConfinedPath>,
}

/// One file's part of a multi-file diff.
struct Section {
    old: Option<String>,
    new: Option<String>,
    text: String,
}

fn strip(path: &str) -> Option<String> {
    let path = path.split('\t').next().unwrap_or(path).trim();
    if path == "/dev/null" {
        return None;
    }
    Some(
        path.strip_prefix("a/")
            .or_else(|| path.strip_prefix("b/"))
            .unwrap_or(path)
            .to_owned(),
    )
}

fn sections(patch: &str) -> Result<Vec<Section>, ToolError> {
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    let mut out: Vec<Section> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let (Some(old), Some(next)) = (line.strip_prefix("--- "), lines.get(i + 1))
            && let Some(new) = next.strip_prefix("+++ ")
        {
            out.push(Section {
                old: strip(old),
                new: strip(new),
                text: format!("{line}{next}"),
            });
            i += 2;
            continue;
        }
        match out.last_mut() {
            Some(section) if !line.starts_with("diff --git ") => section.text.push_str(line),
            _ => {}
        }
        i += 1;
    }
    if out.is_empty() {
        return Err(Failure::PatchFailed {
            path: String::new(),
            message: "no `--- ` / `+++ ` file header found; send a unified diff".into(),
        }
        .into());
    }
    Ok(out)
}

impl Execute for ApplyPatch {
    type Output = Patched;

    async fn run(self, cx: &ToolContext) -> Result<Patched, ToolError> {
        // Stage every file first: confine, check freshness, apply in memory.
        let staged = if codex_patch::is_envelope(&self.patch) {
            self.stage_envelope(cx)?
        } else {
            self.stage_unified(cx)?
        };
        // Then write; on an I/O failure, put back what was already written.
        let mut done: Vec<usize> = Vec::new();
        let mut files = Vec::new();
        // A call stopped while staging (a long hunk search) writes nothing.
        cx.stop().check()?;
        for (i, stage) in staged.iter().enumerate() {
            let Stage {
                path,
                operation,
                original,
                patched,
                from,
            } = stage;
            // Confined again now that the files before it are written: several files, each
            // allowed alone, may together make what no write may (a bare git directory).
            let written = match cx.path(&WorkspacePath::new(path.given().to_owned())).map(drop) {
                Err(refused) => Err(refused),
                Ok(()) => match operation {
                    PatchOperation::Deleted => path.remove_file(),
                    PatchOperation::Created => path
                        .create_parents()
                        .and_then(|()| path.write_atomic(patched.as_bytes(), None)),
                    PatchOperation::Modified => path.write_atomic(patched.as_bytes(), Some(original.as_bytes())),
                    PatchOperation::Moved => path
                        .create_parents()
                        .and_then(|()| path.write_atomic(patched.as_bytes(), None))
                        .and_then(|()| match from {
                            Some(from) => from.remove_file().inspect_err(|_| {
                                let _ = path.remove_file();
                            }),
                            None => Ok(()),
                        }),
                },
            };
            if let Err(error) = written {
                for &j in done.iter().rev() {
                    let Stage {
                        path,
                        operation,
                        original,
                        from,
                        ..
                    } = &staged[j];
                    let _ = match (operation, from) {
                        (PatchOperation::Created, _) => path.remove_file(),
                        (PatchOperation::Moved, Some(from)) => from
                            .write_atomic(original.as_bytes(), None)
                            .and_then(|()| path.remove_file()),
                        _ => path.write_atomic(original.as_bytes(), None),
                    };
                }
                return Err(error);
            }
            done.push(i);
            files.push(PatchedFile {
                path: path.display(),
                operation: *operation,
                sha256: (*operation != PatchOperation::Deleted).then(|| sha256_hex(patched.as_bytes())),
                from: from.as_ref().map(ConfinedPath::display),
            });
        }
        Ok(Patched { files })
    }
}

impl ApplyPatch {
    /// The current text of the file a patch changes, checked against `expected_sha256`.
    fn current(&self, path: &ConfinedPath, name: &str) -> Result<String, ToolError> {
        if path.entry_type()? != Some(EntryType::File) {
            return Err(ToolError::NotFound { path: name.to_owned() });
        }
        let bytes = read_text_bytes(path)?;
        if let Some(expected) = self.expected_sha256.iter().find(|e| e.path == name).map(|e| &e.sha256) {
            let actual = sha256_hex(&bytes);
            if *expected != actual {
                return Err(Failure::StaleFile {
                    path: name.to_owned(),
                    expected: expected.clone(),
                    actual,
                }
                .into());
            }
        }
        String::from_utf8(bytes).map_err(|_| Failure::BinaryFile { path: name.to_owned() }.into())
    }

    /// A path a patch creates: refused when something is there.
    fn fresh(cx: &ToolContext, name: &str) -> Result<ConfinedPath, ToolError> {
        let path = cx.path(&WorkspacePath::new(name.to_owned()))?;
        if path.entry_type()?.is_some() {
            return Err(ToolError::AlreadyExists { path: name.to_owned() });
        }
        Ok(path)
    }

    fn stage_unified(&self, cx: &ToolContext) -> Result<Vec<Stage>, ToolError> {
        let mut staged = Vec::new();
        for section in sections(&self.patch)? {
            let name = section.new.clone().or(section.old.clone()).unwrap_or_default();
            let failed = |message: String| {
                Failure::PatchFailed {
                    path: name.clone(),
                    message,
                }
                .into()
            };
            let operation = match (&section.old, &section.new) {
                (None, Some(_)) => PatchOperation::Created,
                (Some(_), None) => PatchOperation::Deleted,
                _ => PatchOperation::Modified,
            };
            let (path, original) = match operation {
                PatchOperation::Created => (Self::fresh(cx, &name)?, String::new()),
                _ => {
                    let path = cx.path(&WorkspacePath::new(name.clone()))?;
                    let original = self.current(&path, &name)?;
                    (path, original)
                }
            };
            let parsed = diffy::Patch::from_str(&section.text).map_err(|e| failed(e.to_string()))?;
            let patched = diffy::apply(&original, &parsed).map_err(|e| failed(e.to_string()))?;
            if operation == PatchOperation::Deleted && !patched.is_empty() {
                return Err(failed("a deletion must remove every line".into()));
            }
            staged.push(Stage {
                path,
                operation,
                original,
                patched,
                from: None,
            });
        }
        Ok(staged)
    }

    fn stage_envelope(&self, cx: &ToolContext) -> Result<Vec<Stage>, ToolError> {
        let changes = codex_patch::parse(&self.patch).map_err(|message| Failure::PatchFailed {
            path: String::new(),
            message,
        })?;
        let mut named: Vec<&str> = Vec::new();
        for change in &changes {
            let (path, to) = match change {
                FileChange::Add { path, .. } | FileChange::Delete { path } => (path, None),
                FileChange::Update { path, move_to, .. } => (path, move_to.as_ref()),
            };
            for name in std::iter::once(path).chain(to.filter(|to| *to != path)) {
                if named.contains(&name.as_str()) {
                    return Err(Failure::PatchFailed {
                        path: name.clone(),
                        message: "the patch changes this path twice; change each file once".into(),
                    }
                    .into());
                }
                named.push(name);
            }
        }
        let mut staged: Vec<Stage> = Vec::new();
        for change in changes {
            cx.stop().check()?;
            staged.push(match change {
                FileChange::Add { path: name, content } => Stage {
                    path: Self::fresh(cx, &name)?,
                    operation: PatchOperation::Created,
                    original: String::new(),
                    patched: content,
                    from: None,
                },
                FileChange::Delete { path: name } => {
                    let path = cx.path(&WorkspacePath::new(name.clone()))?;
                    let original = self.current(&path, &name)?;
                    Stage {
                        path,
                        operation: PatchOperation::Deleted,
                        original,
                        patched: String::new(),
                        from: None,
                    }
                }
                FileChange::Update {
                    path: name,
                    move_to,
                    chunks,
                } => {
                    let path = cx.path(&WorkspacePath::new(name.clone()))?;
                    let original = self.current(&path, &name)?;
                    let stopped = || cx.stop().check().is_err();
                    let patched =
                        codex_patch::apply(&original, &chunks, &stopped).map_err(|message| Failure::PatchFailed {
                            path: name.clone(),
                            message,
                        })?;
                    match move_to {
                        Some(to) if to != name => Stage {
                            path: Self::fresh(cx, &to)?,
                            operation: PatchOperation::Moved,
                            original,
                            patched,
                            from: Some(path),
                        },
                        _ => Stage {
                            path,
                            operation: PatchOperation::Modified,
                            original,
                            patched,
                            from: None,
                        },
                    }
                }
            });
        }
        // The same file named two ways (`a.txt`, `./a.txt`) is still one file.
        let mut seen: Vec<&std::path::Path> = Vec::new();
        for stage in &staged {
            for path in std::iter::once(&stage.path).chain(stage.from.as_ref()) {
                if seen.contains(&path.relative()) {
                    return Err(Failure::PatchFailed {
                        path: path.display(),
                        message: "the patch changes this path twice; change each file once".into(),
                    }
                    .into());
                }
                seen.push(path.relative());
            }
        }
        Ok(staged)
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    const PATCH: &str = "diff --git a/one.txt b/one.txt
--- a/one.txt
+++ b/one.txt
@@ -1,3 +1,3 @@
 alpha
-beta|é
+BETA|é
 gamma
--- /dev/null
+++ b/sub/new.txt
@@ -0,0 +1,2 @@
+fresh
+file
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
";

    fn setup() -> tempfile::TempDir {
        let ws = workspace();
        std::fs::write(ws.path().join("one.txt"), "alpha\nbeta|é\ngamma\n").unwrap();
        std::fs::write(ws.path().join("gone.txt"), "bye\n").unwrap();
        ws
    }

    #[test]
    fn modifies_creates_and_deletes_across_files() {
        let ws = setup();
        let result = ok(call(ws.path(), "apply_patch", json!({"patch": PATCH})));
        assert_eq!(
            std::fs::read_to_string(ws.path().join("one.txt")).unwrap(),
            "alpha\nBETA|é\ngamma\n"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("sub/new.txt")).unwrap(),
            "fresh\nfile\n"
        );
        assert!(!ws.path().join("gone.txt").exists());
        let ops: Vec<&str> = result["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["operation"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["modified", "created", "deleted"]);
    }

    const ENVELOPE: &str = "*** Begin Patch
*** Add File: sub/hello.txt
+Hello
+world
*** Update File: one.txt
*** Move to: moved/one.txt
@@ alpha
-beta|é
+BETA|é
*** Delete File: gone.txt
*** End Patch
";

    #[test]
    fn codexs_envelope_adds_updates_moves_and_deletes() {
        let ws = setup();
        let result = ok(call(ws.path(), "apply_patch", json!({"patch": ENVELOPE})));
        assert_eq!(
            std::fs::read_to_string(ws.path().join("sub/hello.txt")).unwrap(),
            "Hello\nworld\n"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("moved/one.txt")).unwrap(),
            "alpha\nBETA|é\ngamma\n"
        );
        assert!(!ws.path().join("one.txt").exists());
        assert!(!ws.path().join("gone.txt").exists());
        assert_eq!(result["files"][1]["operation"], "moved");
        assert_eq!(result["files"][1]["from"], "one.txt");
        assert_eq!(result["files"][1]["path"], "moved/one.txt");
        let ops: Vec<&str> = result["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["operation"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["created", "moved", "deleted"]);
    }

    #[test]
    fn an_envelope_that_does_not_apply_changes_nothing_and_says_why() {
        let ws = setup();
        // The last change fails (its hunk is not there): the add and the move before it
        // are not made.
        let patch = ENVELOPE.replace(
            "*** Delete File: gone.txt\n",
            "*** Update File: gone.txt\n@@\n-not there\n+x\n",
        );
        let error = failed(call(ws.path(), "apply_patch", json!({"patch": patch})));
        assert!(
            matches!(Failure::of(&error), Some(Failure::PatchFailed { ref path, ref message }) if path == "gone.txt" && message.contains("hunk 1")),
            "{error:?}"
        );
        assert!(!ws.path().join("sub/hello.txt").exists());
        assert!(ws.path().join("one.txt").exists() && !ws.path().join("moved").exists());
        // Malformed: the line is named.
        let error = failed(call(
            ws.path(),
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Rename: a\n*** End Patch"}),
        ));
        assert!(error.to_string().contains("line 2"), "{error}");
        // A path changed twice, a move onto an existing file, an escape: refused whole.
        let twice =
            "*** Begin Patch\n*** Delete File: gone.txt\n*** Update File: gone.txt\n@@\n-bye\n+hi\n*** End Patch";
        assert!(
            failed(call(ws.path(), "apply_patch", json!({"patch": twice})))
                .to_string()
                .contains("twice")
        );
        let onto =
            "*** Begin Patch\n*** Update File: one.txt\n*** Move to: gone.txt\n@@\n-gamma\n+GAMMA\n*** End Patch";
        assert!(matches!(
            failed(call(ws.path(), "apply_patch", json!({"patch": onto}))),
            kyro_core::ToolError::AlreadyExists { .. }
        ));
        let escape = "*** Begin Patch\n*** Add File: ../escaped.txt\n+x\n*** End Patch";
        assert_eq!(
            crate::testing::denied_path(call(ws.path(), "apply_patch", json!({"patch": escape}))),
            kyro_core::policy::PathDenial::OutsideRoots
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("one.txt")).unwrap(),
            "alpha\nbeta|é\ngamma\n"
        );
        assert_eq!(std::fs::read_to_string(ws.path().join("gone.txt")).unwrap(), "bye\n");
    }

    #[test]
    fn files_each_allowed_alone_cannot_together_plant_a_git_directory() {
        let ws = setup();
        let plant = "*** Begin Patch\n*** Add File: evil/HEAD\n+ref: refs/heads/main\n*** Add File: evil/objects/info/x\n+\n*** Add File: evil/refs/heads/x\n+\n*** Add File: evil/config\n+[core]\n+\tfsmonitor = \"sh -c 'touch pwned'\"\n*** End Patch";
        let outcome = call(ws.path(), "apply_patch", json!({"patch": plant}));
        assert!(!matches!(outcome, kyro_core::Outcome::Ok { .. }), "{outcome:?}");
        assert!(
            !ws.path().join("evil/HEAD").exists() && !ws.path().join("evil/config").exists(),
            "all or nothing"
        );
        // The same two files named two ways are one file.
        let twice = "*** Begin Patch\n*** Update File: one.txt\n@@\n-alpha\n+A\n*** Update File: ./one.txt\n@@\n-gamma\n+G\n*** End Patch";
        let error = failed(call(ws.path(), "apply_patch", json!({"patch": twice})));
        assert!(error.to_string().contains("changes this path twice"), "{error}");
        assert_eq!(
            std::fs::read_to_string(ws.path().join("one.txt")).unwrap(),
            "alpha\nbeta|é\ngamma\n"
        );
    }

    #[test]
    fn one_hunk_that_does_not_apply_changes_nothing() {
        let ws = setup();
        std::fs::write(ws.path().join("gone.txt"), "something else\n").unwrap();
        let error = failed(call(ws.path(), "apply_patch", json!({"patch": PATCH})));
        assert!(
            matches!(Failure::of(&error), Some(Failure::PatchFailed { ref path, .. }) if path == "gone.txt"),
            "{error:?}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.path().join("one.txt")).unwrap(),
            "alpha\nbeta|é\ngamma\n"
        );
        assert!(!ws.path().join("sub/new.txt").exists());
    }

    #[test]
    fn a_stale_file_refuses_the_whole_patch() {
        let ws = setup();
        let error = failed(call(
            ws.path(),
            "apply_patch",
            json!({"patch": PATCH, "expected_sha256": [{"path": "one.txt", "sha256": "0".repeat(64)}]}),
        ));
        assert!(matches!(Failure::of(&error), Some(Failure::StaleFile { .. })));
        assert!(ws.path().join("gone.txt").exists());
    }

    #[test]
    fn text_that_is_not_a_diff_and_paths_that_escape_are_refused() {
        let ws = setup();
        assert!(matches!(
            Failure::of(&failed(call(ws.path(), "apply_patch", json!({"patch": "just words"})))),
            Some(Failure::PatchFailed { .. })
        ));
        let escape = "--- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+x\n";
        assert_eq!(
            crate::testing::denied_path(call(ws.path(), "apply_patch", json!({"patch": escape}))),
            kyro_core::policy::PathDenial::OutsideRoots
        );
        assert!(!ws.path().parent().unwrap().join("escaped.txt").exists());
        // `.git` and `.kyro` inside the workspace: denied, and the outcome says why.
        for protected in [".git/config", ".kyro/receipts.jsonl"] {
            let patch = format!("--- /dev/null\n+++ b/{protected}\n@@ -0,0 +1 @@\n+x\n");
            let outcome = call(ws.path(), "apply_patch", json!({"patch": patch}));
            assert!(
                outcome.to_json().to_string().contains("which tools may not write"),
                "{outcome:?}"
            );
            assert_eq!(
                crate::testing::denied_path(outcome),
                kyro_core::policy::PathDenial::Protected
            );
        }
    }
}
