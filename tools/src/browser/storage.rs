//! The storage family (Playwright MCP's `--caps storage`): the browser's cookies and the
//! page's `localStorage`.

use headless_chrome::protocol::cdp::Network::{
    ClearBrowserCookies, Cookie, CookieSameSite, DeleteCookies, GetAllCookies, SetCookie,
};
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::session::{error, with_page};
use crate::settings::NetworkSettings;

/// The browser's cookies.
#[kyro_core::output]
#[derive(Debug)]
pub struct Cookies {
    /// The cookies (of `domain`, when given), by domain and name.
    pub cookies: Vec<BrowserCookie>,
}

/// One cookie.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BrowserCookie {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// The domain it is sent to (a leading `.` includes subdomains).
    pub domain: String,
    /// The path it is sent under.
    pub path: String,
    /// When it expires, in seconds since the Unix epoch; absent for a session cookie.
    pub expires: Option<f64>,
    /// Hidden from the page's scripts.
    pub http_only: bool,
    /// Sent over HTTPS only.
    pub secure: bool,
    /// `Strict`, `Lax` or `None`, when set.
    pub same_site: Option<String>,
}

fn cookies(tab: &super::driven::Driven, domain: Option<&str>) -> Result<Cookies, ToolError> {
    let all = tab.call(GetAllCookies(None), "read the cookies")?.cookies;
    let matches = |c: &Cookie| domain.is_none_or(|d| c.domain.trim_start_matches('.') == d.trim_start_matches('.'));
    let mut cookies: Vec<BrowserCookie> = all
        .into_iter()
        .filter(matches)
        .map(|c| BrowserCookie {
            name: c.name,
            value: c.value,
            domain: c.domain,
            path: c.path,
            expires: (!c.session).then_some(c.expires),
            http_only: c.http_only,
            secure: c.secure,
            same_site: c.same_site.map(|s| format!("{s:?}")),
        })
        .collect();
    cookies.sort_by(|a, b| (&a.domain, &a.name).cmp(&(&b.domain, &b.name)));
    Ok(Cookies { cookies })
}

/// List the browser's cookies, every site's or one domain's.
#[tool(
    name = "browser_cookie_list",
    title = "List the browser's cookies",
    category = "browser.storage",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserCookieList {
    /// Only this domain's (`example.com`).
    #[schemars(length(min = 1, max = 253))]
    pub domain: Option<String>,
}

impl Execute for BrowserCookieList {
    type Output = Cookies;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Cookies, ToolError> {
        with_page(cx, move |tab, _| cookies(tab, self.domain.as_deref())).await
    }
}

/// `Strict`, `Lax` or `None` (needs `secure`).
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameSite {
    /// Same-site requests only.
    Strict,
    /// Also top-level navigations from other sites.
    Lax,
    /// Every request (needs `secure`).
    None,
}

/// Set a browser cookie.
/// Returns its domain's cookies after.
#[tool(
    name = "browser_cookie_set",
    title = "Set a browser cookie",
    category = "browser.storage",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserCookieSet {
    /// Its name.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// Its value.
    #[schemars(length(max = 4096))]
    pub value: String,
    /// Domain; default the current page's.
    #[schemars(length(min = 1, max = 253))]
    pub domain: Option<String>,
    /// Path; default `/`.
    #[schemars(length(min = 1, max = 1024))]
    pub path: Option<String>,
    /// Expiry in Unix seconds; default a session cookie.
    #[schemars(range(min = 0.0))]
    pub expires: Option<f64>,
    /// Hide it from page scripts.
    #[serde(default)]
    pub http_only: bool,
    /// HTTPS only.
    #[serde(default)]
    pub secure: bool,
    /// Its `SameSite`.
    pub same_site: Option<SameSite>,
}

impl Execute for BrowserCookieSet {
    type Output = Cookies;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Cookies, ToolError> {
        with_page(cx, move |tab, _| {
            let (url, _, _) = super::script::page_info(tab)?;
            let host = url
                .parse::<ureq::http::Uri>()
                .ok()
                .and_then(|u| u.host().map(str::to_owned));
            let domain = self.domain.clone().or(host).ok_or_else(|| {
                ToolError::from(crate::Failure::InvalidRequest {
                    message: "the page has no domain to set a cookie for; give `domain`, or open a page first".into(),
                })
            })?;
            let set = tab.call(
                SetCookie {
                    name: self.name.clone(),
                    value: self.value.clone(),
                    url: None,
                    domain: Some(domain.clone()),
                    path: Some(self.path.clone().unwrap_or_else(|| "/".into())),
                    secure: Some(self.secure),
                    http_only: Some(self.http_only),
                    same_site: self.same_site.map(|s| match s {
                        SameSite::Strict => CookieSameSite::Strict,
                        SameSite::Lax => CookieSameSite::Lax,
                        SameSite::None => CookieSameSite::None,
                    }),
                    expires: self.expires,
                    priority: None,
                    same_party: None,
                    source_scheme: None,
                    source_port: None,
                    partition_key: None,
                },
                "set a cookie",
            )?;
            if !set.success {
                return Err(error(
                    "set a cookie",
                    "Chromium refused the cookie (a `None` same-site needs `secure`)",
                ));
            }
            cookies(tab, Some(&domain))
        })
        .await
    }
}

/// Delete cookies: all, or those named `name` (of `domain`, if given).
/// Returns those left.
#[tool(
    name = "browser_cookie_clear",
    title = "Clear browser cookies",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserCookieClear {
    /// Only this name.
    #[schemars(length(min = 1, max = 256))]
    pub name: Option<String>,
    /// Only this domain's (with `name`).
    #[schemars(length(min = 1, max = 253))]
    pub domain: Option<String>,
}

impl Execute for BrowserCookieClear {
    type Output = Cookies;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Cookies, ToolError> {
        with_page(cx, move |tab, _| {
            match &self.name {
                None if self.domain.is_none() => {
                    tab.call(ClearBrowserCookies(None), "clear the cookies")?;
                }
                None => {
                    // Every cookie of the domain, by name.
                    for cookie in cookies(tab, self.domain.as_deref())?.cookies {
                        delete(tab, &cookie.name, Some(&cookie.domain))?;
                    }
                }
                Some(name) => {
                    let domains: Vec<String> = cookies(tab, self.domain.as_deref())?
                        .cookies
                        .into_iter()
                        .filter(|c| &c.name == name)
                        .map(|c| c.domain)
                        .collect();
                    for domain in domains {
                        delete(tab, name, Some(&domain))?;
                    }
                }
            }
            cookies(tab, None)
        })
        .await
    }
}

fn delete(tab: &super::driven::Driven, name: &str, domain: Option<&str>) -> Result<(), ToolError> {
    tab.call(
        DeleteCookies {
            name: name.to_owned(),
            url: None,
            domain: domain.map(str::to_owned),
            path: None,
            partition_key: None,
        },
        "delete a cookie",
    )
    .map(drop)
}

/// The page's `localStorage`.
#[kyro_core::output]
#[derive(Debug)]
pub struct LocalStorage {
    /// The origin it belongs to (the current page's).
    pub origin: String,
    /// Its entries (the one asked for, or all), by key.
    pub entries: Vec<StorageEntry>,
}

/// One entry.
#[kyro_core::input]
#[derive(Debug, Serialize)]
pub struct StorageEntry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// The page's `localStorage`, read in kyro's own world of the page (the page's scripts
/// cannot change what it reads).
fn local_storage(
    tab: &super::driven::Driven,
    key: Option<&str>,
    set: Option<(&str, &str)>,
) -> Result<LocalStorage, ToolError> {
    let expression = format!(
        "(() => {{ const key = {}, set = {}; if (set) localStorage.setItem(set[0], set[1]); \
         const keys = key === null ? Object.keys(localStorage).sort() : (localStorage.getItem(key) === null ? [] : [key]); \
         return JSON.stringify({{origin: location.origin, entries: keys.map(k => ({{key: k, value: localStorage.getItem(k)}}))}}); }})()",
        json!(key),
        json!(set.map(|(k, v)| [k, v])),
    );
    let value = tab.evaluate_json_in(None, "read localStorage", &expression)?;
    let entries = serde_json::from_value(value["entries"].clone()).map_err(|e| error("read localStorage", e))?;
    Ok(LocalStorage {
        origin: value["origin"].as_str().unwrap_or_default().to_owned(),
        entries,
    })
}

/// Read the page's `localStorage`: one `key`, or every entry.
#[tool(
    name = "browser_localstorage_get",
    title = "Read the page's localStorage",
    category = "browser.storage",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserLocalstorageGet {
    /// Key; default all.
    #[schemars(length(min = 1, max = 1024))]
    pub key: Option<String>,
}

impl Execute for BrowserLocalstorageGet {
    type Output = LocalStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<LocalStorage, ToolError> {
        with_page(cx, move |tab, _| local_storage(tab, self.key.as_deref(), None)).await
    }
}

/// Set a `localStorage` entry of the page.
/// Returns it as stored.
#[tool(
    name = "browser_localstorage_set",
    title = "Set the page's localStorage",
    category = "browser.storage",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserLocalstorageSet {
    /// The key.
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
    /// The value.
    #[schemars(length(max = 1048576))]
    pub value: String,
}

impl Execute for BrowserLocalstorageSet {
    type Output = LocalStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<LocalStorage, ToolError> {
        with_page(cx, move |tab, _| {
            local_storage(tab, Some(&self.key), Some((&self.key, &self.value)))
        })
        .await
    }
}
