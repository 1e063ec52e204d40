//! The text block of a call's answer: meant for reading. A tool's own rendering
//! (`Execute::text`) when it has one, otherwise this default: each field on its own line,
//! text fields as their lines (not as escaped JSON), lists one item a line. `--text json`
//! keeps the spec's serialized JSON for clients that want it.

use serde_json::Value;

/// What the text block of a successful call holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TextMode {
    /// The tool's rendering, or the default readable one.
    #[default]
    Readable,
    /// The result's JSON, as the structured content (for clients that parse the text).
    Json,
}

/// The readable rendering of a result object.
pub(super) fn readable(result: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, result, 0);
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("none".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.contains('\n') => Some(s.clone()),
        Value::Array(items) if items.is_empty() => Some("(none)".into()),
        Value::Object(map) if map.is_empty() => Some("(empty)".into()),
        _ => None,
    }
}

fn write_value(out: &mut String, value: &Value, indent: usize) {
    let pad = "  ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, field) in map {
                match scalar(field) {
                    Some(text) => out.push_str(&format!("{pad}{key}: {text}\n")),
                    None => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        write_value(out, field, indent + 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match scalar(item) {
                    Some(text) => out.push_str(&format!("{pad}- {text}\n")),
                    None => {
                        out.push_str(&format!("{pad}-\n"));
                        write_value(out, item, indent + 1);
                    }
                }
            }
        }
        Value::String(text) => {
            for line in text.split_inclusive('\n') {
                out.push_str(&pad);
                out.push_str(line);
            }
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other).unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::readable;

    #[test]
    fn fields_lines_and_lists_read_as_text_not_json() {
        let text = readable(&json!({
            "path": "x.txt",
            "content": "line one\n\ttabbed \"quoted\"\n",
            "count": 2,
            "tags": ["a", "b"],
            "entries": [{"name": "a", "size": 1}],
            "none": null
        }));
        assert_eq!(
            text,
            "path: x.txt\ncontent:\n  line one\n  \ttabbed \"quoted\"\ncount: 2\ntags:\n  - a\n  - b\nentries:\n  -\n    name: a\n    size: 1\nnone: none"
        );
    }
}
