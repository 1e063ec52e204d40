//! The receipt log as a hash chain: every line carries `prev`, the SHA-256 of the line
//! before it (64 zeros for the first), so a receipt removed, altered or moved breaks the
//! link of the line after it, and [`verify`] finds where. The chain's head (the hash of
//! the last line) kept elsewhere also finds lines removed from the end.

use std::io::{BufRead, Read};

use sha2::{Digest, Sha256};

/// The `prev` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Most bytes of one line read; a longer one is reported, not read into memory.
const MAX_LINE: u64 = 16 * 1024 * 1024;

/// The hash of one line (without its newline), in hex.
pub fn line_hash(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    Sha256::digest(line).iter().map(|b| format!("{b:02x}")).collect()
}

/// `receipt` (a JSON object's text) with `prev` first, and a newline.
pub fn link(prev: &str, receipt: &[u8]) -> Vec<u8> {
    let body = receipt.strip_prefix(b"{").unwrap_or(receipt);
    let mut line = Vec::with_capacity(receipt.len() + 80);
    line.extend_from_slice(b"{\"prev\":\"");
    line.extend_from_slice(prev.as_bytes());
    line.extend_from_slice(b"\"");
    if body != b"}" {
        line.push(b',');
    }
    line.extend_from_slice(body);
    line.push(b'\n');
    line
}

/// Links each line of `raw` (receipts, one per line, without `prev`) after `prev`: the
/// linked lines and the new head.
pub fn link_all(mut prev: String, raw: &[u8]) -> (Vec<u8>, String) {
    let mut out = Vec::with_capacity(raw.len() + 80 * raw.len().div_ceil(256));
    for receipt in raw.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = link(&prev, receipt);
        prev = line_hash(&line);
        out.extend_from_slice(&line);
    }
    (out, prev)
}

/// The hash of the last line of the log `file` (whose size is `size`), read from its end:
/// [`GENESIS`] for an empty log.
pub fn head_of(file: &std::fs::File, size: u64) -> std::io::Result<String> {
    use std::os::unix::fs::FileExt;
    if size == 0 {
        return Ok(GENESIS.to_owned());
    }
    let mut want: u64 = 4096;
    loop {
        let start = size.saturating_sub(want);
        let mut tail = vec![0u8; (size - start) as usize];
        file.read_exact_at(&mut tail, start)?;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        match body.iter().rposition(|&b| b == b'\n') {
            Some(newline) => return Ok(line_hash(&body[newline + 1..])),
            None if start == 0 => return Ok(line_hash(body)),
            None if want >= MAX_LINE => {
                return Err(std::io::Error::other("the receipt log's last line is over 16 MiB"));
            }
            None => want *= 4,
        }
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Lines read.
    pub receipts: u64,
    /// Lines before the chain began (a log written before receipts were linked).
    pub unlinked: u64,
    /// The hash of the last line ([`GENESIS`] for an empty log).
    pub head: String,
    /// The first break: its line number (from 1) and what is wrong there.
    pub broken: Option<(u64, String)>,
    /// Whether `expected_head` (when given) is the hash of some line of the log.
    pub head_found: Option<bool>,
}

/// Reads a log from its start and checks every link; `expected_head`, a head recorded
/// earlier, must be the hash of one of its lines (else lines were removed from the end).
pub fn verify(log: impl Read, expected_head: Option<&str>) -> std::io::Result<Verified> {
    let mut log = std::io::BufReader::new(log);
    let mut check = Check::new(expected_head);
    let mut line = Vec::new();
    loop {
        line.clear();
        if log.by_ref().take(MAX_LINE).read_until(b'\n', &mut line)? == 0 {
            break;
        }
        check.line(&line);
    }
    Ok(check.end())
}

/// [`verify`] one line at a time, for logs read from elsewhere (a database).
pub struct Check {
    found: Verified,
    expected_head: Option<String>,
    linked: bool,
}

impl Check {
    /// A check from the first line on.
    pub fn new(expected_head: Option<&str>) -> Check {
        Check {
            found: Verified {
                receipts: 0,
                unlinked: 0,
                head: GENESIS.to_owned(),
                broken: None,
                head_found: expected_head.map(|h| h == GENESIS),
            },
            expected_head: expected_head.map(str::to_owned),
            linked: false,
        }
    }

    /// The next line (with or without its newline).
    pub fn line(&mut self, line: &[u8]) {
        let found = &mut self.found;
        found.receipts += 1;
        let n = found.receipts;
        let prev = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("prev").and_then(|p| p.as_str()).map(str::to_owned));
        let problem = match &prev {
            Some(prev) if *prev == found.head => None,
            Some(_) => Some(
                "its `prev` is not the hash of the line before it: a receipt before it was removed, altered or moved"
                    .to_owned(),
            ),
            None if !self.linked => {
                found.unlinked += 1;
                None
            }
            None => Some("it carries no `prev`: it was written or altered outside kyro".to_owned()),
        };
        self.linked |= prev.is_some();
        if let (Some(problem), None) = (problem, &found.broken) {
            found.broken = Some((n, problem));
        }
        found.head = line_hash(line);
        if self.expected_head.as_deref() == Some(found.head.as_str()) {
            found.head_found = Some(true);
        }
    }

    /// What was found.
    pub fn end(self) -> Verified {
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(receipts: &[&str]) -> Vec<u8> {
        let raw: Vec<u8> = receipts.iter().flat_map(|r| format!("{r}\n").into_bytes()).collect();
        link_all(GENESIS.to_owned(), &raw).0
    }

    fn lines(log: &[u8]) -> Vec<Vec<u8>> {
        log.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn an_intact_log_verifies_and_its_head_is_its_last_line() {
        let log = log_of(&[r#"{"call_id":"a"}"#, r#"{"call_id":"b"}"#, r#"{"call_id":"c"}"#]);
        assert!(log.starts_with(format!("{{\"prev\":\"{GENESIS}\",\"call_id\":\"a\"}}\n").as_bytes()));
        let found = verify(&log[..], None).unwrap();
        assert_eq!((found.receipts, found.unlinked, found.broken), (3, 0, None));
        let last = lines(&log).pop().unwrap();
        assert_eq!(found.head, line_hash(&last));
        let file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut &file, &log).unwrap();
        assert_eq!(head_of(&file, log.len() as u64).unwrap(), found.head);
    }

    #[test]
    fn a_removed_altered_or_moved_receipt_breaks_the_chain_where_it_was() {
        let log = log_of(&[
            r#"{"call_id":"a"}"#,
            r#"{"call_id":"b","outcome":"denied"}"#,
            r#"{"call_id":"c"}"#,
            r#"{"call_id":"d"}"#,
        ]);
        let original = lines(&log);
        let mut removed = original.clone();
        removed.remove(1);
        let mut altered = original.clone();
        altered[1] = String::from_utf8(altered[1].clone())
            .unwrap()
            .replace("denied", "ok")
            .into_bytes();
        let mut moved = original.clone();
        moved.swap(1, 2);
        for (what, lines, at) in [("removed", removed, 2), ("altered", altered, 3), ("moved", moved, 2)] {
            let log: Vec<u8> = lines.concat();
            let found = verify(&log[..], None).unwrap();
            assert_eq!(found.broken.map(|(n, _)| n), Some(at), "{what}");
        }
        // The last line removed: only the head kept elsewhere tells.
        let full_head = verify(&log[..], None).unwrap().head;
        let truncated: Vec<u8> = original[..3].concat();
        let found = verify(&truncated[..], Some(&full_head)).unwrap();
        assert_eq!((found.broken, found.head_found), (None, Some(false)));
        assert_eq!(verify(&log[..], Some(&full_head)).unwrap().head_found, Some(true));
    }

    #[test]
    fn a_log_begun_before_the_chain_links_on_from_its_last_line() {
        let old = b"{\"call_id\":\"old1\"}\n{\"call_id\":\"old2\"}\n".to_vec();
        let head = line_hash(b"{\"call_id\":\"old2\"}");
        let (new, _) = link_all(head, b"{\"call_id\":\"new\"}\n");
        let log = [old, new].concat();
        let found = verify(&log[..], None).unwrap();
        assert_eq!((found.receipts, found.unlinked, found.broken), (3, 2, None));
    }
}
