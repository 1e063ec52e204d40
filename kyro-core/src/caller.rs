//! Who is asking: a [`Caller`] is established at the edge a call came in through (the
//! local user over stdio and on the command line, a token's named caller over HTTP), never
//! taken from a request's body. It travels with the [`Call`](crate::Call), is written in
//! every receipt, reaches tools as [`ToolContext::caller`](crate::ToolContext::caller), and
//! binds approvals and grants to whoever they were given to.

use std::sync::Arc;

use serde::Serialize;

/// A caller's name: `local` for the user running kyro; over HTTP, the name a token file
/// gives the token (`http` for the one token of `KYRO_HTTP_TOKEN`, `anonymous` without
/// authentication).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Caller(Arc<str>);

impl Serialize for Caller {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl Caller {
    /// The user running kyro: stdio, the command line, a test.
    pub fn local() -> Caller {
        Caller("local".into())
    }

    /// The holder of a server's one HTTP token (`KYRO_HTTP_TOKEN`, or the one it made).
    pub fn http() -> Caller {
        Caller("http".into())
    }

    /// A client nobody authenticated (`--no-auth`).
    pub fn anonymous() -> Caller {
        Caller("anonymous".into())
    }

    /// A named caller. A name is 1 to 64 characters of ASCII letters, digits, `_`, `-`,
    /// `.`, `:`, `@`, `|` and `+` (OAuth subjects such as `user+ci@example.com` or
    /// `auth0|5f7c` fit).
    pub fn named(name: &str) -> Result<Caller, String> {
        let fits = |b: u8| b.is_ascii_alphanumeric() || b"_-.:@|+".contains(&b);
        if name.is_empty() || name.len() > 64 || !name.bytes().all(fits) {
            return Err(format!(
                "`{name}` is not a caller name: 1 to 64 of ASCII letters, digits, `_`, `-`, `.`, `:`, `@`, `|`, `+`"
            ));
        }
        Ok(Caller(name.into()))
    }

    /// The names kyro gives callers itself (`local`, `http`, `anonymous`): a token file
    /// may not give them, or an HTTP client would share the local user's grants and states.
    pub const RESERVED: [&'static str; 3] = ["local", "http", "anonymous"];

    /// Whether kyro gives this name itself: one of [`Caller::RESERVED`], or `cli:...`, the
    /// account deciding on the command line (`kyro approvals`), which no token may claim.
    pub fn is_reserved(name: &str) -> bool {
        Caller::RESERVED.contains(&name) || name.starts_with("cli:")
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl Default for Caller {
    fn default() -> Caller {
        Caller::local()
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Caller;

    #[test]
    fn a_caller_name_is_a_short_plain_word() {
        for name in [
            "local",
            "alice",
            "ci-runner.2",
            "oauth:user@example.com",
            "auth0|5f7c",
            "a+b@x.io",
        ] {
            assert_eq!(Caller::named(name).unwrap().name(), name);
        }
        for name in ["", "a b", "x\ny", "é", &"a".repeat(65), "a/b"] {
            assert!(Caller::named(name).is_err(), "{name:?}");
        }
    }
}
