//! The storage family (Playwright MCP's `--caps storage`): the browser's cookies, and the
//! page's `localStorage` (the rest of Web Storage is in [`super::web_storage`]).

use headless_chrome::protocol::cdp::Network::{
    ClearBrowserCookies, Cookie, CookieSameSite, DeleteCookies, GetAllCookies, SetCookie,
};
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::session::{error, with_page};
use super::web_storage::{Change, local};
pub use super::web_storage::{LocalStorage, StorageEntry};
use crate::Failure;
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

/// List the browser's cookies, every site's or one domain's (or path's).
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
    /// Only those whose path starts with this (`/app`).
    #[schemars(length(min = 1, max = 1024))]
    pub path: Option<String>,
}

impl Execute for BrowserCookieList {
    type Output = Cookies;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Cookies, ToolError> {
        with_page(cx, move |tab, _| {
            let mut listed = cookies(tab, self.domain.as_deref())?;
            if let Some(path) = &self.path {
                listed.cookies.retain(|c| c.path.starts_with(path.as_str()));
            }
            Ok(listed)
        })
        .await
    }
}

/// The browser's cookies named `name`, every domain's; refused when there is none.
fn named(tab: &super::driven::Driven, name: &str) -> Result<Cookies, ToolError> {
    let mut found = cookies(tab, None)?;
    found.cookies.retain(|c| c.name == name);
    if found.cookies.is_empty() {
        return Err(Failure::NoSuchRecord {
            record: "cookie".into(),
            key: name.to_owned(),
        }
        .into());
    }
    Ok(found)
}

/// Read a browser cookie by name (every domain's of that name); refused when there is none.
#[tool(
    name = "browser_cookie_get",
    title = "Get a browser cookie",
    category = "browser.storage",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserCookieGet {
    /// Its name.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

impl Execute for BrowserCookieGet {
    type Output = Cookies;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Cookies, ToolError> {
        with_page(cx, move |tab, _| named(tab, &self.name)).await
    }
}

/// Delete a browser cookie by name (every domain's of that name); refused when there is none.
/// Returns the cookies left.
#[tool(
    name = "browser_cookie_delete",
    title = "Delete a browser cookie",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserCookieDelete {
    /// Its name.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

impl Execute for BrowserCookieDelete {
    type Output = Cookies;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Cookies, ToolError> {
        with_page(cx, move |tab, _| {
            for cookie in named(tab, &self.name)?.cookies {
                delete(tab, &cookie.name, Some(&cookie.domain))?;
            }
            cookies(tab, None)
        })
        .await
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
                ToolError::from(Failure::InvalidRequest {
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
        with_page(cx, move |tab, _| local(tab, self.key.as_deref(), Change::Nothing)).await
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
            local(tab, Some(&self.key), Change::Set(&self.key, &self.value))
        })
        .await
    }
}
