//! The keys that seal what the server hands out to be brought back: approval states
//! (`requestState`) and the approvals inbox's sessions. `KYRO_STATE_KEY` seals, and
//! replicas sharing it open each other's; during a rotation `KYRO_STATE_KEY_PREVIOUS`,
//! the key being replaced, opens what it sealed and seals nothing.
//!
//! Values are sealed in rmcp's `rs1` form (a single-key codec's), under the current key,
//! so a replica not yet given the new key still opens what a replica holding the old key
//! as current sealed; rmcp's keyring only adds the previous key to those that open.

use rmcp::model::{RequestStateCodec, RequestStateError};

/// The variable holding the key that seals approval states (32 bytes or more).
pub(crate) const STATE_KEY_VARIABLE: &str = "KYRO_STATE_KEY";
/// The variable holding the key a rotation replaces: it opens, it does not seal.
pub(crate) const PREVIOUS_KEY_VARIABLE: &str = "KYRO_STATE_KEY_PREVIOUS";

/// Key ids in the keyring (never on the wire: `rs1` names no key).
const CURRENT: &str = "current";
const PREVIOUS: &str = "previous";

/// The server's state keys, as the environment gives them at start.
pub(crate) struct StateKeys {
    /// `KYRO_STATE_KEY`; without it each codec seals under a key of this process's own.
    current: Option<Vec<u8>>,
    /// `KYRO_STATE_KEY_PREVIOUS`.
    previous: Option<Vec<u8>>,
}

impl StateKeys {
    /// The keys of `KYRO_STATE_KEY` and `KYRO_STATE_KEY_PREVIOUS`; a variable that is
    /// set is a key of 32 bytes or more, and a previous key comes with a current one.
    pub(crate) fn from_env() -> Result<StateKeys, String> {
        StateKeys::new(variable(STATE_KEY_VARIABLE)?, variable(PREVIOUS_KEY_VARIABLE)?)
    }

    /// The keys given, checked as [`StateKeys::from_env`] checks them.
    pub(crate) fn new(current: Option<Vec<u8>>, previous: Option<Vec<u8>>) -> Result<StateKeys, String> {
        for (variable, key) in [(STATE_KEY_VARIABLE, &current), (PREVIOUS_KEY_VARIABLE, &previous)] {
            if let Some(key) = key {
                RequestStateCodec::try_new(key.clone())
                    .map_err(|e| format!("{variable}: {e} (it must hold 32 bytes or more)"))?;
            }
        }
        if previous.is_some() && current.is_none() {
            return Err(format!(
                "{PREVIOUS_KEY_VARIABLE} is set without {STATE_KEY_VARIABLE}: during a rotation the new key is \
                 {STATE_KEY_VARIABLE} (it seals) and the old one {PREVIOUS_KEY_VARIABLE} (it still opens)"
            ));
        }
        Ok(StateKeys { current, previous })
    }

    /// Whether `KYRO_STATE_KEY` is set (replicas then open each other's states).
    #[cfg(any(test, feature = "http"))]
    pub(crate) fn shared(&self) -> bool {
        self.current.is_some()
    }

    /// Whether `KYRO_STATE_KEY_PREVIOUS` is set (a rotation is under way).
    #[cfg(feature = "http")]
    pub(crate) fn rotating(&self) -> bool {
        self.previous.is_some()
    }

    /// A codec sealing under `derive(current key)` (a key made now when there is none)
    /// and opening under it or `derive(previous key)`.
    pub(crate) fn codec(&self, derive: impl Fn(&[u8]) -> Vec<u8>) -> Result<RequestStateCodec, String> {
        let current = match &self.current {
            Some(key) => derive(key),
            None => {
                let mut made = [0u8; 32];
                getrandom::fill(&mut made).map_err(|e| format!("cannot make a key for sealing states: {e}"))?;
                derive(&made)
            }
        };
        let mut keys = vec![(CURRENT, current)];
        keys.extend(self.previous.as_ref().map(|key| (PREVIOUS, derive(key))));
        let ring = || -> Result<RequestStateCodec, RequestStateError> {
            let codec = RequestStateCodec::new_with_keyring(CURRENT, keys.clone())?.with_rs1_signing(CURRENT)?;
            match self.previous {
                Some(_) => codec.with_rs1_fallback(PREVIOUS),
                None => Ok(codec),
            }
        };
        ring().map_err(|e| format!("{STATE_KEY_VARIABLE}: {e}"))
    }
}

/// A variable's key: absent, or its bytes (a value that is not UTF-8 is refused, not
/// taken as absent).
fn variable(name: &str) -> Result<Option<Vec<u8>>, String> {
    match std::env::var(name) {
        Ok(key) => Ok(Some(key.into_bytes())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not UTF-8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::SealOptions;

    fn keys(current: Option<&str>, previous: Option<&str>) -> Result<StateKeys, String> {
        StateKeys::new(
            current.map(|k| k.as_bytes().to_vec()),
            previous.map(|k| k.as_bytes().to_vec()),
        )
    }

    const A: &str = "key-a-of-thirty-two-bytes-or-more-0000";
    const B: &str = "key-b-of-thirty-two-bytes-or-more-0000";
    const C: &str = "key-c-of-thirty-two-bytes-or-more-0000";

    fn seal(keys: &StateKeys) -> String {
        keys.codec(<[u8]>::to_vec)
            .unwrap()
            .seal_with(b"state", &SealOptions::new().associated_data(b"alice"))
    }

    fn opens(keys: &StateKeys, sealed: &str) -> bool {
        keys.codec(<[u8]>::to_vec).unwrap().open_with(sealed, b"alice").is_ok()
    }

    #[test]
    fn the_previous_key_opens_what_it_sealed_and_seals_nothing() {
        let (a, b, c) = (
            keys(Some(A), None).unwrap(),
            keys(Some(B), None).unwrap(),
            keys(Some(C), None).unwrap(),
        );
        let rotating = keys(Some(B), Some(A)).unwrap();
        assert!(opens(&rotating, &seal(&a)));
        assert!(opens(&rotating, &seal(&b)));
        assert!(!opens(&b, &seal(&a)), "without the previous key");
        assert!(!opens(&rotating, &seal(&c)), "an unrelated key");
        // Sealed under the current key, in the form a single-key codec reads.
        let sealed = seal(&rotating);
        assert!(opens(&b, &sealed) && !opens(&a, &sealed));
        let single = RequestStateCodec::try_new(B.as_bytes().to_vec()).unwrap();
        assert!(single.open_with(&sealed, b"alice").is_ok());
        // A derived key rotates with the key it is derived from.
        let derived = |k: &[u8]| [b"inbox\0".as_slice(), k].concat();
        let sealed = a.codec(derived).unwrap().seal(b"session");
        assert!(rotating.codec(derived).unwrap().open(&sealed).is_ok());
        assert!(rotating.codec(<[u8]>::to_vec).unwrap().open(&sealed).is_err());
    }

    #[test]
    fn a_short_previous_key_or_one_without_a_current_key_is_refused() {
        let short = keys(Some(B), Some("short")).err().unwrap();
        assert!(
            short.starts_with("KYRO_STATE_KEY_PREVIOUS: ") && short.contains("32 bytes"),
            "{short}"
        );
        let alone = keys(None, Some(A)).err().unwrap();
        assert!(
            alone.starts_with("KYRO_STATE_KEY_PREVIOUS is set without KYRO_STATE_KEY"),
            "{alone}"
        );
        let current = keys(Some("short"), None).err().unwrap();
        assert!(current.starts_with("KYRO_STATE_KEY: "), "{current}");
        // Without any key, each codec seals under one of its own.
        let none = keys(None, None).unwrap();
        assert!(!none.shared() && !opens(&none, &seal(&none)));
    }
}
