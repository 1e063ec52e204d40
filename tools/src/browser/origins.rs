//! The web origins the browser holds storage for: those its pages loaded documents from
//! (and `browser_set_storage_state` restored), as `location.origin` spells them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The origins, `http://host[:port]`, sorted.
pub(crate) type Origins = Arc<Mutex<BTreeSet<String>>>;

/// The most origins followed (more are not recorded).
pub(crate) const MAX_ORIGINS: usize = 1000;

/// The origin of an http(s) URL as the browser spells it (`location.origin`): scheme and
/// host in lower case, the port only when it is not the scheme's own; `None` for any
/// other URL, or one carrying user info.
pub(crate) fn origin_of(url: &str) -> Option<String> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = uri.authority()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let host = authority.host().to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    Some(match authority.port_u16() {
        Some(port) if port != default => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// Records the origin of `url` (a document a page loaded), up to [`MAX_ORIGINS`].
pub(crate) fn record(origins: &Origins, url: &str) {
    let Some(origin) = origin_of(url) else { return };
    let mut origins = origins.lock().unwrap_or_else(|e| e.into_inner());
    if origins.len() < MAX_ORIGINS {
        origins.insert(origin);
    }
}

/// The origins recorded, sorted.
pub(crate) fn list(origins: &Origins) -> Vec<String> {
    origins
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::origin_of;

    #[test]
    fn a_name_from_an_untrusted_file_is_judged_by_its_spelling_and_never_looked_up() {
        let default = crate::settings::NetworkSettings::default();
        // A name whose lookup fails is not refused here: it was not looked up (a planted
        // storage state must not make kyro query the names it chose).
        assert_eq!(
            crate::integration::name_refusal(&default, "beacon.attacker.invalid"),
            None
        );
        assert_eq!(crate::integration::name_refusal(&default, "example.com"), None);
        for host in [
            "127.0.0.1",
            "[::1]",
            "10.0.0.8",
            "2130706433",
            "0x7f.1",
            "0177.0.0.1",
            "127.1",
        ] {
            assert!(
                crate::integration::name_refusal(&default, host).is_some(),
                "{host} passed"
            );
        }
        let denied = crate::settings::NetworkSettings {
            deny_hosts: vec!["evil.example".into()],
            ..crate::settings::NetworkSettings::default()
        };
        assert!(crate::integration::name_refusal(&denied, "a.evil.example.").is_some());
        let allowed = crate::settings::NetworkSettings {
            allow_hosts: vec!["127.0.0.1".into()],
            ..crate::settings::NetworkSettings::default()
        };
        assert_eq!(crate::integration::name_refusal(&allowed, "127.0.0.1"), None);
        assert!(crate::integration::name_refusal(&allowed, "example.com").is_some());
    }

    #[test]
    fn origins_are_spelled_as_the_browser_spells_them() {
        assert_eq!(
            origin_of("http://127.0.0.1:8080/a?b").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            origin_of("HTTPS://Example.COM:443/").as_deref(),
            Some("https://example.com")
        );
        assert_eq!(origin_of("http://example.com").as_deref(), Some("http://example.com"));
        assert_eq!(origin_of("http://[::1]:81/").as_deref(), Some("http://[::1]:81"));
        assert_eq!(origin_of("http://user@example.com/"), None);
        assert_eq!(origin_of("data:text/html,x"), None);
        assert_eq!(origin_of("about:blank"), None);
    }
}
