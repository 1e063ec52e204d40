//! Awkward content survives every file tool unchanged: pipes, Unicode, CRLF, empty files
//! and very long lines.

use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::{Value, json};

fn runtime(root: &std::path::Path) -> Runtime {
    let policy = Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        ..Policy::default()
    };
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    Runtime::new(registry, Workspace::new(root).unwrap(), &policy).unwrap()
}

fn ok(rt: &Runtime, tool: &str, args: Value) -> Value {
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(rt.execute_call(Call::new(tool, args)));
    match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{tool}: {other:?}"),
    }
}

#[test]
fn awkward_content_survives_every_file_tool() {
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path());
    let long_line = "ж|".repeat(100_000);
    let contents = [
        String::new(),
        "a | b || c\r\nsecond\r\n".to_owned(),
        "日本語 😀 e\u{301}\n\tindent\n".to_owned(),
        format!("{long_line}\nend"),
        "no final newline".to_owned(),
    ];
    for (i, content) in contents.iter().enumerate() {
        let name = format!("dir é/file|{i}.txt");
        ok(
            &rt,
            "write_file",
            json!({"path": name, "content": content, "create_dirs": true}),
        );
        assert_eq!(&std::fs::read_to_string(ws.path().join(&name)).unwrap(), content);
        let read = ok(&rt, "read_file", json!({"path": name}));
        assert_eq!(read["content"].as_str().unwrap(), content);
        let many = ok(
            &rt,
            "read_many_files",
            json!({"paths": [name], "max_bytes_per_file": 1048576}),
        );
        assert_eq!(many["files"][0]["content"].as_str().unwrap(), content);
        let copy = format!("copies/{i}|copy.txt");
        ok(&rt, "make_directory", json!({"path": "copies"}));
        ok(
            &rt,
            "copy_path",
            json!({"source": name, "destination": copy, "overwrite": true}),
        );
        assert_eq!(&std::fs::read_to_string(ws.path().join(&copy)).unwrap(), content);
        let moved = format!("moved/{i}.txt");
        ok(&rt, "make_directory", json!({"path": "moved"}));
        ok(&rt, "move_path", json!({"source": copy, "destination": moved}));
        assert_eq!(&std::fs::read_to_string(ws.path().join(&moved)).unwrap(), content);
        if !content.is_empty() {
            let marker = format!("{content}<<end>>");
            ok(&rt, "write_file", json!({"path": moved, "content": marker}));
            ok(
                &rt,
                "edit_file",
                json!({"path": moved, "old_text": "<<end>>", "new_text": ""}),
            );
            assert_eq!(&std::fs::read_to_string(ws.path().join(&moved)).unwrap(), content);
        }
    }
    let found = ok(&rt, "grep", json!({"pattern": "a | b || c", "fixed_strings": true}));
    assert_eq!(
        found["matches"].as_array().unwrap().len(),
        2,
        "the original and the moved copy: {found}"
    );
    let listed = ok(&rt, "glob", json!({"pattern": "**/*|*.txt"}));
    assert_eq!(listed["paths"].as_array().unwrap().len(), contents.len());
}

/// read_file remembers the hash and line count of a file untouched for two seconds, and
/// then reads only the window; a write of the same size, in the same second, is still seen:
/// the file's change time moved, so it is read whole again. Without that rule the second
/// read would give the old hash.
#[test]
fn a_remembered_file_rewritten_in_place_is_read_anew() {
    use sha2::Digest;
    let ws = tempfile::tempdir().unwrap();
    let rt = runtime(ws.path());
    let path = ws.path().join("settled.txt");
    let text = |tag: &str| (1..=500).map(|n| format!("{tag} line {n}\n")).collect::<String>();
    let sha = |text: &str| format!("{:x}", sha2::Sha256::digest(text.as_bytes()));
    std::fs::write(&path, text("old")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let window = json!({"path": "settled.txt", "offset": 11, "limit": 5});
    for _ in 0..2 {
        // Read whole (and remembered), then from memory: the same answer both times.
        let read = ok(&rt, "read_file", window.clone());
        assert_eq!(read["sha256"], sha(&text("old")));
        assert_eq!(read["total_lines"], 500);
        assert_eq!(
            read["content"],
            "old line 11\nold line 12\nold line 13\nold line 14\nold line 15\n"
        );
    }
    // Same size, written now: a new identity.
    std::fs::write(&path, text("new")).unwrap();
    let read = ok(&rt, "read_file", window.clone());
    assert_eq!(read["sha256"], sha(&text("new")));
    assert_eq!(
        read["content"],
        "new line 11\nnew line 12\nnew line 13\nnew line 14\nnew line 15\n"
    );
    // A later window of the remembered file, past the first one read.
    let tail = ok(&rt, "read_file", json!({"path": "settled.txt", "offset": 499}));
    assert_eq!(tail["content"], "new line 499\nnew line 500\n");
    assert_eq!(tail["truncated"], false);
}
