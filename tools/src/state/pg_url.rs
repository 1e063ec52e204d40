//! libpq's TLS settings in a `--state` URL: `sslmode` and `sslrootcert`, taken out of the
//! URL (or the `key=value` string) before tokio-postgres reads the rest, since it knows
//! no `sslrootcert` and no `verify-ca` or `verify-full`.
//!
//! Both forms tokio-postgres reads are read here as it reads them: a `postgres://` or
//! `postgresql://` URL (its parameters after the first `?` past the credentials, keys
//! and values percent-decoded), or `key=value` pairs (values quoted with `'`, `\`
//! escaping). A setting given twice counts once, the last, as in libpq.

use std::fmt;

/// libpq's `sslmode`, as kyro takes it (`allow` is not among them: see [`TlsSettingError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, plaintext when it does not.
    Prefer,
    /// TLS or no connection; the certificate is checked only against `sslrootcert`, when
    /// given (as libpq does).
    Require,
    /// TLS, the certificate signed by a CA of `sslrootcert`.
    VerifyCa,
    /// TLS, the certificate signed by a CA of `sslrootcert` and valid for the host name.
    VerifyFull,
}

impl SslMode {
    const NAMES: [(&'static str, SslMode); 5] = [
        ("disable", SslMode::Disable),
        ("prefer", SslMode::Prefer),
        ("require", SslMode::Require),
        ("verify-ca", SslMode::VerifyCa),
        ("verify-full", SslMode::VerifyFull),
    ];

    fn parse(value: &str) -> Result<SslMode, TlsSettingError> {
        if value == "allow" {
            return Err(TlsSettingError::Allow);
        }
        SslMode::NAMES
            .iter()
            .find(|(name, _)| *name == value)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| TlsSettingError::UnknownMode(value.to_owned()))
    }

    /// Whether the server's certificate must chain to `sslrootcert`.
    pub(super) fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = SslMode::NAMES
            .iter()
            .find(|(_, mode)| mode == self)
            .map_or("", |(name, _)| name);
        f.write_str(name)
    }
}

/// Where the CA certificates the server's certificate must chain to come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RootCert {
    /// A PEM file of one or more CA certificates.
    File(String),
    /// `sslrootcert=system`: the Mozilla root set kyro is built with (webpki-roots).
    System,
}

/// What the URL says about TLS.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct TlsAsked {
    /// `sslmode`, when the URL gives one.
    pub mode: Option<SslMode>,
    /// `sslrootcert`, when the URL gives one.
    pub root: Option<RootCert>,
}

/// A TLS setting of the URL kyro cannot honour.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TlsSettingError {
    /// `sslmode` names no mode.
    #[error("sslmode `{0}` is not one of disable, prefer, require, verify-ca, verify-full")]
    UnknownMode(String),
    /// libpq's `allow` (plaintext first, TLS only when the server insists) is not offered.
    #[error("sslmode `allow` (plaintext first) is not supported: use require, or verify-full with sslrootcert")]
    Allow,
    /// `sslrootcert` is empty.
    #[error("sslrootcert is empty: name a PEM file of CA certificates, or `system`")]
    EmptyRoot,
    /// A verifying mode without the CA to verify with.
    #[error(
        "sslmode={0} needs sslrootcert=FILE (the CA certificates that signed the server's certificate, PEM) or sslrootcert=system"
    )]
    NoRoot(SslMode),
    /// `sslrootcert=FILE` without `sslmode`: which check was meant is not guessed.
    #[error("sslrootcert without sslmode: add sslmode=verify-full (or verify-ca, which does not check the host name)")]
    RootWithoutMode,
    /// `sslrootcert=system` with a mode that does not check the host name: any public CA
    /// signs a certificate for some name.
    #[error("sslmode={0} with sslrootcert=system would take any public certificate: use sslmode=verify-full")]
    WeakSystem(SslMode),
    /// The CA file cannot be read or holds no certificate.
    #[error("sslrootcert `{path}`: {reason}")]
    Root {
        /// The file.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// rustls refuses the client's settings (its provider offers no protocol version).
    #[error("TLS cannot be set up: {0}")]
    Provider(rustls::Error),
}

const SSLMODE: &str = "sslmode";
const SSLROOTCERT: &str = "sslrootcert";

/// `url` without its `sslmode` and `sslrootcert`, and what they said. A string that does
/// not read as either form comes back whole, for tokio-postgres to say what is wrong.
pub(super) fn split_tls(url: &str) -> Result<(String, TlsAsked), TlsSettingError> {
    let found = match ["postgres://", "postgresql://"].iter().find(|p| url.starts_with(*p)) {
        Some(prefix) => url_parameters(url, prefix.len()),
        None => key_values(url).map(|parameters| (url.len(), parameters)),
    };
    let Some((query, parameters)) = found else {
        return Ok((url.to_owned(), TlsAsked::default()));
    };
    let mut asked = TlsAsked::default();
    let mut kept = Vec::new();
    for parameter in &parameters {
        match parameter.key.as_str() {
            SSLMODE => asked.mode = Some(SslMode::parse(&parameter.value)?),
            SSLROOTCERT => {
                asked.root = Some(match parameter.value.as_str() {
                    "" => return Err(TlsSettingError::EmptyRoot),
                    "system" => RootCert::System,
                    file => RootCert::File(file.to_owned()),
                })
            }
            _ => kept.push(&url[parameter.raw.0..parameter.raw.1]),
        }
    }
    if asked == TlsAsked::default() {
        return Ok((url.to_owned(), asked));
    }
    // The URL's query, or the whole `key=value` string, rebuilt from what is left.
    let rest = if query < url.len() {
        let head = &url[..query];
        match kept.is_empty() {
            true => head.to_owned(),
            false => format!("{head}?{}", kept.join("&")),
        }
    } else {
        kept.join(" ")
    };
    Ok((rest, asked))
}

/// One parameter: its key and value, decoded, and where it is in the string.
struct Parameter {
    key: String,
    value: String,
    raw: (usize, usize),
}

/// The query parameters of a URL whose scheme ends at `start`, and where its `?` is (the
/// URL's length without one).
fn url_parameters(url: &str, start: usize) -> Option<(usize, Vec<Parameter>)> {
    // As tokio-postgres: the credentials run to the first `@`, the query starts at the
    // first `?` after them.
    let after_credentials = url[start..].find('@').map_or(start, |at| start + at + 1);
    let Some(question) = url[after_credentials..].find('?') else {
        return Some((url.len(), Vec::new()));
    };
    let question = after_credentials + question;
    let mut at = question + 1;
    let mut parameters = Vec::new();
    while at < url.len() {
        let end = url[at..].find('&').map_or(url.len(), |amp| at + amp);
        let (key, value) = url[at..end].split_once('=')?;
        parameters.push(Parameter {
            key: decode(key)?,
            value: decode(value)?,
            raw: (at, end),
        });
        at = end + 1;
    }
    Some((question, parameters))
}

fn decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|d| d.into_owned())
}

/// The `key=value` pairs of a connection string, as tokio-postgres' parser reads them.
fn key_values(s: &str) -> Option<Vec<Parameter>> {
    let bytes: Vec<(usize, char)> = s.char_indices().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].1.is_whitespace() {
            *i += 1;
        }
    };
    let offset = |i: usize| bytes.get(i).map_or(s.len(), |b| b.0);
    let mut parameters = Vec::new();
    loop {
        skip_ws(&mut i);
        if i == bytes.len() {
            return Some(parameters);
        }
        let start = i;
        while i < bytes.len() && !bytes[i].1.is_whitespace() && bytes[i].1 != '=' {
            i += 1;
        }
        let key = s[offset(start)..offset(i)].to_owned();
        skip_ws(&mut i);
        if bytes.get(i).map(|b| b.1) != Some('=') {
            return None;
        }
        i += 1;
        skip_ws(&mut i);
        let quoted = bytes.get(i).map(|b| b.1) == Some('\'');
        if quoted {
            i += 1;
        }
        let mut value = String::new();
        loop {
            match bytes.get(i).map(|b| b.1) {
                None if quoted => return None,
                None => break,
                Some('\'') if quoted => {
                    i += 1;
                    break;
                }
                Some(c) if c.is_whitespace() && !quoted => break,
                Some('\\') => {
                    value.extend(bytes.get(i + 1).map(|b| b.1));
                    i += 2;
                }
                Some(c) => {
                    value.push(c);
                    i += 1;
                }
            }
        }
        if value.is_empty() && !quoted {
            return None;
        }
        parameters.push(Parameter {
            key,
            value,
            raw: (offset(start), offset(i.min(bytes.len()))),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, TlsAsked) {
        split_tls(url).unwrap()
    }

    fn asked(mode: Option<SslMode>, root: Option<&str>) -> TlsAsked {
        TlsAsked {
            mode,
            root: root.map(|r| RootCert::File(r.to_owned())),
        }
    }

    #[test]
    fn a_url_loses_its_tls_settings_and_keeps_the_rest() {
        let base = "postgres://kyro@db.internal:5433/kyro";
        assert_eq!(split(base), (base.to_owned(), TlsAsked::default()));
        assert_eq!(
            split(&format!("{base}?sslmode=verify-full&sslrootcert=/etc/kyro/ca.pem")),
            (
                base.to_owned(),
                asked(Some(SslMode::VerifyFull), Some("/etc/kyro/ca.pem"))
            )
        );
        assert_eq!(
            split(&format!("{base}?application_name=a&sslmode=require&connect_timeout=5")),
            (
                format!("{base}?application_name=a&connect_timeout=5"),
                asked(Some(SslMode::Require), None)
            )
        );
        assert_eq!(
            split(&format!("{base}?sslrootcert=%2Fa%20b.pem&options=-c%20x%3D1")),
            (format!("{base}?options=-c%20x%3D1"), asked(None, Some("/a b.pem")))
        );
        // Percent-encoded keys, and the last of two.
        assert_eq!(
            split(&format!(
                "{base}?ssl%6Dode=disable&sslmode=verify-ca&sslrootcert=ca.pem"
            ))
            .1,
            asked(Some(SslMode::VerifyCa), Some("ca.pem"))
        );
        assert_eq!(
            split("postgresql:///kyro?host=/run/postgresql&sslmode=disable"),
            (
                "postgresql:///kyro?host=/run/postgresql".to_owned(),
                asked(Some(SslMode::Disable), None)
            )
        );
    }

    #[test]
    fn a_password_holding_a_question_mark_is_not_a_query() {
        let (rest, tls) = split("postgres://kyro:pa?ss=x&sslmode=disable@db/kyro?sslmode=require");
        assert_eq!(rest, "postgres://kyro:pa?ss=x&sslmode=disable@db/kyro");
        assert_eq!(tls, asked(Some(SslMode::Require), None));
    }

    #[test]
    fn key_value_settings_lose_their_tls_settings_and_keep_the_rest() {
        let (rest, tls) = split("host=db.internal sslmode = verify-full  sslrootcert='/etc/kyro/my ca.pem' user=kyro");
        assert_eq!(rest, "host=db.internal user=kyro");
        assert_eq!(tls, asked(Some(SslMode::VerifyFull), Some("/etc/kyro/my ca.pem")));
        let (rest, tls) = split("host=/run/postgresql dbname=kyro sslrootcert=c\\ a.pem");
        assert_eq!(rest, "host=/run/postgresql dbname=kyro");
        assert_eq!(tls, asked(None, Some("c a.pem")));
        let (rest, tls) = split("sslrootcert=system host=x");
        assert_eq!((rest.as_str(), tls.root), ("host=x", Some(RootCert::System)));
        // Not this grammar: tokio-postgres says what is wrong.
        assert_eq!(
            split("host=x sslmode"),
            ("host=x sslmode".to_owned(), TlsAsked::default())
        );
    }

    #[test]
    fn an_unknown_or_unsupported_mode_and_an_empty_root_are_refused() {
        assert_eq!(
            split_tls("postgres://db/kyro?sslmode=verify_full"),
            Err(TlsSettingError::UnknownMode("verify_full".to_owned()))
        );
        assert_eq!(split_tls("host=db sslmode=allow"), Err(TlsSettingError::Allow));
        assert_eq!(
            split_tls("postgres://db/kyro?sslrootcert="),
            Err(TlsSettingError::EmptyRoot)
        );
        let said = TlsSettingError::UnknownMode("x".into()).to_string();
        assert!(said.contains("verify-full"), "{said}");
    }
}
