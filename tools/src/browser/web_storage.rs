//! The page's Web Storage, `localStorage` and `sessionStorage`, through one implementation:
//! read and changed in kyro's own world of the page (the page's scripts cannot change what
//! it reads).

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use serde::Serialize;
use serde_json::json;

use super::driven::Driven;
use super::session::{error, with_page};
use crate::Failure;
use crate::settings::NetworkSettings;

/// The page's `localStorage`.
#[kyro_core::output]
#[derive(Debug)]
pub struct LocalStorage {
    /// The origin it belongs to (the current page's).
    pub origin: String,
    /// Its entries (the one asked for, or all), by key.
    pub entries: Vec<StorageEntry>,
}

/// The page's `sessionStorage` (its tab's, for its origin).
#[kyro_core::output]
#[derive(Debug)]
pub struct SessionStorage {
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

/// A storage area of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Area {
    Local,
    Session,
}

impl Area {
    /// Its name in the page (`localStorage`).
    fn name(self) -> &'static str {
        match self {
            Area::Local => "localStorage",
            Area::Session => "sessionStorage",
        }
    }
}

/// What a call changes before the area is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change<'a> {
    /// Nothing.
    Nothing,
    /// This entry set.
    Set(&'a str, &'a str),
    /// This key removed (refused when it is not there).
    Delete(&'a str),
    /// Every entry removed.
    Clear,
}

/// The page's `area` after `change`: its origin and its entries (`key`'s, or all), by key.
pub(crate) fn web_storage(
    tab: &Driven,
    area: Area,
    key: Option<&str>,
    change: Change,
) -> Result<(String, Vec<StorageEntry>), ToolError> {
    let change_json = match change {
        Change::Nothing => json!(null),
        Change::Set(k, v) => json!({ "set": [k, v] }),
        Change::Delete(k) => json!({ "delete": k }),
        Change::Clear => json!({ "clear": true }),
    };
    let operation = format!("read {}", area.name());
    let expression = format!(
        "(() => {{ const s = window.{area}, key = {key}, change = {change}; \
         if (change && change.set) s.setItem(change.set[0], change.set[1]); \
         if (change && change.delete !== undefined) {{ \
           if (s.getItem(change.delete) === null) return JSON.stringify({{origin: location.origin, missing: true}}); \
           s.removeItem(change.delete); }} \
         if (change && change.clear) s.clear(); \
         const keys = []; for (let i = 0; i < s.length; i++) keys.push(s.key(i)); keys.sort(); \
         const shown = key === null ? keys : keys.filter(k => k === key); \
         return JSON.stringify({{origin: location.origin, entries: shown.map(k => ({{key: k, value: s.getItem(k)}}))}}); }})()",
        area = area.name(),
        key = json!(key),
        change = change_json,
    );
    let value = tab.evaluate_json_in(None, &operation, &expression)?;
    if value["missing"] == true
        && let Change::Delete(key) = change
    {
        return Err(Failure::NoSuchRecord {
            record: format!("{} key", area.name()),
            key: key.to_owned(),
        }
        .into());
    }
    let entries = serde_json::from_value(value["entries"].clone()).map_err(|e| error(&operation, e))?;
    Ok((value["origin"].as_str().unwrap_or_default().to_owned(), entries))
}

/// The page's `localStorage` after `change`.
pub(crate) fn local(tab: &Driven, key: Option<&str>, change: Change) -> Result<LocalStorage, ToolError> {
    let (origin, entries) = web_storage(tab, Area::Local, key, change)?;
    Ok(LocalStorage { origin, entries })
}

/// The page's `sessionStorage` after `change`.
fn session(tab: &Driven, key: Option<&str>, change: Change) -> Result<SessionStorage, ToolError> {
    let (origin, entries) = web_storage(tab, Area::Session, key, change)?;
    Ok(SessionStorage { origin, entries })
}

/// List every entry of the page's `localStorage`.
#[tool(
    name = "browser_localstorage_list",
    title = "List the page's localStorage",
    category = "browser.storage",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserLocalstorageList {}

impl Execute for BrowserLocalstorageList {
    type Output = LocalStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<LocalStorage, ToolError> {
        with_page(cx, move |tab, _| local(tab, None, Change::Nothing)).await
    }
}

/// Delete a `localStorage` entry of the page; refused when there is none.
/// Returns the entries left.
#[tool(
    name = "browser_localstorage_delete",
    title = "Delete a localStorage entry",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserLocalstorageDelete {
    /// The key.
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
}

impl Execute for BrowserLocalstorageDelete {
    type Output = LocalStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<LocalStorage, ToolError> {
        with_page(cx, move |tab, _| local(tab, None, Change::Delete(&self.key))).await
    }
}

/// Clear the page's `localStorage` (its origin's).
#[tool(
    name = "browser_localstorage_clear",
    title = "Clear the page's localStorage",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserLocalstorageClear {}

impl Execute for BrowserLocalstorageClear {
    type Output = LocalStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<LocalStorage, ToolError> {
        with_page(cx, move |tab, _| local(tab, None, Change::Clear)).await
    }
}

/// List every entry of the page's `sessionStorage`.
#[tool(
    name = "browser_sessionstorage_list",
    title = "List the page's sessionStorage",
    category = "browser.storage",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserSessionstorageList {}

impl Execute for BrowserSessionstorageList {
    type Output = SessionStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<SessionStorage, ToolError> {
        with_page(cx, move |tab, _| session(tab, None, Change::Nothing)).await
    }
}

/// Read the page's `sessionStorage`: one `key` (no entries when absent), or every entry.
#[tool(
    name = "browser_sessionstorage_get",
    title = "Read the page's sessionStorage",
    category = "browser.storage",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserSessionstorageGet {
    /// Key; default all.
    #[schemars(length(min = 1, max = 1024))]
    pub key: Option<String>,
}

impl Execute for BrowserSessionstorageGet {
    type Output = SessionStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<SessionStorage, ToolError> {
        with_page(cx, move |tab, _| session(tab, self.key.as_deref(), Change::Nothing)).await
    }
}

/// Set a `sessionStorage` entry of the page.
/// Returns it as stored.
#[tool(
    name = "browser_sessionstorage_set",
    title = "Set the page's sessionStorage",
    category = "browser.storage",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserSessionstorageSet {
    /// The key.
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
    /// The value.
    #[schemars(length(max = 1048576))]
    pub value: String,
}

impl Execute for BrowserSessionstorageSet {
    type Output = SessionStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<SessionStorage, ToolError> {
        with_page(cx, move |tab, _| {
            session(tab, Some(&self.key), Change::Set(&self.key, &self.value))
        })
        .await
    }
}

/// Delete a `sessionStorage` entry of the page; refused when there is none.
/// Returns the entries left.
#[tool(
    name = "browser_sessionstorage_delete",
    title = "Delete a sessionStorage entry",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserSessionstorageDelete {
    /// The key.
    #[schemars(length(min = 1, max = 1024))]
    pub key: String,
}

impl Execute for BrowserSessionstorageDelete {
    type Output = SessionStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<SessionStorage, ToolError> {
        with_page(cx, move |tab, _| session(tab, None, Change::Delete(&self.key))).await
    }
}

/// Clear the page's `sessionStorage` (its tab's, for its origin).
#[tool(
    name = "browser_sessionstorage_clear",
    title = "Clear the page's sessionStorage",
    category = "browser.storage",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserSessionstorageClear {}

impl Execute for BrowserSessionstorageClear {
    type Output = SessionStorage;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<SessionStorage, ToolError> {
        with_page(cx, move |tab, _| session(tab, None, Change::Clear)).await
    }
}
