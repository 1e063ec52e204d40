//! What kyro tells an operator on stderr: `kyro: MESSAGE` a line by default, or under
//! `--log-json` ([`set_json`]) one JSON object a line (`ts_ms`, `level`, `msg` and the
//! line's own fields), so that a log collector reads every line kyro writes. Every crate
//! of kyro writes its operator lines here; a closed stderr loses a line rather than
//! failing what wrote it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

static JSON: AtomicBool = AtomicBool::new(false);
static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The name a plain line starts with (an author's server goes by its own); `kyro` unless
/// set, and set once.
pub fn set_program(name: &str) {
    let _ = PROGRAM.set(name.to_owned());
}

fn program() -> &'static str {
    PROGRAM.get().map_or("kyro", String::as_str)
}

/// How much a line matters to an operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// What the server does (it serves, where, with what).
    Info,
    /// Something refused or degraded that the server survives.
    Warn,
    /// Something that stops what it concerns (receipts not written, a start refused).
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Writes every later line as one JSON object (`--log-json`); a panic's message too.
pub fn set_json(on: bool) {
    let was = JSON.swap(on, Ordering::Relaxed);
    if on && !was {
        let plain = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !is_json() {
                return plain(info);
            }
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            line(
                Level::Error,
                &format!("panic: {message}"),
                &[("at", Value::from(place))],
            );
        }));
    }
}

/// Whether lines are JSON objects.
pub fn is_json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// A line at `level`: `kyro: MESSAGE` (the program's name; each field as ` key=value`), or a JSON object
/// holding the fields beside `ts_ms`, `level` and `msg`.
pub fn line(level: Level, message: &str, fields: &[(&str, Value)]) {
    let text = if is_json() {
        let mut object = Map::new();
        object.insert("ts_ms".into(), crate::grants::now_ms().into());
        object.insert("level".into(), level.as_str().into());
        object.insert("msg".into(), message.into());
        for (key, value) in fields {
            object.insert((*key).to_owned(), value.clone());
        }
        let mut text = Value::Object(object).to_string();
        text.push('\n');
        text
    } else {
        // One line an event: a message of several lines (a TOML error's) is joined, and
        // what a client sent (a token's subject, a Host) cannot write a line or a terminal
        // escape of its own.
        let mut text = format!("{}: {}", program(), plain(message.trim_end()));
        for (key, value) in fields {
            match value {
                Value::Null => {}
                Value::String(s) => text.push_str(&format!(" {key}={}", quoted(&plain(s)))),
                other => text.push_str(&format!(" {key}={other}")),
            }
        }
        text.push('\n');
        text
    };
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `text` on one line: a line break is a space, any other control character (and a
/// character that reorders or breaks what a terminal shows) escaped.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push(' '),
            c if c.is_control()
                || matches!(c, '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                out.extend(c.escape_default())
            }
            c => out.push(c),
        }
    }
    out
}

/// A field's value as `key=value` holds it: quoted (`"`, `\` escaped) when it has a space,
/// `=` or `"`, so no value reads as more fields.
fn quoted(value: &str) -> String {
    if value.is_empty() || value.contains([' ', '=', '"']) {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        value.to_owned()
    }
}

/// An [`Level::Info`] line without fields.
pub fn info(message: &str) {
    line(Level::Info, message, &[]);
}

/// A [`Level::Warn`] line without fields.
pub fn warn(message: &str) {
    line(Level::Warn, message, &[]);
}

/// A [`Level::Error`] line without fields.
pub fn error(message: &str) {
    line(Level::Error, message, &[]);
}

/// Writes `object` (a record of its own, such as a call's) as it is under `--log-json`;
/// without it, nothing.
pub fn record(object: Value) {
    if is_json() {
        let mut text = object.to_string();
        text.push('\n');
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_plain_line_is_one_line_without_escapes_a_client_sent() {
        assert_eq!(super::plain("a\nb"), "a b");
        assert_eq!(super::plain("sub\u{1b}[31mred\r\n"), "sub\\u{1b}[31mred\\r ");
        assert_eq!(super::plain("a\u{202e}b"), "a\\u{202e}b");
        // A value cannot pass for more fields.
        assert_eq!(super::quoted("x caller=alice"), "\"x caller=alice\"");
        assert_eq!(super::quoted("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(super::quoted("plain"), "plain");
    }
}
