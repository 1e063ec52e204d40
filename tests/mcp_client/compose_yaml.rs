//! A reader of the YAML docs/deploy/compose.yaml is written in, and no more: block
//! mappings and sequences by indentation, flow sequences (on one line or several), plain,
//! single- and double-quoted scalars and comments; and compose's interpolation
//! (`${NAME}`, `${NAME:-default}`, `${NAME:?message}`, `$$`). What it does not read
//! (anchors, aliases, flow mappings, block scalars, tags) is refused with its line, so an
//! edit of the compose file this reader cannot follow fails its test saying so.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Yaml {
    Null,
    Scalar(String),
    List(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    /// The value of `key` in a mapping.
    pub(super) fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn str(&self) -> Option<&str> {
        match self {
            Yaml::Scalar(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn list(&self) -> &[Yaml] {
        match self {
            Yaml::List(items) => items,
            other => panic!("a sequence was expected, found {other:?}"),
        }
    }

    pub(super) fn entries(&self) -> &[(String, Yaml)] {
        match self {
            Yaml::Map(entries) => entries,
            other => panic!("a mapping was expected, found {other:?}"),
        }
    }

    /// The scalars of a sequence.
    pub(super) fn strings(&self) -> Vec<&str> {
        self.list()
            .iter()
            .map(|item| {
                item.str()
                    .unwrap_or_else(|| panic!("a scalar was expected, found {item:?}"))
            })
            .collect()
    }
}

/// One line with content: its number, its indentation and its text without the comment.
struct Line {
    number: usize,
    indent: usize,
    text: String,
}

pub(super) fn parse(source: &str) -> Result<Yaml, String> {
    let mut lines = Vec::new();
    for (n, raw) in source.lines().enumerate() {
        let text = strip_comment(raw).trim_end().to_owned();
        let content = text.trim_start();
        if content.is_empty() {
            continue;
        }
        let indent = text.len() - content.len();
        if text[..indent].contains('\t') {
            return Err(format!("line {}: a tab in the indentation", n + 1));
        }
        lines.push(Line {
            number: n + 1,
            indent,
            text: content.to_owned(),
        });
    }
    if lines.is_empty() {
        return Ok(Yaml::Null);
    }
    let mut at = 0;
    let document = block(&lines, &mut at, lines[0].indent)?;
    match lines.get(at) {
        Some(line) => Err(format!("line {}: indented less than the document", line.number)),
        None => Ok(document),
    }
}

/// The characters of `text` outside quotes, with their offsets. A quote opens a quoted
/// scalar only where one may start (after a space, `[` or `,`), so the apostrophe of a
/// plain `it's` opens nothing.
fn outside_quotes(text: &str) -> Vec<(usize, char)> {
    let (mut quote, mut previous, mut out) = (None, ' ', Vec::new());
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, '"' | '\'') && (previous.is_whitespace() || matches!(previous, '[' | ',')) => {
                quote = Some(c)
            }
            None => out.push((i, c)),
        }
        previous = c;
    }
    out
}

/// The text of a line before its comment (a `#` outside quotes, at the start or after a
/// space).
fn strip_comment(line: &str) -> &str {
    outside_quotes(line)
        .into_iter()
        .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with(char::is_whitespace)))
        .map_or(line, |(i, _)| &line[..i])
}

/// The block (a mapping or a sequence) whose lines start at `indent`.
fn block(lines: &[Line], at: &mut usize, indent: usize) -> Result<Yaml, String> {
    let is_item = |text: &str| text == "-" || text.starts_with("- ");
    if is_item(&lines[*at].text) {
        let mut items = Vec::new();
        while let Some(line) = lines.get(*at).filter(|l| l.indent == indent && is_item(&l.text)) {
            let rest = line.text[1..].trim_start();
            *at += 1;
            if rest.is_empty() {
                items.push(nested(lines, at, indent, false)?);
            } else if key_and_value(rest).is_some() && !rest.starts_with(['"', '\'', '[']) {
                return Err(format!(
                    "line {}: a mapping inside a sequence is not read here",
                    line.number
                ));
            } else {
                items.push(inline(rest, lines, at, line.number)?);
            }
        }
        return Ok(Yaml::List(items));
    }
    let mut entries: Vec<(String, Yaml)> = Vec::new();
    while let Some(line) = lines.get(*at).filter(|l| l.indent == indent) {
        let (key, rest) =
            key_and_value(&line.text).ok_or_else(|| format!("line {}: `key: value` was expected", line.number))?;
        let key = unquote(key).ok_or_else(|| format!("line {}: an unreadable key", line.number))?;
        if key == "<<" || entries.iter().any(|(k, _)| *k == key) {
            return Err(format!("line {}: `{key}` merged or repeated", line.number));
        }
        *at += 1;
        let value = if rest.is_empty() {
            nested(lines, at, indent, true)?
        } else {
            inline(rest, lines, at, line.number)?
        };
        entries.push((key, value));
    }
    if let Some(line) = lines.get(*at).filter(|l| l.indent > indent) {
        return Err(format!("line {}: indented more than its mapping", line.number));
    }
    Ok(Yaml::Map(entries))
}

/// The value under a key or an item with nothing after it: a deeper block (or, under a
/// key, a sequence at the key's own indentation), else null.
fn nested(lines: &[Line], at: &mut usize, indent: usize, under_key: bool) -> Result<Yaml, String> {
    match lines.get(*at) {
        Some(next) if next.indent > indent => block(lines, at, next.indent),
        Some(next) if under_key && next.indent == indent && next.text.starts_with("- ") => block(lines, at, indent),
        _ => Ok(Yaml::Null),
    }
}

/// `key: value` split at the first `: ` (or a final `:`) outside quotes.
fn key_and_value(text: &str) -> Option<(&str, &str)> {
    outside_quotes(text)
        .into_iter()
        .find(|&(i, c)| c == ':' && (text[i + 1..].is_empty() || text[i + 1..].starts_with(' ')))
        .map(|(i, _)| (text[..i].trim_end(), text[i + 1..].trim_start()))
}

/// A value written on the line: a flow sequence (which may go on over the next lines) or
/// a scalar.
fn inline(text: &str, lines: &[Line], at: &mut usize, number: usize) -> Result<Yaml, String> {
    if text.starts_with(['{', '&', '*', '|', '>', '!', '%', '@', '`']) {
        return Err(format!("line {number}: `{text}` is YAML this reader does not read"));
    }
    if !text.starts_with('[') {
        return unquote(text)
            .map(Yaml::Scalar)
            .ok_or_else(|| format!("line {number}: an unreadable scalar `{text}`"));
    }
    let mut flow = text.to_owned();
    while !closed(&flow) {
        let next = lines
            .get(*at)
            .ok_or_else(|| format!("line {number}: a `[` never closed"))?;
        flow.push(' ');
        flow.push_str(&next.text);
        *at += 1;
    }
    let inner = flow.trim().strip_prefix('[').and_then(|f| f.strip_suffix(']'));
    let inner = inner.ok_or_else(|| format!("line {number}: text after a flow sequence"))?;
    let mut items = Vec::new();
    for item in split_commas(inner) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if item.starts_with(['[', '{']) {
            return Err(format!("line {number}: nested flow collections are not read here"));
        }
        items.push(Yaml::Scalar(
            unquote(item).ok_or_else(|| format!("line {number}: an unreadable item `{item}`"))?,
        ));
    }
    Ok(Yaml::List(items))
}

/// Whether every `[` outside quotes has its `]`.
fn closed(flow: &str) -> bool {
    let depth: i32 = outside_quotes(flow)
        .iter()
        .map(|&(_, c)| match c {
            '[' => 1,
            ']' => -1,
            _ => 0,
        })
        .sum();
    depth == 0
}

fn split_commas(inner: &str) -> Vec<&str> {
    let (mut start, mut parts) = (0, Vec::new());
    for (i, c) in outside_quotes(inner) {
        if c == ',' {
            parts.push(&inner[start..i]);
            start = i + 1;
        }
    }
    parts.push(&inner[start..]);
    parts
}

/// A scalar's value: plain as written, `'...'` with `''` for a quote, `"..."` with its
/// escapes.
fn unquote(text: &str) -> Option<String> {
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        return (!inner.replace("''", "").contains('\'')).then(|| inner.replace("''", "'"));
    }
    let Some(inner) = text.strip_prefix('"') else {
        return Some(text.to_owned());
    };
    let inner = inner.strip_suffix('"')?;
    let (mut out, mut chars) = (String::new(), inner.chars());
    while let Some(c) = chars.next() {
        match c {
            '"' => return None,
            '\\' => out.push(match chars.next()? {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                c @ ('\\' | '"' | '/') => c,
                _ => return None,
            }),
            c => out.push(c),
        }
    }
    Some(out)
}

/// `text` with compose's variables replaced by `value(NAME)`: `${NAME}` (empty when
/// unset), `${NAME:-default}` (also when empty), `${NAME-default}`, `${NAME:?message}`
/// and `${NAME?message}` (an error when unset), `$NAME`, and `$$` for a `$`.
pub(super) fn interpolate(text: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(braced) = after.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or_else(|| format!("`{text}`: a `${{` never closed"))?;
            let expression = &braced[..end];
            let name_end = expression
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(expression.len());
            let (name, operator) = expression.split_at(name_end);
            let set = value(name);
            let nonempty = set.clone().filter(|v| !v.is_empty());
            out.push_str(&match operator {
                "" => set.unwrap_or_default(),
                _ if operator.starts_with(":-") => nonempty.unwrap_or_else(|| operator[2..].to_owned()),
                _ if operator.starts_with('-') => set.unwrap_or_else(|| operator[1..].to_owned()),
                _ if operator.starts_with(":?") => nonempty.ok_or_else(|| format!("{name}: {}", &operator[2..]))?,
                _ if operator.starts_with('?') => set.ok_or_else(|| format!("{name}: {}", &operator[1..]))?,
                _ => return Err(format!("`${{{expression}}}` is interpolation this reader does not do")),
            });
            rest = &braced[end + 1..];
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if end == 0 {
                return Err(format!("`{text}`: a `$` alone (write `$$`)"));
            }
            out.push_str(&value(&after[..end]).unwrap_or_default());
            rest = &after[end..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn the_compose_reader_reads_what_the_compose_file_uses_and_refuses_the_rest() {
    let read = parse(concat!(
        "a:\n  b: plain text # a comment\n  c: ['x', \"y z\", it''s,\n    \"#not a comment\",\n  ]\n",
        "  d:\n  - one\n  - 'two: 2'\n  e:\n    - \"q\\\"q\"\n  f:\n",
    ))
    .unwrap();
    let a = read.get("a").unwrap();
    assert_eq!(a.get("b").unwrap().str(), Some("plain text"));
    assert_eq!(a.get("c").unwrap().strings(), ["x", "y z", "it''s", "#not a comment"]);
    assert_eq!(a.get("d").unwrap().strings(), ["one", "two: 2"]);
    assert_eq!(a.get("e").unwrap().strings(), ["q\"q"]);
    assert_eq!(a.get("f"), Some(&Yaml::Null));
    for refused in [
        "a: &anchor x\n",
        "a: *anchor\n",
        "a: {b: c}\n",
        "a: |\n  text\n",
        "a: x\na: y\n",
        "a:\n  - b: c\n",
        "a: [x\n",
        "a: x\n    b: y\n",
        "<<: x\n",
    ] {
        assert!(parse(refused).is_err(), "{refused:?}");
    }
    let vars = |name: &str| match name {
        "SET" => Some("v".to_owned()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    let cases = [
        ("${SET}/$SET/$$SET", "v/v/$SET"),
        ("${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${UNSET-d}", "d d  d"),
        ("${UNSET}.", "."),
    ];
    for (text, expected) in cases {
        assert_eq!(interpolate(text, &vars).unwrap(), expected, "{text}");
    }
    assert_eq!(interpolate("${UNSET:?say so}", &vars).unwrap_err(), "UNSET: say so");
    assert!(interpolate("${EMPTY:?say so}", &vars).is_err());
    assert!(interpolate("${SET/x/y}", &vars).is_err());
}
