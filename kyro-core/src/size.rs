//! The length of a value's compact JSON (as `serde_json` writes it), counted without
//! writing it: the output limit is checked on every result, and writing a result only to
//! count its bytes cost as much as the answer's own serialization.

use serde_json::Value;

/// The bytes of `value`'s compact JSON text.
pub(crate) fn json_len(value: &Value) -> u64 {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_len(n),
        Value::String(s) => string_len(s),
        Value::Array(items) => 2 + items.len().saturating_sub(1) as u64 + items.iter().map(json_len).sum::<u64>(),
        Value::Object(map) => {
            2 + map.len().saturating_sub(1) as u64
                + map.iter().map(|(k, v)| string_len(k) + 1 + json_len(v)).sum::<u64>()
        }
    }
}

/// A string with its quotes and escapes: `"` and `\` and the short escapes (`\b`, `\t`,
/// `\n`, `\f`, `\r`) take one byte more, every other control character five (`\u001f`).
fn string_len(s: &str) -> u64 {
    let bytes = s.as_bytes();
    // Counted in blocks small enough for a 16-bit sum (5 at most a byte), which the
    // compiler turns into vector instructions.
    let escapes: usize = bytes
        .chunks(8192)
        .map(|block| block.iter().fold(0u16, |n, &b| n + extra(b)) as usize)
        .sum();
    (2 + bytes.len() + escapes) as u64
}

/// The bytes an escape adds to `b`.
#[inline(always)]
fn extra(b: u8) -> u16 {
    let control = b < 0x20;
    let special = control | (b == b'"') | (b == b'\\');
    let short = matches!(b, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
    u16::from(special) + 4 * u16::from(control & !short)
}

fn number_len(n: &serde_json::Number) -> u64 {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => digits(u),
        (None, Some(i)) => 1 + digits(i.unsigned_abs()),
        // Floats as serde_json writes them.
        _ => n.to_string().len() as u64,
    }
}

fn digits(mut n: u64) -> u64 {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn the_count_is_the_length_serde_json_writes() {
        let controls: String = (0u8..0x20).map(char::from).collect();
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(-0.000_123),
            json!(1e300),
            json!(""),
            json!("plain"),
            json!(format!("{controls}\"\\/ \u{7f} café 😀 \u{2028}")),
            json!([]),
            json!({}),
            json!([1, "a\nb", [null, {}], {"k\t": [true, false]}]),
            json!({"path": "a.txt", "content": "line 1\r\nline\t2\n", "n": 12, "nested": {"x": [1.25, -3]}}),
        ];
        for value in values {
            assert_eq!(super::json_len(&value), value.to_string().len() as u64, "{value}");
        }
        let long: Value = json!({"content": "x\n".repeat(100_000)});
        assert_eq!(super::json_len(&long), long.to_string().len() as u64);
    }
}
