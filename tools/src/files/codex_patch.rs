//! Codex's patch envelope (`*** Begin Patch` ... `*** End Patch`), as its `apply_patch`
//! tool takes it: files added, deleted, or updated (and moved) by hunks of context, found
//! by content rather than line numbers.

/// One file's part of an envelope.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FileChange {
    /// `*** Add File: path`, its lines each after a `+`.
    Add { path: String, content: String },
    /// `*** Delete File: path`.
    Delete { path: String },
    /// `*** Update File: path`, with `*** Move to: path` when it moves.
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One `@@` hunk of an update.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Chunk {
    /// The line after `@@ `, found first (a function's signature, say).
    pub context: Option<String>,
    /// The lines the hunk replaces (context and `-` lines).
    pub old: Vec<String>,
    /// The lines it puts there (context and `+` lines).
    pub new: Vec<String>,
    /// `*** End of File`: the old lines end the file.
    pub end_of_file: bool,
}

/// True when `patch` is an envelope rather than a unified diff.
pub(super) fn is_envelope(patch: &str) -> bool {
    patch.trim_start().starts_with("*** Begin Patch")
}

/// Parses an envelope; the error says which line is wrong and what was expected.
pub(super) fn parse(patch: &str) -> Result<Vec<FileChange>, String> {
    let lines: Vec<&str> = patch.trim().lines().collect();
    if lines.first().map(|l| l.trim()) != Some("*** Begin Patch") {
        return Err("the patch must start with `*** Begin Patch`".into());
    }
    if lines.last().map(|l| l.trim()) != Some("*** End Patch") {
        return Err("the patch must end with `*** End Patch`".into());
    }
    let body = &lines[1..lines.len() - 1];
    let mut changes = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        let at = |what: &str| format!("line {}: {what}", i + 2);
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            i += 1;
            let mut content = String::new();
            while i < body.len() && !body[i].starts_with("*** ") {
                let Some(added) = body[i].strip_prefix('+') else {
                    return Err(format!("line {}: every line of an added file starts with `+`", i + 2));
                };
                content.push_str(added);
                content.push('\n');
                i += 1;
            }
            changes.push(FileChange::Add {
                path: path.trim().to_owned(),
                content,
            });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            changes.push(FileChange::Delete {
                path: path.trim().to_owned(),
            });
            i += 1;
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            i += 1;
            let move_to = match body.get(i).and_then(|l| l.strip_prefix("*** Move to: ")) {
                Some(to) => {
                    i += 1;
                    Some(to.trim().to_owned())
                }
                None => None,
            };
            let mut chunks: Vec<Chunk> = Vec::new();
            while i < body.len() {
                let line = body[i];
                if line == "*** End of File" {
                    match chunks.last_mut() {
                        Some(chunk) => chunk.end_of_file = true,
                        None => return Err(format!("line {}: `*** End of File` before any hunk", i + 2)),
                    }
                    i += 1;
                    continue;
                }
                if line.starts_with("*** ") {
                    break;
                }
                if let Some(rest) = line.strip_prefix("@@") {
                    let context = rest.trim();
                    chunks.push(Chunk {
                        context: (!context.is_empty()).then(|| context.to_owned()),
                        ..Chunk::default()
                    });
                    i += 1;
                    continue;
                }
                // The first hunk may start without `@@`.
                if chunks.is_empty() {
                    chunks.push(Chunk::default());
                }
                let chunk = chunks.last_mut().expect("one pushed");
                match line.chars().next() {
                    Some('+') => chunk.new.push(line[1..].to_owned()),
                    Some('-') => chunk.old.push(line[1..].to_owned()),
                    Some(' ') => {
                        chunk.old.push(line[1..].to_owned());
                        chunk.new.push(line[1..].to_owned());
                    }
                    // An empty line is an empty context line.
                    None => {
                        chunk.old.push(String::new());
                        chunk.new.push(String::new());
                    }
                    Some(_) => {
                        return Err(format!(
                            "line {}: a hunk line starts with ` `, `-` or `+`, found `{line}`",
                            i + 2
                        ));
                    }
                }
                i += 1;
            }
            if chunks.iter().all(|c| c.old.is_empty() && c.new.is_empty()) && move_to.is_none() {
                return Err(format!("the update of `{}` has no hunk", path.trim()));
            }
            changes.push(FileChange::Update {
                path: path.trim().to_owned(),
                move_to,
                chunks,
            });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return Err(at(&format!(
                "expected `*** Add File: `, `*** Delete File: ` or `*** Update File: `, found `{line}`"
            )));
        }
    }
    if changes.is_empty() {
        return Err("the patch changes no file".into());
    }
    Ok(changes)
}

/// Applies an update's hunks to `original`, each found at or after the one before: exactly,
/// then ignoring trailing whitespace, then ignoring surrounding whitespace. The result ends
/// with a newline.
pub(super) fn apply(original: &str, chunks: &[Chunk], stopped: &dyn Fn() -> bool) -> Result<String, String> {
    let mut lines: Vec<String> = original.split('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let mut cursor = 0;
    for (n, chunk) in chunks.iter().enumerate() {
        if let Some(context) = &chunk.context {
            let found = seek(&lines, std::slice::from_ref(context), cursor, false, stopped)
                .ok_or_else(|| format!("hunk {}: the context line `{context}` was not found", n + 1))?;
            cursor = found + 1;
        }
        if chunk.old.is_empty() {
            // Only additions: at the end of the file.
            let at = lines.len();
            lines.splice(at..at, chunk.new.iter().cloned());
            cursor = lines.len();
            continue;
        }
        let mut old: &[String] = &chunk.old;
        let mut new: &[String] = &chunk.new;
        let mut found = seek(&lines, old, cursor, chunk.end_of_file, stopped);
        // A hunk ending in an empty line may stand for the file's final newline.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, cursor, chunk.end_of_file, stopped);
        }
        let at = found.ok_or_else(|| {
            format!(
                "hunk {}: the lines to replace were not found{}:\n{}",
                n + 1,
                if cursor > 0 { " after the hunk before" } else { "" },
                chunk.old.join("\n")
            )
        })?;
        lines.splice(at..at + old.len(), new.iter().cloned());
        cursor = at + new.len();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

/// A line as one pass of [`seek`] compares it: exact, then without trailing whitespace,
/// then without surrounding whitespace.
fn normal(line: &str, how: u8) -> &str {
    match how {
        0 => line,
        1 => line.trim_end(),
        _ => line.trim(),
    }
}

/// The first index at or after `from` where `pattern` matches, at the end first when
/// `end_of_file`; exact, then with trailing, then all surrounding whitespace ignored. Gives
/// up (`None`) once `stopped` says the call is over: a search is lines times hunk lines.
fn seek(
    lines: &[String],
    pattern: &[String],
    from: usize,
    end_of_file: bool,
    stopped: &dyn Fn() -> bool,
) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let matches = |at: usize, how: u8| {
        pattern
            .iter()
            .enumerate()
            .all(|(k, p)| normal(&lines[at + k], how) == normal(p, how))
    };
    let last = lines.len() - pattern.len();
    for eq in 0..3u8 {
        if end_of_file && last >= from && matches(last, eq) {
            return Some(last);
        }
        for at in from..=last {
            if at % 4096 == 0 && stopped() {
                return None;
            }
            if matches(at, eq) {
                return Some(at);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_change() {
        let patch = "*** Begin Patch\n*** Add File: hello.txt\n+Hello\n+world\n*** Update File: src/app.py\n*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello, world!\")\n*** End of File\n*** Delete File: obsolete.txt\n*** End Patch\n";
        let changes = parse(patch).unwrap();
        assert_eq!(
            changes[0],
            FileChange::Add {
                path: "hello.txt".into(),
                content: "Hello\nworld\n".into()
            }
        );
        assert_eq!(
            changes[1],
            FileChange::Update {
                path: "src/app.py".into(),
                move_to: Some("src/main.py".into()),
                chunks: vec![Chunk {
                    context: Some("def greet():".into()),
                    old: vec!["print(\"Hi\")".into()],
                    new: vec!["print(\"Hello, world!\")".into()],
                    end_of_file: true,
                }],
            }
        );
        assert_eq!(
            changes[2],
            FileChange::Delete {
                path: "obsolete.txt".into()
            }
        );
    }

    #[test]
    fn malformed_envelopes_say_what_is_wrong() {
        for (patch, says) in [
            ("*** Begin Patch\n*** Add File: a\n+x\n", "end with `*** End Patch`"),
            ("*** Begin Patch\n*** End Patch", "changes no file"),
            (
                "*** Begin Patch\n*** Frobnicate: a\n*** End Patch",
                "line 2: expected `*** Add File: `",
            ),
            (
                "*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
                "line 3: every line of an added file",
            ),
            ("*** Begin Patch\n*** Update File: a\n*** End Patch", "has no hunk"),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n x\n!y\n*** End Patch",
                "line 5: a hunk line starts with",
            ),
        ] {
            let error = parse(patch).unwrap_err();
            assert!(error.contains(says), "{patch:?}: {error}");
        }
    }

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str], end_of_file: bool) -> Chunk {
        Chunk {
            context: context.map(str::to_owned),
            old: old.iter().map(|s| s.to_string()).collect(),
            new: new.iter().map(|s| s.to_string()).collect(),
            end_of_file,
        }
    }

    #[test]
    fn hunks_are_found_by_context_in_order_and_whitespace_is_forgiven_last() {
        let original = "fn a() {\n    x();\n}\nfn b() {\n    x();\n}\n";
        // The context line moves the search past a's `x();` to b's.
        let patched = apply(
            original,
            &[chunk(Some("fn b() {"), &["    x();"], &["    y();"], false)],
            &|| false,
        )
        .unwrap();
        assert_eq!(patched, "fn a() {\n    x();\n}\nfn b() {\n    y();\n}\n");
        // Two hunks in order; the second found after the first.
        let patched = apply(
            original,
            &[
                chunk(None, &["    x();"], &["    one();"], false),
                chunk(None, &["    x();"], &["    two();"], false),
            ],
            &|| false,
        )
        .unwrap();
        assert_eq!(patched, "fn a() {\n    one();\n}\nfn b() {\n    two();\n}\n");
        // Trailing whitespace in the hunk is forgiven.
        let patched = apply("a  \nb\n", &[chunk(None, &["a", "b"], &["c"], false)], &|| false).unwrap();
        assert_eq!(patched, "c\n");
        // End of file anchors at the end; pure additions go there too.
        let patched = apply("x\ny\nx\n", &[chunk(None, &["x"], &["z"], true)], &|| false).unwrap();
        assert_eq!(patched, "x\ny\nz\n");
        let patched = apply("x\n", &[chunk(None, &[], &["added"], false)], &|| false).unwrap();
        assert_eq!(patched, "x\nadded\n");
        let error = apply("x\n", &[chunk(None, &["missing"], &["y"], false)], &|| false).unwrap_err();
        assert!(error.contains("hunk 1: the lines to replace were not found"), "{error}");
        let error = apply("x\n", &[chunk(Some("nowhere"), &["x"], &["y"], false)], &|| false).unwrap_err();
        assert!(error.contains("context line `nowhere`"), "{error}");
        // A call that is over stops searching: the hunk is not found.
        let long: String = "a\n".repeat(10_000);
        let error = apply(&long, &[chunk(None, &["a", "b"], &["c"], false)], &|| true).unwrap_err();
        assert!(error.contains("hunk 1: the lines to replace were not found"), "{error}");
    }
}
