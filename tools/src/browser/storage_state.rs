//! `browser_storage_state` and `browser_set_storage_state`: the browser's cookies and every
//! origin's `localStorage`, saved to a workspace file in Playwright's storage-state shape
//! and restored from one.
//!
//! A file to restore is untrusted (it may come with a cloned repository): its size is
//! bounded, its shape checked before anything changes, and a cookie or an origin's
//! storage is set only for a host the call's network policy allows (the check every
//! request of the page passes); the rest is skipped and reported.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use headless_chrome::protocol::cdp::Network::{ClearBrowserCookies, CookieSameSite, GetAllCookies, SetCookie};
use kyro_core::policy::SettingsTable;
use kyro_core::{EntryType, Execute, ToolContext, ToolError, WorkspacePath, tool};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::driven::Driven;
use super::origins::{Origins, origin_of};
use super::scratch::AtOrigin;
use super::session::{error, with_origins};
use super::web_storage::{Area, Change, web_storage};
use crate::Failure;
use crate::settings::NetworkSettings;

/// The largest storage-state file read.
const MAX_STATE_BYTES: u64 = 8 << 20;
/// The most cookies a file may hold (Chromium keeps 3300 at most).
const MAX_COOKIES: usize = 3300;
/// The most origins a file may hold.
const MAX_FILE_ORIGINS: usize = 1000;
/// The most `localStorage` entries of one origin.
const MAX_ENTRIES: usize = 10_000;

/// Playwright's storage state.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    cookies: Vec<StateCookie>,
    origins: Vec<StateOrigin>,
}

/// A cookie of a storage state; `expires` is -1 for a session cookie.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateCookie {
    name: String,
    value: String,
    domain: String,
    path: String,
    #[serde(default = "session_cookie")]
    expires: f64,
    #[serde(default)]
    http_only: bool,
    #[serde(default)]
    secure: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    same_site: Option<StateSameSite>,
}

fn session_cookie() -> f64 {
    -1.0
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
enum StateSameSite {
    Strict,
    Lax,
    None,
}

/// One origin's `localStorage`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateOrigin {
    origin: String,
    #[serde(default)]
    local_storage: Vec<NameValue>,
}

#[derive(Debug, Serialize, Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

/// Save the browser's cookies and every origin's `localStorage` to a workspace file, as
/// Playwright's storage state (restore it with browser_set_storage_state).
#[tool(
    name = "browser_storage_state",
    title = "Save the browser's storage state",
    category = "browser.storage",
    effect = "write",
    destructive = true,
    idempotent = true
)]
pub struct BrowserStorageState {
    /// Workspace-relative file, replaced if it exists; default
    /// `storage-state-{timestamp}.json` in the workspace root.
    pub filename: Option<WorkspacePath>,
}

/// The storage state written.
#[kyro_core::output]
#[derive(Debug)]
pub struct StorageStateSaved {
    /// The file, as given (or chosen).
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// How many cookies it holds.
    pub cookies: usize,
    /// The origins whose `localStorage` it holds.
    pub origins: Vec<String>,
}

impl Execute for BrowserStorageState {
    type Output = StorageStateSaved;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<StorageStateSaved, ToolError> {
        let given = self.filename.unwrap_or_else(|| {
            WorkspacePath::new(format!("storage-state-{}.json", stamp(std::time::SystemTime::now())))
        });
        let (path, existing) = super::files::replaceable(cx, &given)?;
        let state = with_origins(cx, move |tab, origins, open| read_state(tab, origins, open)).await?;
        let mut text = serde_json::to_string_pretty(&state).map_err(|e| error("save the storage state", e))?;
        text.push('\n');
        path.write_atomic(text.as_bytes(), existing.as_deref())?;
        Ok(StorageStateSaved {
            path: path.given().to_owned(),
            bytes: text.len() as u64,
            cookies: state.cookies.len(),
            origins: state.origins.into_iter().map(|o| o.origin).collect(),
        })
    }
}

/// The browser's cookies, and the `localStorage` of every origin it holds (those with
/// entries), each read in an empty document of its origin.
fn read_state(
    tab: &Driven,
    origins: &Origins,
    open: &dyn Fn() -> Result<super::page::PageHandle, ToolError>,
) -> Result<State, ToolError> {
    let mut cookies: Vec<StateCookie> = tab
        .call(GetAllCookies(None), "read the cookies")?
        .cookies
        .into_iter()
        .map(|c| StateCookie {
            name: c.name,
            value: c.value,
            domain: c.domain,
            path: c.path,
            expires: if c.session { -1.0 } else { c.expires },
            http_only: c.http_only,
            secure: c.secure,
            same_site: c.same_site.map(|s| match s {
                CookieSameSite::Strict => StateSameSite::Strict,
                CookieSameSite::Lax => StateSameSite::Lax,
                CookieSameSite::None => StateSameSite::None,
            }),
        })
        .collect();
    cookies.sort_by(|a, b| (&a.domain, &a.name, &a.path).cmp(&(&b.domain, &b.name, &b.path)));
    let known = super::origins::list(origins);
    let mut saved = Vec::new();
    if !known.is_empty() {
        let mut pages = AtOrigin::new(tab, open);
        for origin in known {
            let (_, entries) = pages.run(&origin, |page| web_storage(page, Area::Local, None, Change::Nothing))?;
            if !entries.is_empty() {
                saved.push(StateOrigin {
                    origin,
                    local_storage: entries
                        .into_iter()
                        .map(|e| NameValue {
                            name: e.key,
                            value: e.value,
                        })
                        .collect(),
                });
            }
        }
    }
    Ok(State {
        cookies,
        origins: saved,
    })
}

/// Restore cookies and `localStorage` from a storage-state file (as browser_storage_state
/// writes; Playwright's too). Clears the browser's cookies and every known origin's
/// `localStorage` first. Sets a cookie or an origin's storage only for a host the network
/// policy allows; the rest is skipped and reported.
#[tool(
    name = "browser_set_storage_state",
    title = "Restore the browser's storage state",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserSetStorageState {
    /// Workspace-relative storage-state file (8 MiB at most).
    pub filename: WorkspacePath,
}

/// What was restored.
#[kyro_core::output]
#[derive(Debug)]
pub struct StorageStateRestored {
    /// The file, as given.
    pub path: String,
    /// How many cookies were set.
    pub cookies: usize,
    /// The origins whose `localStorage` was set.
    pub origins: Vec<String>,
    /// What the file held that was not set, and why.
    pub skipped: Vec<Skipped>,
}

/// A cookie or an origin's storage that was not set.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// `cookie` or `origin`.
    pub kind: String,
    /// The cookie (`name` for `domain`) or the origin.
    pub item: String,
    /// Why: the network policy's refusal of its host, or Chromium's of the cookie.
    pub reason: String,
}

impl Execute for BrowserSetStorageState {
    type Output = StorageStateRestored;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<StorageStateRestored, ToolError> {
        let policy = NetworkSettings::clone(&*cx.scope().settings::<NetworkSettings>()?);
        let path = cx.path(&self.filename)?;
        let given = path.given().to_owned();
        let info = path.info(true)?;
        if info.kind != EntryType::File {
            return Err(ToolError::NotAFile { path: given });
        }
        let mut bytes = Vec::new();
        path.open()?
            .take(MAX_STATE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io("read", &given, &e))?;
        if info.size > MAX_STATE_BYTES || bytes.len() as u64 > MAX_STATE_BYTES {
            return Err(invalid(&given, format!("it is over {} MiB", MAX_STATE_BYTES >> 20)));
        }
        let state: State = serde_json::from_slice(&bytes).map_err(|e| invalid(&given, e.to_string()))?;
        let plan = plan(state, &given)?;
        let restored = with_origins(cx, move |tab, origins, open| restore(tab, origins, open, plan, &policy)).await?;
        Ok(StorageStateRestored {
            path: given,
            cookies: restored.0,
            origins: restored.1,
            skipped: restored.2,
        })
    }
}

/// A refusal of the file `path`: not a storage state, with why.
fn invalid(path: &str, why: impl std::fmt::Display) -> ToolError {
    Failure::InvalidRequest {
        message: format!(
            "`{path}` is not a storage-state file ({{\"cookies\": [...], \"origins\": [...]}}, as browser_storage_state writes): {why}"
        ),
    }
    .into()
}

/// A checked storage state: each cookie with the host it is for, each origin as the
/// browser spells it.
struct Plan {
    cookies: Vec<(StateCookie, String)>,
    origins: Vec<(String, Vec<NameValue>)>,
}

/// Checks the shape of a file's state beyond its types: bounded counts, cookie domains
/// that are host names, expiries that are times, origins that are http(s) origins.
fn plan(state: State, path: &str) -> Result<Plan, ToolError> {
    if state.cookies.len() > MAX_COOKIES {
        return Err(invalid(path, format!("it holds over {MAX_COOKIES} cookies")));
    }
    if state.origins.len() > MAX_FILE_ORIGINS {
        return Err(invalid(path, format!("it holds over {MAX_FILE_ORIGINS} origins")));
    }
    let mut cookies = Vec::with_capacity(state.cookies.len());
    for (i, cookie) in state.cookies.into_iter().enumerate() {
        let Some(host) = cookie_host(&cookie.domain) else {
            return Err(invalid(
                path,
                format!("cookie {i}'s domain {:?} is not a host name", cookie.domain),
            ));
        };
        if !(cookie.expires.is_finite() && (cookie.expires == -1.0 || cookie.expires >= 0.0)) {
            return Err(invalid(
                path,
                format!("cookie {i}'s expires is not a time in Unix seconds, or -1"),
            ));
        }
        cookies.push((cookie, host));
    }
    let mut origins: BTreeMap<String, Vec<NameValue>> = BTreeMap::new();
    for (i, origin) in state.origins.into_iter().enumerate() {
        let Some(canonical) = file_origin(&origin.origin) else {
            return Err(invalid(
                path,
                format!("origin {i} ({:?}) is not an http(s) origin", origin.origin),
            ));
        };
        if origin.local_storage.len() > MAX_ENTRIES {
            return Err(invalid(
                path,
                format!("origin {i} holds over {MAX_ENTRIES} localStorage entries"),
            ));
        }
        origins.entry(canonical).or_default().extend(origin.local_storage);
    }
    Ok(Plan {
        cookies,
        origins: origins.into_iter().collect(),
    })
}

/// An origin as a file gives it (`http://host[:port]`, a `/` after it allowed), as the
/// browser spells it.
fn file_origin(text: &str) -> Option<String> {
    let uri: ureq::http::Uri = text.parse().ok()?;
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() || text.contains('#') {
        return None;
    }
    origin_of(text)
}

/// The host a cookie domain names (`.example.com` is `example.com`), when it is a host
/// name or an IP address and nothing else.
fn cookie_host(domain: &str) -> Option<String> {
    let host = domain.strip_prefix('.').unwrap_or(domain);
    let name = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    let ipv6 = host.len() > 2
        && host.starts_with('[')
        && host.ends_with(']')
        && host[1..host.len() - 1].parse::<std::net::Ipv6Addr>().is_ok();
    (name || ipv6).then(|| host.to_ascii_lowercase())
}

/// Why the policy refuses `host`, by its spelling alone (the file's names are never
/// looked up: [`crate::integration::name_refusal`]), cached per host.
fn host_refusal(policy: &NetworkSettings, cache: &mut BTreeMap<String, Option<String>>, host: &str) -> Option<String> {
    cache
        .entry(host.to_owned())
        .or_insert_with(|| crate::integration::name_refusal(policy, host))
        .clone()
}

/// Clears the browser's cookies and known origins' `localStorage`, then sets what the
/// plan holds for hosts `policy` allows. How many cookies were set, the origins set,
/// and what was skipped.
fn restore(
    tab: &Driven,
    origins: &Origins,
    open: &dyn Fn() -> Result<super::page::PageHandle, ToolError>,
    plan: Plan,
    policy: &NetworkSettings,
) -> Result<(usize, Vec<String>, Vec<Skipped>), ToolError> {
    let mut cache = BTreeMap::new();
    let mut skipped = Vec::new();
    tab.call(ClearBrowserCookies(None), "clear the cookies")?;
    let mut set = 0;
    for (cookie, host) in plan.cookies {
        let item = format!("`{}` for {}", cookie.name, cookie.domain);
        if let Some(reason) = host_refusal(policy, &mut cache, &host) {
            skipped.push(Skipped {
                kind: "cookie".into(),
                item,
                reason,
            });
            continue;
        }
        let answer = tab.call(
            SetCookie {
                name: cookie.name,
                value: cookie.value,
                url: None,
                domain: Some(cookie.domain),
                path: Some(cookie.path),
                secure: Some(cookie.secure),
                http_only: Some(cookie.http_only),
                same_site: cookie.same_site.map(|s| match s {
                    StateSameSite::Strict => CookieSameSite::Strict,
                    StateSameSite::Lax => CookieSameSite::Lax,
                    StateSameSite::None => CookieSameSite::None,
                }),
                expires: (cookie.expires >= 0.0).then_some(cookie.expires),
                priority: None,
                same_party: None,
                source_scheme: None,
                source_port: None,
                partition_key: None,
            },
            "set a cookie",
        );
        match answer {
            Ok(answer) if answer.success => set += 1,
            refused => skipped.push(Skipped {
                kind: "cookie".into(),
                item,
                reason: match refused {
                    Err(e) => format!("Chromium refused it: {e}"),
                    Ok(_) => "Chromium refused it".into(),
                },
            }),
        }
    }
    let mut allowed = Vec::new();
    for (origin, entries) in plan.origins {
        let host = origin.split_once("://").map_or("", |(_, rest)| rest);
        let host = host
            .rsplit_once(':')
            .filter(|(_, port)| port.parse::<u16>().is_ok())
            .map_or(host, |(h, _)| h);
        match host_refusal(policy, &mut cache, host) {
            Some(reason) => skipped.push(Skipped {
                kind: "origin".into(),
                item: origin,
                reason,
            }),
            None => allowed.push((origin, entries)),
        }
    }
    let mut cleared: BTreeSet<String> = super::origins::list(origins).into_iter().collect();
    cleared.extend(allowed.iter().map(|(o, _)| o.clone()));
    let mut restored = Vec::new();
    if !cleared.is_empty() {
        let mut pages = AtOrigin::new(tab, open);
        for origin in cleared {
            let entries = allowed
                .iter()
                .find(|(o, _)| *o == origin)
                .map(|(_, e)| e.iter().map(|nv| [&nv.name, &nv.value]).collect::<Vec<_>>())
                .unwrap_or_default();
            let expression = format!(
                "(() => {{ localStorage.clear(); for (const [k, v] of {}) localStorage.setItem(k, v); \
                 return JSON.stringify(localStorage.length); }})()",
                json!(entries)
            );
            match pages.run(&origin, |page| {
                page.evaluate_json_in(None, "restore localStorage", &expression)
            }) {
                Ok(_) if allowed.iter().any(|(o, _)| *o == origin) => {
                    super::origins::record(origins, &url_of(&origin));
                    restored.push(origin);
                }
                Ok(_) => {}
                Err(e) => skipped.push(Skipped {
                    kind: "origin".into(),
                    item: origin,
                    reason: e.to_string(),
                }),
            }
        }
    }
    Ok((set, restored, skipped))
}

/// The root URL of an origin.
fn url_of(origin: &str) -> String {
    format!("{origin}/")
}

/// A time as a file name: `2026-05-04T10-20-30-123Z` (Playwright's).
fn stamp(now: std::time::SystemTime) -> String {
    let since = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, millis) = (since.as_secs(), since.subsec_millis());
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}-{:02}-{:02}-{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::{cookie_host, stamp};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn timestamps_are_playwrights() {
        let at = UNIX_EPOCH + Duration::from_millis(1_780_000_000_123);
        assert_eq!(stamp(at), "2026-05-28T20-26-40-123Z");
        assert_eq!(stamp(UNIX_EPOCH), "1970-01-01T00-00-00-000Z");
    }

    #[test]
    fn origins_in_a_file_are_origins_only() {
        assert_eq!(
            super::file_origin("http://127.0.0.1:9/").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(
            super::file_origin("https://A.example").as_deref(),
            Some("https://a.example")
        );
        for bad in [
            "http://a/x",
            "http://a/?q",
            "http://a#f",
            "file:///etc",
            "http://u@a",
            "a",
        ] {
            assert_eq!(super::file_origin(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cookie_domains_are_host_names_only() {
        assert_eq!(cookie_host(".Example.com").as_deref(), Some("example.com"));
        assert_eq!(cookie_host("127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(cookie_host("[::1]").as_deref(), Some("[::1]"));
        for bad in ["", ".", "a@b.com", "evil.com/x", "a b", "a:80", "[zz]"] {
            assert_eq!(cookie_host(bad), None, "{bad:?}");
        }
    }
}
