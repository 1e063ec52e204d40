//! Text a remote party wrote (an issue's title, a page, an error message), made to show as
//! itself: what program output gets (C0 and C1 controls as visible pictures, so ESC, BEL,
//! a lone CR and NUL drive nothing) and what an approval summary gets (bidirectional
//! overrides and invisible format characters escaped, so nothing reorders or hides text).

use serde_json::Value;

/// `text` as it may be shown: controls visible, bidi overrides and invisibles escaped.
pub(crate) fn shown(text: &str) -> String {
    let hidden = kyro_core::policy::invisible;
    let visible = crate::shell::visible(text);
    if !visible.chars().any(hidden) {
        return visible;
    }
    let mut out = String::with_capacity(visible.len() + 16);
    for c in visible.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Every string in `value` (keys too) made [`shown`], in place.
pub(crate) fn show_all(value: &mut Value) {
    match value {
        Value::String(text) if needs(text) => *text = shown(text),
        Value::Array(items) => items.iter_mut().for_each(show_all),
        Value::Object(map) => {
            if map.keys().any(|k| needs(k)) {
                let taken = std::mem::take(map);
                *map = taken
                    .into_iter()
                    .map(|(k, mut v)| {
                        show_all(&mut v);
                        (if needs(&k) { shown(&k) } else { k }, v)
                    })
                    .collect();
            } else {
                map.values_mut().for_each(show_all);
            }
        }
        _ => {}
    }
}

fn needs(text: &str) -> bool {
    text.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || kyro_core::policy::invisible(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_overrides_show_as_themselves() {
        // Unicode tags spell "IGNORE" invisibly; U+2028 breaks a line unseen.
        let text = "title\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\rback\0\u{202E}txt.exe\u{200B}\nnext\tcol\u{E0049}\u{E0047}\u{E004E}\u{2028}\u{180E}";
        let out = shown(text);
        for hidden in [
            '\u{1b}',
            '\u{7}',
            '\r',
            '\0',
            '\u{202E}',
            '\u{200B}',
            '\u{E0049}',
            '\u{2028}',
            '\u{180E}',
        ] {
            assert!(!out.contains(hidden), "{hidden:?} in {out:?}");
        }
        assert!(
            out.contains("\\u{202E}") && out.contains('\n') && out.contains('\t'),
            "{out}"
        );
        let mut value = serde_json::json!({"a\u{1b}": ["x\u{7}", {"b": "\u{2066}y"}], "n": 1});
        show_all(&mut value);
        let json = value.to_string();
        assert!(
            !json.contains("\\u001b") && !json.contains("\\u0007") && !json.contains('\u{2066}'),
            "{json}"
        );
    }
}
