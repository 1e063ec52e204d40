//! Fingerprints of calls and the approvals bound to them.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 (lowercase hex) of the RFC 8785 canonical JSON of `{"tool", "arguments"}`.
///
/// Two calls have the same fingerprint exactly when they name the same canonical tool with
/// the same arguments (key order and whitespace do not matter; aliases are rewritten first).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The canonical snapshot of a call and its fingerprint.
    pub fn of(tool: &str, arguments: &Value) -> (String, Fingerprint) {
        // `{"arguments":…,"tool":…}`: RFC 8785 sorts the two keys so, and each value is
        // canonicalized on its own, which saves copying the arguments into a wrapper.
        let mut canonical = String::with_capacity(64);
        canonical.push_str("{\"arguments\":");
        canonical.push_str(&serde_json_canonicalizer::to_string(arguments).expect("a JSON value always canonicalizes"));
        canonical.push_str(",\"tool\":");
        canonical.push_str(&serde_json::to_string(tool).expect("a string always serializes"));
        canonical.push('}');
        let hex = crate::confined::hex(&Sha256::digest(canonical.as_bytes()));
        (canonical, Fingerprint(hex))
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A human's approval of one call, identified by its fingerprint. Single use: each token
/// carries a nonce, and the runtime refuses a token it has already honoured.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApprovalToken {
    fingerprint: String,
    nonce: u64,
}

impl ApprovalToken {
    /// A fresh approval of the call whose fingerprint is `hex` (case-insensitive).
    pub fn for_fingerprint(hex: &str) -> ApprovalToken {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        ApprovalToken {
            fingerprint: hex.trim().to_ascii_lowercase(),
            nonce: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The fingerprint approved.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

/// A one-line human summary of a call: `write_file(path="a.txt", content=<120 chars>)`.
pub fn summarize(tool: &str, arguments: &Value) -> String {
    let parts: Vec<String> = arguments
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(key, value)| {
                    let shown = match value {
                        Value::String(s) if s.chars().count() > 60 => {
                            format!("<{} chars>", s.chars().count())
                        }
                        other => {
                            let text = other.to_string();
                            if text.chars().count() > 60 {
                                format!("<{} chars of JSON>", text.chars().count())
                            } else {
                                text
                            }
                        }
                    };
                    format!("{key}={shown}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{tool}({})", parts.join(", "))
}
