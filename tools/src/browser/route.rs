//! `browser_route` and `browser_unroute` (Playwright MCP's network family): requests the
//! page makes that match a URL pattern are answered by kyro (fulfilled with a given status
//! and body) or aborted, after the network policy allowed them; nothing reaches the
//! network for a routed request.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::routes::{Decision, Route, Routes};
use super::session::with_routes;
use crate::Failure;
use crate::settings::NetworkSettings;

/// Most routes at once.
const MAX_ROUTES: usize = 100;

/// How a route answers.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RouteAction {
    /// With `status`, `content_type` and `body`.
    #[default]
    Fulfill,
    /// Fail the request.
    Abort,
}

/// Answer the page's requests to matching URLs yourself (`fulfill` or `abort`).
/// The network policy decides first; a routed request never reaches the network. Later routes win.
#[tool(
    name = "browser_route",
    title = "Route browser requests",
    category = "browser.network",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserRoute {
    /// Glob over the whole URL (`*` within a segment, `**` across: `**/api/users*`).
    #[schemars(length(min = 1, max = 2048))]
    pub pattern: String,
    /// `fulfill` (the default) or `abort`.
    #[serde(default)]
    pub action: RouteAction,
    /// Status; default 200.
    #[schemars(range(min = 100, max = 599))]
    pub status: Option<u16>,
    /// Content type; default `text/plain`. No control characters but tab.
    #[tool(alias = "contentType")]
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\x00-\\x08\\x0A-\\x1F\\x7F]*$"))]
    pub content_type: Option<String>,
    /// Body text; default empty.
    #[schemars(length(max = 1048576))]
    pub body: Option<String>,
}

/// The routes in place.
#[kyro_core::output]
#[derive(Debug)]
pub struct RouteList {
    /// Each route, oldest first.
    pub routes: Vec<RouteInfo>,
}

/// One route.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RouteInfo {
    /// Its pattern.
    pub pattern: String,
    /// `fulfill` or `abort`.
    pub action: String,
    /// The status it answers with, when it fulfils.
    pub status: Option<u16>,
}

fn list(routes: &Routes) -> RouteList {
    let routes = routes.lock().unwrap_or_else(|e| e.into_inner());
    RouteList {
        routes: routes
            .iter()
            .map(|r| RouteInfo {
                pattern: r.pattern.clone(),
                action: if r.decision == Decision::Fail {
                    "abort"
                } else {
                    "fulfill"
                }
                .into(),
                status: match r.decision {
                    Decision::Fulfill { status, .. } => Some(status),
                    _ => None,
                },
            })
            .collect(),
    }
}

impl Execute for BrowserRoute {
    type Output = RouteList;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<RouteList, ToolError> {
        let glob = globset::GlobBuilder::new(&self.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| Failure::InvalidPattern {
                pattern: self.pattern.clone(),
                message: e.to_string(),
            })?
            .compile_matcher();
        let decision = match self.action {
            RouteAction::Abort => Decision::Fail,
            RouteAction::Fulfill => Decision::Fulfill {
                status: self.status.unwrap_or(200),
                content_type: self.content_type.clone().unwrap_or_else(|| "text/plain".into()),
                body: BASE64_STANDARD.encode(self.body.unwrap_or_default()),
            },
        };
        let route = Route {
            pattern: self.pattern,
            glob,
            decision,
        };
        with_routes(cx, move |routes| {
            let mut held = routes.lock().unwrap_or_else(|e| e.into_inner());
            held.retain(|r| r.pattern != route.pattern);
            if held.len() >= MAX_ROUTES {
                return Err(Failure::InvalidRequest {
                    message: format!("{MAX_ROUTES} routes are in place, the most; remove some with browser_unroute"),
                }
                .into());
            }
            held.push(route);
            drop(held);
            Ok(list(routes))
        })
        .await
    }
}

/// Remove the route with `pattern`, or all routes.
#[tool(
    name = "browser_unroute",
    title = "Remove browser routes",
    category = "browser.network",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserUnroute {
    /// Route pattern; default all.
    #[schemars(length(min = 1, max = 2048))]
    pub pattern: Option<String>,
}

impl Execute for BrowserUnroute {
    type Output = RouteList;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<RouteList, ToolError> {
        with_routes(cx, move |routes| {
            routes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|r| self.pattern.as_ref().is_some_and(|p| *p != r.pattern));
            Ok(list(routes))
        })
        .await
    }
}

/// List the routes in place (from browser_route), oldest first.
#[tool(
    name = "browser_route_list",
    title = "List browser routes",
    category = "browser.network",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserRouteList {}

impl Execute for BrowserRouteList {
    type Output = RouteList;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<RouteList, ToolError> {
        with_routes(cx, |routes| Ok(list(routes))).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_content_type_holding_a_control_character_but_tab_is_refused_by_the_schema() {
        let registry = kyro_core::Registry::with_catalog(crate::BUILTINS).unwrap();
        let snapshot = registry.snapshot();
        let schema = snapshot.get("browser_route").unwrap().input().unwrap();
        let with = |content_type: &str| json!({ "pattern": "**/api/*", "content_type": content_type });
        for refused in [
            "text/html\r\nX-Injected: yes",
            "text/plain\n",
            "text/plain\r",
            "a\0b",
            "a\u{1b}b",
            "a\u{7f}",
        ] {
            assert!(!schema.is_valid(&with(refused)), "{refused:?}");
        }
        for taken in [
            "text/plain",
            "text/html; charset=utf-8",
            "text/plain;\tcharset=utf-8",
            "text/plain; name=\"é\"",
        ] {
            assert!(schema.is_valid(&with(taken)), "{taken:?}");
        }
    }
}
