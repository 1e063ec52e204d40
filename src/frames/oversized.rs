//! The id of a message too long to read whole, found in its first bytes: the message is
//! answered under its own id when those bytes name it, so that the client learns which of
//! its requests was refused.

use serde_json::Value;

/// How much of an oversized message's start is kept to look for its id.
pub(super) const HEAD: usize = 64 * 1024;

/// The `id` of a request from the first bytes of its text (cut anywhere): its top-level
/// `id` (a string or an integer) when that and a top-level `method` (a string) both stand
/// whole within them; `None` when either does not, or when either comes twice. Top-level
/// values before them are skipped without being converted, in one bounded pass.
pub(super) fn request_id(head: &[u8]) -> Option<Value> {
    let mut scan = Scan { text: head, at: 0 };
    scan.expect(b'{')?;
    let (mut id, mut method) = (None, false);
    loop {
        let key = scan.string()?;
        scan.expect(b':')?;
        match key.as_str() {
            "id" if id.is_none() => id = Some(scan.id()?),
            "method" if !method => {
                scan.string()?;
                method = true;
            }
            "id" | "method" => return None,
            _ => scan.skip_value()?,
        }
        if method && id.is_some() {
            return id;
        }
        if scan.next_byte()? != b',' {
            return None; // the object ended (`}`) without them, or is not JSON
        }
    }
}

/// A cursor over the kept bytes; every method answers `None` where they run out.
struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    /// The next byte that is not JSON whitespace, consumed.
    fn next_byte(&mut self) -> Option<u8> {
        while let Some(&byte) = self.text.get(self.at) {
            self.at += 1;
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(byte);
            }
        }
        None
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next_byte()? == byte).then_some(())
    }

    /// The end of the string whose opening quote was just consumed (the index after its
    /// closing quote), consumed.
    fn string_end(&mut self) -> Option<usize> {
        let mut escaped = false;
        while let Some(&byte) = self.text.get(self.at) {
            self.at += 1;
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => return Some(self.at),
                _ => {}
            }
        }
        None
    }

    /// A whole string, decoded.
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let start = self.at - 1;
        let end = self.string_end()?;
        serde_json::from_slice(&self.text[start..end]).ok()
    }

    /// An id: a whole string, or an integer followed by something (so not cut short).
    fn id(&mut self) -> Option<Value> {
        match self.next_byte()? {
            b'"' => {
                let start = self.at - 1;
                let end = self.string_end()?;
                serde_json::from_slice::<String>(&self.text[start..end])
                    .ok()
                    .map(Value::String)
            }
            _ => {
                let start = self.at - 1;
                self.skip_scalar()?;
                let number: Value = serde_json::from_slice(&self.text[start..self.at]).ok()?;
                (number.is_i64() || number.is_u64()).then_some(number)
            }
        }
    }

    /// Past a scalar whose first byte was just consumed: up to the byte that ends it, which
    /// must be there.
    fn skip_scalar(&mut self) -> Option<()> {
        let rest = self.text.get(self.at..)?;
        let length = rest
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
        self.at += length;
        Some(())
    }

    /// Past one whole value, nested ones counted, not converted.
    fn skip_value(&mut self) -> Option<()> {
        match self.next_byte()? {
            b'"' => self.string_end().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 1usize;
                while depth > 0 {
                    match *self.text.get(self.at)? {
                        b'"' => {
                            self.at += 1;
                            self.string_end()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.at += 1;
                }
                Some(())
            }
            _ => self.skip_scalar(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::request_id;

    #[test]
    fn the_id_is_read_wherever_the_start_names_it_and_only_then() {
        let cases: &[(&str, Option<Value>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"aaa"#,
                Some(json!(1)),
            ),
            (r#"{"method":"tools/call","id":"a\"b","params":"#, Some(json!("a\"b"))),
            (
                r#" { "jsonrpc" : "2.0" , "params" : {"x":[1,"}]",{"y":null}]} , "id" : -7 , "method" : "m" , "#,
                Some(json!(-7)),
            ),
            (
                r#"{"id":18446744073709551615,"method":"m","#,
                Some(json!(18446744073709551615u64)),
            ),
            // Cut inside the id: it may go on.
            (r#"{"method":"m","id":12"#, None),
            (r#"{"method":"m","id":"abc"#, None),
            // Behind the part kept, or no method: a response, or not a request at all.
            (r#"{"jsonrpc":"2.0","params":{"p":"aaaa"#, None),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"p":"aaa"#, None),
            (r#"{"id":1,"method":7,"#, None),
            // Not an id kyro answers under, or named twice.
            (r#"{"id":1.5,"method":"m","#, None),
            (r#"{"id":null,"method":"m","#, None),
            (r#"{"id":[1],"method":"m","#, None),
            (r#"{"id":1,"id":2,"method":"m","#, None),
            (r#"[{"id":1,"method":"m"}"#, None),
            ("not json", None),
            ("", None),
        ];
        for (head, id) in cases {
            assert_eq!(&request_id(head.as_bytes()), id, "{head}");
        }
    }
}
