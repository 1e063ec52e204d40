//! `read_file`: a window of lines from a UTF-8 text file.

use super::settled;
use super::whole::check_utf8;
use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

const DEFAULT_LIMIT: u64 = 2000;

/// Read a UTF-8 text file, a window of lines at a time, with the line count and the file's SHA-256
/// (for `expected_sha256` when writing).
#[tool(
    name = "read_file",
    title = "Read file",
    category = "files",
    effect = "read",
    aliases = ["cat", "read_text_file"]
)]
pub struct ReadFile {
    /// Workspace-relative path.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
    /// First line, 1-based.
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// Most lines; default 2000.
    #[schemars(range(min = 1, max = 20000))]
    pub limit: Option<u64>,
    /// Only the first N lines.
    #[schemars(range(min = 1, max = 20000))]
    pub head: Option<u64>,
    /// Only the last N lines.
    #[schemars(range(min = 1, max = 20000))]
    pub tail: Option<u64>,
}

/// A window of lines.
#[kyro_core::output]
#[derive(Debug)]
pub struct FileWindow {
    /// The path as given.
    pub path: String,
    /// The lines of the window, concatenated with their original line endings.
    pub content: String,
    /// First line of the window, 1-based (0 for an empty file).
    pub start_line: u64,
    /// Last line of the window, 1-based (0 for an empty file).
    pub end_line: u64,
    /// Lines in the whole file.
    pub total_lines: u64,
    /// True when lines remain after the window.
    pub truncated: bool,
    /// The `offset` that continues after this window, when truncated.
    pub next_offset: Option<u64>,
    /// True when the window's one line was longer than 2 MiB and is cut there (at a
    /// character boundary); the rest of that line is not shown.
    pub line_cut: bool,
    /// SHA-256 of the whole file, lowercase hex.
    pub sha256: String,
}

impl Execute for ReadFile {
    type Output = FileWindow;

    /// The lines numbered as `cat -n` does, under a line saying which lines of how many.
    fn text(w: &FileWindow) -> Option<String> {
        use std::fmt::Write;
        let mut out = String::with_capacity(w.content.len() + w.content.len() / 8 + 64);
        let _ = write!(
            out,
            "{}: lines {}-{} of {}",
            w.path, w.start_line, w.end_line, w.total_lines
        );
        if let Some(next) = w.next_offset {
            let _ = write!(out, " (more from offset {next})");
        }
        if w.line_cut {
            out.push_str(" (the line is cut)");
        }
        out.push('\n');
        for (i, line) in w.content.split_inclusive('\n').enumerate() {
            push_number(&mut out, w.start_line + i as u64);
            out.push_str(line);
        }
        Some(out)
    }

    async fn run(self, cx: &ToolContext) -> Result<FileWindow, ToolError> {
        let given = self.path.as_str().to_owned();
        let path = cx.path(&self.path)?;
        if path.info(true)?.kind != kyro_core::EntryType::File {
            return Err(ToolError::NotAFile { path: given });
        }
        let windows = [
            self.offset.is_some() || self.limit.is_some(),
            self.head.is_some(),
            self.tail.is_some(),
        ];
        if windows.iter().filter(|w| **w).count() > 1 {
            return Err(Failure::InvalidRequest {
                message: "give one of offset/limit, head or tail: each chooses the window".to_owned(),
            }
            .into());
        }
        let mut offset = self.offset.unwrap_or(1);
        let limit = self.head.or(self.tail).or(self.limit).unwrap_or(DEFAULT_LIMIT);
        let failed = |e| match e {
            WindowError::Binary => Failure::BinaryFile { path: given.clone() }.into(),
            WindowError::Io(e) => ToolError::io("read", &given, &e),
        };
        // A file read whole before and not changed since: only its window is read.
        let file = path.open()?;
        let identity = |file: &std::fs::File| file.metadata().map(|m| settled::Identity::of(&m));
        let before = identity(&file).map_err(|e| failed(WindowError::Io(e)))?;
        let known = settled::recall(&before);
        let mut window = read_window(&file, offset, limit, known.as_ref()).map_err(failed)?;
        if let Some(tail) = self.tail {
            // The last lines: the first read counted them; the window is read again from
            // where they start (only up to it when the file was read whole before).
            offset = window.total_lines.saturating_sub(tail) + 1;
            window = read_window(path.open()?, offset, limit, known.as_ref()).map_err(failed)?;
        }
        let after = identity(&file).map_err(|e| failed(WindowError::Io(e)))?;
        if known.is_some() && after != before {
            // Changed while it was read: read it whole.
            window = read_window(&path.open()?, offset, limit, None).map_err(failed)?;
        } else if known.is_none() {
            let whole = settled::Whole {
                sha256: window.sha256.clone(),
                total_lines: window.total_lines,
            };
            settled::remember(before, after, &whole);
        }
        let total = window.total_lines;
        if offset > total && !(total == 0 && offset == 1) {
            return Err(Failure::OffsetOutOfRange {
                path: given,
                offset,
                total_lines: total,
            }
            .into());
        }
        let truncated = window.end_line < total;
        Ok(FileWindow {
            path: given,
            content: window.content,
            start_line: if total == 0 { 0 } else { offset },
            end_line: window.end_line,
            total_lines: total,
            truncated,
            next_offset: truncated.then_some(window.end_line + 1),
            line_cut: window.line_cut,
            sha256: window.sha256,
        })
    }
}

/// `n` right-aligned in six columns and a tab, as `cat -n` writes it (`format!("{n:>6}\t")`
/// without the formatter, once per line).
fn push_number(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let written = digits.len() - at;
    for _ in written..6 {
        out.push(' ');
    }
    // ASCII digits.
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
    out.push('\t');
}

/// Most bytes of content one window holds: the window ends at the last whole line that
/// fits, and a first line longer than this is cut here.
const MAX_WINDOW_BYTES: usize = 2 * 1024 * 1024;

struct Window {
    content: String,
    end_line: u64,
    total_lines: u64,
    line_cut: bool,
    sha256: String,
}

enum WindowError {
    Binary,
    Io(std::io::Error),
}

/// Reads `file` once, in fixed-size chunks, keeping only the lines of the window: the
/// hash, the line count and the UTF-8 check cover the whole file, the memory only the
/// window (at most [`MAX_WINDOW_BYTES`]). With what a whole read of the same file found
/// (`known`), reading stops after the window.
fn read_window(
    mut file: impl std::io::Read,
    offset: u64,
    limit: u64,
    known: Option<&settled::Whole>,
) -> Result<Window, WindowError> {
    use sha2::Digest;
    let last = offset.saturating_add(limit - 1);
    let mut hasher = sha2::Sha256::new();
    let mut buffer = [0u8; 32 * 1024];
    let mut past_window = false;
    let mut utf8_carry: Vec<u8> = Vec::new();
    let mut content: Vec<u8> = Vec::new();
    let mut line = 1u64;
    let mut line_start = 0usize;
    let mut full: Option<u64> = None;
    let mut line_cut = false;
    let mut newlines = 0u64;
    let mut last_byte = None;
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(WindowError::Io(e)),
        };
        let chunk = &buffer[..n];
        if known.is_none() {
            hasher.update(chunk);
        }
        // A file read whole before was text; its window is checked as UTF-8 once, at the end.
        if known.is_none() {
            if memchr::memchr(0, chunk).is_some() {
                return Err(WindowError::Binary);
            }
            check_utf8(&mut utf8_carry, chunk).map_err(|_| WindowError::Binary)?;
        }
        last_byte = chunk.last().copied();
        let mut start = 0;
        loop {
            if full.is_some() || line > last {
                past_window = true;
                if known.is_some() {
                    break;
                }
                // Past the window: the lines are only counted.
                let rest = memchr::memchr_iter(b'\n', &chunk[start..]).count() as u64;
                newlines += rest;
                line += rest;
                break;
            }
            let newline = memchr::memchr(b'\n', &chunk[start..]).map(|i| start + i);
            let end = newline.map_or(chunk.len(), |i| i + 1);
            if full.is_none() && (offset..=last).contains(&line) {
                let part = &chunk[start..end];
                if content.len() + part.len() <= MAX_WINDOW_BYTES {
                    content.extend_from_slice(part);
                } else if line == offset {
                    content.extend_from_slice(&part[..MAX_WINDOW_BYTES - content.len()]);
                    line_cut = true;
                    full = Some(line);
                } else {
                    content.truncate(line_start);
                    full = Some(line - 1);
                }
            }
            match newline {
                Some(_) => {
                    newlines += 1;
                    line += 1;
                    line_start = content.len();
                    start = end;
                    if start == chunk.len() {
                        break;
                    }
                }
                None => break,
            }
        }
        if past_window && known.is_some() {
            break;
        }
    }
    if let Some(known) = known {
        let end_line = full.unwrap_or_else(|| last.min(known.total_lines));
        return Ok(Window {
            content: String::from_utf8(content).map_err(|_| WindowError::Binary)?,
            end_line,
            total_lines: known.total_lines,
            line_cut,
            sha256: known.sha256.clone(),
        });
    }
    if !utf8_carry.is_empty() {
        return Err(WindowError::Binary);
    }
    let total_lines = newlines + u64::from(last_byte.is_some_and(|b| b != b'\n'));
    if line_cut {
        // A cut may fall inside a character: end at the last whole one.
        let whole = std::str::from_utf8(&content).map_or_else(|e| e.valid_up_to(), str::len);
        content.truncate(whole);
    }
    let end_line = full.unwrap_or_else(|| last.min(total_lines));
    Ok(Window {
        content: String::from_utf8(content).map_err(|_| WindowError::Binary)?,
        end_line,
        total_lines,
        line_cut,
        sha256: format!("{:x}", hasher.finalize()),
    })
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use std::os::unix::fs::symlink;

    use kyro_core::{Outcome, ToolError};
    use serde_json::json;

    use kyro_core::policy::PathDenial;

    use crate::testing::{call, denied_path, failed, ok, workspace};

    #[test]
    fn line_numbers_are_written_as_cat_n_writes_them() {
        for n in [0, 1, 9, 10, 99_999, 999_999, 1_000_000, 12_345_678_901, u64::MAX] {
            let mut out = String::new();
            super::push_number(&mut out, n);
            assert_eq!(out, format!("{n:>6}\t"));
        }
    }

    #[test]
    fn reads_a_window_with_line_endings_pipes_and_unicode_kept() {
        let ws = workspace();
        std::fs::write(ws.path().join("f.txt"), "a|b\r\nhé 😀\nthird\nfourth").unwrap();
        let window = ok(call(
            ws.path(),
            "read_file",
            json!({"path": "f.txt", "offset": 2, "limit": 2}),
        ));
        assert_eq!(window["content"], "hé 😀\nthird\n");
        assert_eq!(window["start_line"], 2);
        assert_eq!(window["end_line"], 3);
        assert_eq!(window["total_lines"], 4);
        assert_eq!(window["truncated"], true);
        assert_eq!(window["next_offset"], 4);
        let all = ok(call(ws.path(), "cat", json!({"file_path": "f.txt"})));
        assert_eq!(all["content"], "a|b\r\nhé 😀\nthird\nfourth");
        assert_eq!(all["truncated"], false);
        assert_eq!(
            all["sha256"],
            kyro_core::sha256_hex("a|b\r\nhé 😀\nthird\nfourth".as_bytes())
        );
    }

    #[test]
    fn head_and_tail_read_the_first_or_last_lines_under_the_reference_servers_name() {
        let ws = workspace();
        std::fs::write(ws.path().join("f.txt"), "one\ntwo\nthree\nfour\nfive").unwrap();
        let head = ok(call(ws.path(), "read_text_file", json!({"path": "f.txt", "head": 2})));
        assert_eq!(head["content"], "one\ntwo\n");
        assert_eq!(
            (head["start_line"].clone(), head["next_offset"].clone()),
            (json!(1), json!(3))
        );
        let tail = ok(call(ws.path(), "read_text_file", json!({"path": "f.txt", "tail": 2})));
        assert_eq!(tail["content"], "four\nfive");
        assert_eq!(
            (tail["start_line"].clone(), tail["end_line"].clone()),
            (json!(4), json!(5))
        );
        assert_eq!(tail["truncated"], false);
        assert_eq!(tail["sha256"], kyro_core::sha256_hex(b"one\ntwo\nthree\nfour\nfive"));
        // More lines asked for than the file has: all of them.
        let all = ok(call(ws.path(), "read_file", json!({"path": "f.txt", "tail": 50})));
        assert_eq!(
            (all["start_line"].clone(), all["total_lines"].clone()),
            (json!(1), json!(5))
        );
        std::fs::write(ws.path().join("empty"), "").unwrap();
        let empty = ok(call(ws.path(), "read_file", json!({"path": "empty", "tail": 3})));
        assert_eq!(
            (empty["content"].clone(), empty["end_line"].clone()),
            (json!(""), json!(0))
        );
        for both in [
            json!({"head": 1, "tail": 1}),
            json!({"offset": 2, "tail": 1}),
            json!({"limit": 2, "head": 1}),
        ] {
            let mut arguments = both.clone();
            arguments["path"] = json!("f.txt");
            let error = failed(call(ws.path(), "read_file", arguments));
            assert_eq!(error.kind(), "invalid_request", "{both}");
            assert!(
                error.to_string().contains("one of offset/limit, head or tail"),
                "{error}"
            );
        }
    }

    #[test]
    fn an_empty_file_has_no_lines() {
        let ws = workspace();
        std::fs::write(ws.path().join("empty"), "").unwrap();
        let window = ok(call(ws.path(), "read_file", json!({"path": "empty"})));
        assert_eq!(window["content"], "");
        assert_eq!(window["total_lines"], 0);
        assert_eq!(window["start_line"], 0);
    }

    #[test]
    fn a_very_long_line_survives() {
        let ws = workspace();
        let line = "x|".repeat(500_000);
        std::fs::write(ws.path().join("long"), &line).unwrap();
        let window = ok(call(ws.path(), "read_file", json!({"path": "long"})));
        assert_eq!(window["content"].as_str().unwrap().len(), line.len());
    }

    #[test]
    fn an_offset_past_the_end_is_refused() {
        let ws = workspace();
        std::fs::write(ws.path().join("f"), "one\n").unwrap();
        assert_eq!(
            failed(call(ws.path(), "read_file", json!({"path": "f", "offset": 3}))),
            Failure::OffsetOutOfRange {
                path: "f".into(),
                offset: 3,
                total_lines: 1
            }
            .into()
        );
    }

    #[test]
    fn binary_and_non_utf8_files_are_refused_clearly() {
        let ws = workspace();
        std::fs::write(ws.path().join("nul"), b"ab\0cd").unwrap();
        std::fs::write(ws.path().join("latin1"), b"caf\xe9").unwrap();
        for name in ["nul", "latin1"] {
            assert_eq!(
                Failure::of(&failed(call(ws.path(), "read_file", json!({"path": name})))),
                Some(Failure::BinaryFile { path: name.into() })
            );
        }
    }

    #[test]
    fn missing_files_and_directories_are_typed_failures() {
        let ws = workspace();
        std::fs::create_dir(ws.path().join("dir")).unwrap();
        assert_eq!(
            failed(call(ws.path(), "read_file", json!({"path": "nope.txt"}))),
            ToolError::NotFound {
                path: "nope.txt".into()
            }
        );
        assert_eq!(
            failed(call(ws.path(), "read_file", json!({"path": "dir"}))),
            ToolError::NotAFile { path: "dir".into() }
        );
    }

    #[test]
    fn paths_outside_the_workspace_are_refused() {
        let parent = workspace();
        let root = parent.path().join("root");
        let evil = parent.path().join("root-evil");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&evil).unwrap();
        std::fs::write(evil.join("secret"), "s").unwrap();
        symlink(evil.join("secret"), root.join("link")).unwrap();
        let evil_abs = evil.join("secret").to_string_lossy().into_owned();
        for path in [
            "../root-evil/secret",
            "/etc/passwd",
            evil_abs.as_str(),
            "link",
            "a/../../root-evil/secret",
        ] {
            assert_eq!(
                denied_path(call(&root, "read_file", json!({"path": path}))),
                PathDenial::OutsideRoots,
                "{path}"
            );
        }
    }

    #[test]
    fn an_absolute_path_inside_the_workspace_is_accepted() {
        let ws = workspace();
        std::fs::write(ws.path().join("in"), "ok\n").unwrap();
        let path = ws.path().canonicalize().unwrap().join("in");
        let window = ok(call(ws.path(), "read_file", json!({"path": path})));
        assert_eq!(window["content"], "ok\n");
    }

    #[test]
    fn limits_are_enforced_by_the_schema() {
        let ws = workspace();
        for args in [
            json!({"path": "f", "offset": 0}),
            json!({"path": "f", "limit": 20001}),
            json!({"path": ""}),
        ] {
            assert!(matches!(
                call(ws.path(), "read_file", args),
                Outcome::InvalidArguments { .. }
            ));
        }
    }

    #[test]
    fn a_window_costs_what_it_shows_not_the_file() {
        let ws = workspace();
        // 8 GiB, sparse: one allocation of its size would abort the process.
        let file = std::fs::File::create(ws.path().join("huge")).unwrap();
        file.set_len(8 << 30).unwrap();
        drop(file);
        let mut head = std::fs::OpenOptions::new()
            .write(true)
            .open(ws.path().join("huge"))
            .unwrap();
        std::io::Write::write_all(&mut head, b"first\n").unwrap();
        // Reading it hashes all 8 GiB; the NUL bytes after the first line make it binary,
        // found in the first chunk, so the refusal comes at once and costs nothing.
        assert!(matches!(
            Failure::of(&failed(call(
                ws.path(),
                "read_file",
                json!({"path": "huge", "limit": 1})
            ))),
            Some(Failure::BinaryFile { .. })
        ));
        // A 5 MiB one-line file: the window holds its first 2 MiB, cut at a character.
        let line = "é".repeat(5 * 1024 * 1024 / 2);
        std::fs::write(ws.path().join("one-line"), &line).unwrap();
        let window = ok(call(ws.path(), "read_file", json!({"path": "one-line", "limit": 1})));
        assert_eq!(window["line_cut"], true);
        assert_eq!(window["content"].as_str().unwrap().len(), 2 * 1024 * 1024);
        assert_eq!(window["total_lines"], 1);
        assert_eq!(window["sha256"], kyro_core::sha256_hex(line.as_bytes()));
        // Whole lines that do not fit end the window early, with the offset to go on.
        let lines = format!("{}\n", "y".repeat(1024 * 1024)).repeat(3);
        std::fs::write(ws.path().join("three"), &lines).unwrap();
        let window = ok(call(ws.path(), "read_file", json!({"path": "three"})));
        assert_eq!(
            (
                window["end_line"].clone(),
                window["next_offset"].clone(),
                window["line_cut"].clone()
            ),
            (json!(1), json!(2), json!(false))
        );
    }
}
