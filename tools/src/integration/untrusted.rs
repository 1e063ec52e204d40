//! Text a remote party wrote (an issue's title, a page, an error message), made to show as
//! itself: what program output gets (C0 and C1 controls as visible pictures, so ESC, BEL,
//! a lone CR and NUL drive nothing) and what an approval summary gets (bidirectional
//! overrides and invisible format characters escaped, so nothing reorders or hides text).

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
        // An emoji's variation selector shapes visible text and stays.
        assert_eq!(shown("ok \u{2764}\u{FE0F}"), "ok \u{2764}\u{FE0F}");
    }
}
