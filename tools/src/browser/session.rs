//! One headless Chromium per workspace: started on first use, driven over the DevTools
//! protocol, killed with the last runtime over the workspace (or with kyro itself).
//!
//! The process ([`super::launch`]) is spawned by a thread that owns it for its whole
//! life, with `PR_SET_PDEATHSIG` so that Chromium dies when that thread (and so kyro)
//! dies, and in its own session and process group so that its helpers die with it. It runs
//! under kyro's OS sandbox, in a network namespace of its own ([`super::isolation`]). The
//! profile is a new empty temporary directory, removed when the session ends; downloads
//! are denied.
//!
//! Network: every request the page makes pauses in Fetch interception and is checked (and
//! reported) by URL; beneath that, Chromium can reach nothing but kyro's proxy
//! ([`super::proxy`]), which connects only what the call's policy allows, to the addresses
//! it checked.

use crate::Failure;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::settings::NetworkSettings;
use headless_chrome::Browser;
use headless_chrome::browser::tab::RequestPausedDecision;
use headless_chrome::protocol::cdp::Fetch::FailRequest;
use headless_chrome::protocol::cdp::Network::ErrorReason;
use kyro_core::receipt::ObservedEffect;
use kyro_core::{ToolContext, ToolError};

use super::driven::Driven;
use super::isolation::{Handoff, Reach, Relay};
use super::launch::{Process, chromium_path};
use super::page::{COMMAND_TIMEOUT, Dialogs, PageHandle};
use super::proxy::Proxy;
pub(crate) use super::report::{Seen, error};
use crate::integration::check_url;

/// The open pages, and the one the tools drive.
struct Tabs {
    open: Vec<Arc<PageHandle>>,
    current: usize,
}

/// The most pages open at once.
const MAX_TABS: usize = 16;

/// A running browser with its pages.
pub(crate) struct Session {
    tabs: Mutex<Tabs>,
    /// What the pages' Fetch interception saw.
    seen: Seen,
    /// What the proxy refused: requests the interception does not see (other frames'
    /// processes, workers, WebSockets, Chromium's own), and addresses that changed after
    /// the interception's check.
    blocked: Seen,
    dialogs: Dialogs,
    /// Requests kyro answers itself (`browser_route`), for every page.
    routes: super::routes::Routes,
    /// The origins the pages loaded documents from, for `browser_storage_state`.
    origins: super::origins::Origins,
    /// The video being recorded and the action annotations (the video tools).
    studio: super::recorder::Studio,
    /// One call drives the browser at a time, so requests and dialogs belong to one call.
    busy: Mutex<()>,
    /// Every page offline (`browser_network_state_set`), pages opened later too.
    offline: std::sync::atomic::AtomicBool,
    /// The browser's DevTools address, for each page's own connection.
    devtools: String,
    /// How kyro's connections reach the DevTools address.
    reach: Reach,
    // Field order: the pages and the DevTools connection close before the process is killed.
    browser: Browser,
    process: Process,
    proxy: Proxy,
}

impl Session {
    /// Starts the browser, which may read the files of `readable` (the roots a page's
    /// uploads come from) besides its own.
    fn start(readable: &[std::path::PathBuf]) -> Result<Session, ToolError> {
        let blocked = Seen::default();
        let (process, devtools, reach, proxy, browser_url) = if super::isolation::available() {
            // The proxy listens where only Chromium is, on a port known before it starts.
            let address = std::net::SocketAddr::from(([127, 0, 0, 1], super::isolation::PROXY_PORT));
            let handoff = Handoff::new()?;
            let (process, devtools) = Process::start(&chromium_path(), address, Some(&handoff), readable)?;
            let inside = handoff.receive()?;
            let proxy = Proxy::serve(inside.proxy, blocked.clone())?;
            let relay = Relay::start(inside.sockets.clone())?;
            let browser_url = relay.url(&devtools);
            (
                process,
                devtools,
                Reach::Inside {
                    pool: inside.sockets,
                    _relay: relay,
                },
                proxy,
                browser_url,
            )
        } else {
            let proxy = Proxy::start(blocked.clone())?;
            let (process, devtools) = Process::start(&chromium_path(), proxy.addr(), None, readable)?;
            let browser_url = devtools.clone();
            (process, devtools, Reach::Host, proxy, browser_url)
        };
        let browser = Browser::connect_with_timeout(browser_url, Duration::from_secs(365 * 24 * 3600))
            .map_err(|e| error("connect to Chromium", e))?;
        browser.set_default_timeout(COMMAND_TIMEOUT);
        let dialogs = Dialogs::default();
        let first = PageHandle::open(&browser, &devtools, &reach, &dialogs)?;
        Ok(Session {
            tabs: Mutex::new(Tabs {
                open: vec![Arc::new(first)],
                current: 0,
            }),
            seen: Seen::default(),
            blocked,
            dialogs,
            routes: super::routes::Routes::default(),
            origins: super::origins::Origins::default(),
            studio: super::recorder::Studio::default(),
            busy: Mutex::new(()),
            offline: std::sync::atomic::AtomicBool::new(false),
            devtools,
            reach,
            browser,
            process,
            proxy,
        })
    }

    /// The page the tools drive.
    fn current(&self) -> Arc<PageHandle> {
        let tabs = self.tabs.lock().unwrap_or_else(|e| e.into_inner());
        tabs.open[tabs.current].clone()
    }

    /// Installs the interceptor that checks every request the page makes against `policy`.
    fn guard(&self, policy: NetworkSettings) -> Result<(), ToolError> {
        self.proxy.set_policy(policy.clone());
        let pages: Vec<Arc<PageHandle>> = self.tabs.lock().unwrap_or_else(|e| e.into_inner()).open.clone();
        for page in pages {
            self.guard_page(&page, policy.clone())?;
        }
        Ok(())
    }

    /// The interceptor of one page.
    fn guard_page(&self, page: &PageHandle, policy: NetworkSettings) -> Result<(), ToolError> {
        use super::routes::Decision;
        let seen = self.seen.clone();
        let log = page.log.clone();
        let routes = self.routes.clone();
        let origins = self.origins.clone();
        // One decision for both connections: checked, logged, recorded for the call; then,
        // allowed, routed if a route matches.
        let check =
            move |paused: &headless_chrome::protocol::cdp::Fetch::events::RequestPausedEventParams| -> Decision {
                let (method, url) = (paused.request.method.as_str(), paused.request.url.as_str());
                let refusal = request_refusal(&policy, url);
                if refusal.is_none()
                    && paused.resource_Type == headless_chrome::protocol::cdp::Network::ResourceType::Document
                {
                    super::origins::record(&origins, url);
                }
                let decision = match refusal {
                    Some(_) => Decision::Fail,
                    None => super::routes::routed(&routes, url).unwrap_or(Decision::Continue),
                };
                let line = match (&refusal, &decision) {
                    (Some(why), _) => format!("{method} {url} (refused: {why})"),
                    (None, Decision::Fulfill { status, .. }) => format!("{method} {url} (routed: answered {status})"),
                    (None, Decision::Fail) => format!("{method} {url} (routed: aborted)"),
                    (None, Decision::Continue) => format!("{method} {url}"),
                };
                log.request(super::page::Logged {
                    line,
                    network_id: paused.network_id.clone(),
                    headers: super::page::header_pairs(&paused.request.headers.0),
                    post_data: paused.request.post_data.clone(),
                });
                if let Ok(mut seen) = seen.lock() {
                    seen.push((url.to_owned(), refusal));
                }
                decision
            };
        if let Some(direct) = &page.direct {
            direct.intercept(Box::new(move |paused| check(paused)));
            return Ok(());
        }
        page.tab
            .enable_request_interception(Arc::new(
                move |_transport,
                      _session,
                      event: headless_chrome::protocol::cdp::Fetch::events::RequestPausedEvent| {
                    match check(&event.params) {
                        Decision::Continue => RequestPausedDecision::Continue(None),
                        Decision::Fail => RequestPausedDecision::Fail(FailRequest {
                            request_id: event.params.request_id,
                            error_reason: ErrorReason::BlockedByClient,
                        }),
                        Decision::Fulfill {
                            status,
                            content_type,
                            body,
                        } => RequestPausedDecision::Fulfill(headless_chrome::protocol::cdp::Fetch::FulfillRequest {
                            request_id: event.params.request_id,
                            response_code: u32::from(status),
                            response_headers: Some(vec![headless_chrome::protocol::cdp::Fetch::HeaderEntry {
                                name: "Content-Type".into(),
                                value: content_type,
                            }]),
                            binary_response_headers: None,
                            body: Some(body),
                            response_phrase: None,
                        }),
                    }
                },
            ))
            .map_err(|e| error("intercept requests", e))
    }
}

/// Why the page may not make this request, or `None` when it may: http(s) URLs pass the
/// same checks as `web_fetch`; data and blob URLs carry no request; everything else is
/// refused.
pub(crate) fn request_refusal(policy: &NetworkSettings, url: &str) -> Option<String> {
    if url.starts_with("data:") || url.starts_with("blob:") || url == "about:blank" {
        return None;
    }
    match check_url(policy, url) {
        Ok(_) => None,
        Err(error) => match Failure::of(&error) {
            Some(Failure::UrlRefused { reason, .. }) => Some(reason),
            _ => Some(error.to_string()),
        },
    }
}

/// Runs `work` on the workspace's page, on a blocking thread, under the call's network
/// policy; the requests the page made are recorded as the call's effects.
pub(crate) async fn with_page<T, F>(cx: &ToolContext, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Driven, &Dialogs) -> Result<T, ToolError> + Send + 'static,
{
    with_session(cx, move |session, _| {
        work(&session.current().driven().annotated(&session.studio), &session.dialogs)
    })
    .await
}

/// Runs `work` on the page the tools drive (the page itself, for a recording of it) and
/// the session's video state.
pub(crate) async fn with_studio<T, F>(cx: &ToolContext, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&PageHandle, &super::recorder::Studio) -> Result<T, ToolError> + Send + 'static,
{
    with_session(cx, move |session, _| work(&session.current(), &session.studio)).await
}

/// Runs `work` on the browser's routes (the browser started on first use).
pub(crate) async fn with_routes<T, F>(cx: &ToolContext, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&super::routes::Routes) -> Result<T, ToolError> + Send + 'static,
{
    with_session(cx, move |session, _| work(&session.routes)).await
}

/// Takes every page of the browser offline (their requests fail as without a network) or
/// back online; pages opened later follow. The policy checks every request either way.
/// How many pages there are.
pub(crate) async fn set_offline(cx: &ToolContext, offline: bool) -> Result<usize, ToolError> {
    with_session(cx, move |session, _| {
        session.offline.store(offline, std::sync::atomic::Ordering::SeqCst);
        let pages: Vec<Arc<PageHandle>> = session.tabs.lock().unwrap_or_else(|e| e.into_inner()).open.clone();
        for page in &pages {
            page.driven().set_offline(offline)?;
        }
        Ok(pages.len())
    })
    .await
}

/// Runs `work` on the page the tools drive, with the origins the browser's pages loaded
/// documents from and a way to open a page of kyro's own (no tab: it answers nothing on
/// its own; its owner intercepts its requests and closes it).
pub(crate) async fn with_origins<T, F>(cx: &ToolContext, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Driven, &super::origins::Origins, &dyn Fn() -> Result<PageHandle, ToolError>) -> Result<T, ToolError>
        + Send
        + 'static,
{
    with_session(cx, move |session, _| {
        let open = || PageHandle::open(&session.browser, &session.devtools, &session.reach, &session.dialogs);
        work(&session.current().driven(), &session.origins, &open)
    })
    .await
}

/// What `browser_tabs` does.
#[derive(Debug, Clone)]
pub(crate) enum TabAction {
    /// List the tabs.
    List,
    /// Open a tab (at a URL the policy allows, or blank) and drive it.
    New(Option<String>),
    /// Drive this tab.
    Select(usize),
    /// Close this tab (the driven one when `None`).
    Close(Option<usize>),
}

/// One tab: its index, URL and title, and whether the tools drive it.
pub(crate) type TabInfo = (usize, String, String, bool);

/// Does `action` on the browser's tabs; the tabs afterwards.
pub(crate) async fn tabs(cx: &ToolContext, action: TabAction) -> Result<Vec<TabInfo>, ToolError> {
    with_session(cx, move |session, policy| {
        let invalid = |message: String| -> ToolError { Failure::InvalidRequest { message }.into() };
        match action {
            TabAction::List => {}
            TabAction::New(url) => {
                if session.tabs.lock().unwrap_or_else(|e| e.into_inner()).open.len() >= MAX_TABS {
                    return Err(invalid(format!("{MAX_TABS} tabs are open already; close one first")));
                }
                let page = Arc::new(PageHandle::open(
                    &session.browser,
                    &session.devtools,
                    &session.reach,
                    &session.dialogs,
                )?);
                session.guard_page(&page, policy.clone())?;
                if session.offline.load(std::sync::atomic::Ordering::SeqCst) {
                    page.driven().set_offline(true)?;
                }
                {
                    let mut tabs = session.tabs.lock().unwrap_or_else(|e| e.into_inner());
                    tabs.open.push(page.clone());
                    tabs.current = tabs.open.len() - 1;
                }
                if let Some(url) = url {
                    page.driven().navigate(&url)?;
                }
            }
            TabAction::Select(index) => {
                let mut tabs = session.tabs.lock().unwrap_or_else(|e| e.into_inner());
                if index >= tabs.open.len() {
                    return Err(invalid(format!(
                        "there is no tab {index}: the tabs are 0 to {}",
                        tabs.open.len() - 1
                    )));
                }
                tabs.current = index;
            }
            TabAction::Close(index) => {
                let closed = {
                    let mut tabs = session.tabs.lock().unwrap_or_else(|e| e.into_inner());
                    let index = index.unwrap_or(tabs.current);
                    if index >= tabs.open.len() {
                        return Err(invalid(format!(
                            "there is no tab {index}: the tabs are 0 to {}",
                            tabs.open.len() - 1
                        )));
                    }
                    if tabs.open.len() == 1 {
                        return Err(invalid("this is the only tab; browser_close closes the browser".into()));
                    }
                    let closed = tabs.open.remove(index);
                    if index < tabs.current || tabs.current == tabs.open.len() {
                        tabs.current -= 1;
                    }
                    closed
                };
                closed.tab.close(false).map_err(|e| error("close the tab", e))?;
            }
        }
        let (open, current) = {
            let tabs = session.tabs.lock().unwrap_or_else(|e| e.into_inner());
            (tabs.open.clone(), tabs.current)
        };
        open.iter()
            .enumerate()
            .map(|(i, page)| {
                let (url, title, _) = super::script::page_info(&page.driven())?;
                Ok((i, url, title, i == current))
            })
            .collect()
    })
    .await
}

/// Runs `work` on the workspace's browser (started on first use), on a blocking thread,
/// under the call's network policy; the requests the pages made are recorded as the
/// call's effects.
async fn with_session<T, F>(cx: &ToolContext, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&Session, &NetworkSettings) -> Result<T, ToolError> + Send + 'static,
{
    let workspace = cx.workspace().clone();
    let policy = NetworkSettings::clone(&*cx.scope().settings::<NetworkSettings>()?);
    let roots: Vec<std::path::PathBuf> = cx.scope().roots().iter().map(|r| r.path().to_owned()).collect();
    let (result, seen, blocked) = tokio::task::spawn_blocking(move || {
        let session = workspace.resource(|| Session::start(&roots))?;
        if !session.process.alive() {
            workspace.forget_resource(&session);
            return Err(error("continue", "Chromium exited; the next call starts a new browser"));
        }
        let _busy = session.busy.lock().unwrap_or_else(|e| e.into_inner());
        session.guard(policy.clone())?;
        session.dialogs.take();
        session.blocked.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let result = work(&session, &policy);
        let seen = std::mem::take(&mut *session.seen.lock().unwrap_or_else(|e| e.into_inner()));
        let blocked = std::mem::take(&mut *session.blocked.lock().unwrap_or_else(|e| e.into_inner()));
        if result.is_err() && !session.process.alive() {
            workspace.forget_resource(&session);
        }
        Ok((result, seen, blocked))
    })
    .await
    .map_err(|e| error("run", e))??;
    let mut refused = None;
    for (url, refusal) in seen {
        cx.effects().push(match refusal {
            None => ObservedEffect::Request { url, status: None },
            Some(reason) => {
                refused.get_or_insert((url.clone(), reason));
                ObservedEffect::RefusedRequest { url }
            }
        });
    }
    for (url, _) in blocked {
        cx.effects().push(ObservedEffect::RefusedRequest { url });
    }
    // A page load that failed because the policy refused its request (a redirect to a
    // private address, say) is reported as that refusal.
    match (result, refused) {
        (Err(e), Some((url, reason))) if e.kind() == "browser" && e.to_string().contains("ERR_BLOCKED_BY_CLIENT") => {
            Err(Failure::UrlRefused { url, reason }.into())
        }
        (result, _) => result,
    }
}

/// Closes the workspace's browser, if one runs: Chromium ends with its session, and the
/// next browser call starts a new one. Whether one ran.
pub(crate) async fn close(cx: &ToolContext) -> Result<bool, ToolError> {
    let workspace = cx.workspace().clone();
    tokio::task::spawn_blocking(move || {
        let Ok(session) = workspace.resource::<Session, ()>(|| Err(())) else {
            return false;
        };
        // Wait for a call that drives the page to finish.
        drop(session.busy.lock().unwrap_or_else(|e| e.into_inner()));
        workspace.forget_resource(&session);
        true
    })
    .await
    .map_err(|e| error("close the browser", e))
}
