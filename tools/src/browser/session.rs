//! One headless Chromium per workspace: started on first use, driven over the DevTools
//! protocol, killed with the last runtime over the workspace (or with kyro itself).
//!
//! The process is spawned by a thread that owns it for its whole life, with
//! `PR_SET_PDEATHSIG` so that Chromium dies when that thread (and so kyro) dies, and in its
//! own process group so that its helpers die with it. The profile is a new empty temporary
//! directory, removed when the session ends.
//!
//! Network: every request the page makes pauses in Fetch interception and is checked (and
//! reported) by URL; beneath that, Chromium can reach nothing but kyro's proxy
//! ([`super::proxy`]), which connects only what the call's policy allows, to the addresses
//! it checked.

use crate::Failure;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::settings::NetworkSettings;
use headless_chrome::Browser;
use headless_chrome::browser::tab::{RequestPausedDecision, Tab};
use headless_chrome::protocol::cdp::DOM::{DescribeNode, GetBoxModel};
use headless_chrome::protocol::cdp::Emulation::SetDeviceMetricsOverride;
use headless_chrome::protocol::cdp::Fetch::FailRequest;
use headless_chrome::protocol::cdp::Network::ErrorReason;
use headless_chrome::protocol::cdp::Page::{CreateIsolatedWorld, GetFrameTree};
use headless_chrome::protocol::cdp::Runtime::{Evaluate, RemoteObject};
use headless_chrome::protocol::cdp::types::Event;
use kyro_core::receipt::ObservedEffect;
use kyro_core::{ToolContext, ToolError};
use rustix::process::{Pid, Signal, kill_process_group};

use super::direct::Direct;
use super::proxy::Proxy;
use crate::integration::check_url;
use headless_chrome::browser::tab::point::Point;
use headless_chrome::protocol::cdp::Input::{DispatchMouseEvent, DispatchMouseEventTypeOption, MouseButton};

/// The environment variable naming the Chromium executable.
pub const CHROMIUM_ENV: &str = "KYRO_CHROMIUM";
/// Where Debian's `chromium` package puts it.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// The page's viewport, in CSS pixels.
pub(crate) const VIEWPORT: (u32, u32) = (1280, 800);
/// How long Chromium may take to start and print its DevTools address.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one DevTools command or wait may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Flags that work without a network and without a display. `--no-sandbox` because CI runs
/// as root, where Chromium's sandbox refuses to start.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--disable-breakpad",
    // Cross-site frames in the page's own renderer: a frame given a process (and a
    // DevTools target) of its own would make requests the page's Fetch interception never
    // sees, out of reach of the network policy.
    "--disable-site-isolation-trials",
    "--disable-features=Translate,MediaRouter,OptimizationHints,IsolateOrigins,site-per-process,\
NetworkTimeServiceQuerying,AutofillServerCommunication,CertificateTransparencyComponentUpdater,\
PreconnectToSearch,SearchEnginePreconnector,SearchEnginePreconnect2",
    // Chromium's own traffic, which the proxy would otherwise have to refuse (or let out).
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-pings",
    "--no-service-autorun",
    "--metrics-recording-only",
    "--disable-field-trial-config",
    // Sign-in and component-update endpoints pointed at a port nothing listens on.
    "--gaia-url=http://127.0.0.1:9",
    "--component-updater=url-source=http://127.0.0.1:9",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--use-mock-keychain",
    "--window-size=1280,800",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// The Chromium executable: `KYRO_CHROMIUM`, or `/usr/bin/chromium`.
pub fn chromium_path() -> PathBuf {
    std::env::var_os(CHROMIUM_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CHROMIUM))
}

/// Why the browser tools cannot work on this machine, or `None` when they can.
pub fn unavailable() -> Option<String> {
    let path = chromium_path();
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() && std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0 => None,
        Ok(_) => Some(format!("{} is not an executable file", path.display())),
        Err(_) => Some(format!(
            "no Chromium at {}; install Debian's `chromium` package or set {CHROMIUM_ENV} to a Chromium executable",
            path.display()
        )),
    }
}

/// The Chromium process, owned by its thread; dropping this kills the process group and
/// waits for it.
struct Process {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    exited: Arc<AtomicBool>,
    _profile: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(crate) fn error(operation: &str, message: impl std::fmt::Display) -> ToolError {
    Failure::Browser {
        operation: operation.to_owned(),
        message: message.to_string(),
    }
    .into()
}

impl Process {
    /// Starts Chromium and returns it with its DevTools WebSocket address.
    fn start(executable: &Path, proxy: std::net::SocketAddr) -> Result<(Process, String), ToolError> {
        let profile = tempfile::Builder::new()
            .prefix("kyro-chromium-")
            .tempdir()
            .map_err(|e| error("create a profile directory", e))?;
        let mut command = Command::new(executable);
        command
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            // Every request through kyro's proxy, loopback ones too (Chromium bypasses
            // proxies for loopback unless told `<-loopback>`).
            .arg(format!("--proxy-server=http://{proxy}"))
            .arg("--proxy-bypass-list=<-loopback>")
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: only an async-signal-safe prctl between fork and exec.
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(std::io::Error::from)
            });
        }
        let (ready_tx, ready_rx) = mpsc::channel::<Result<String, String>>();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let exited = Arc::new(AtomicBool::new(false));
        let flag = exited.clone();
        let thread = std::thread::Builder::new()
            .name("kyro-chromium".into())
            .spawn(move || own(command, ready_tx, stop_rx, flag))
            .map_err(|e| error("start", e))?;
        let process = Process {
            stop: Some(stop_tx),
            thread: Some(thread),
            exited,
            _profile: profile,
        };
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(url)) => Ok((process, url)),
            Ok(Err(message)) => Err(error("start", message)),
            Err(_) => Err(error(
                "start",
                format!(
                    "Chromium did not print its DevTools address within {}s",
                    START_TIMEOUT.as_secs()
                ),
            )),
        }
    }

    fn alive(&self) -> bool {
        !self.exited.load(Ordering::SeqCst)
    }
}

/// The owning thread: spawns, reports the address, waits to be told to stop (or for the
/// session to be dropped), then kills the group and reaps the leader.
fn own(
    mut command: Command,
    ready: mpsc::Sender<Result<String, String>>,
    stop: mpsc::Receiver<()>,
    exited: Arc<AtomicBool>,
) {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot run {:?}: {e}", command.get_program())));
            return;
        }
    };
    let pid = child.id();
    if let Some(stderr) = child.stderr.take() {
        let ready = ready.clone();
        std::thread::spawn(move || {
            let mut tail = Vec::new();
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = ready.send(Ok(url.trim().to_owned()));
                    sent = true;
                } else if !sent {
                    tail.push(line);
                    if tail.len() > 20 {
                        tail.remove(0);
                    }
                }
            }
            if !sent {
                let _ = ready.send(Err(format!(
                    "Chromium exited before it was ready: {}",
                    tail.join(" | ")
                )));
            }
        });
    }
    // Wait to be stopped, noticing when Chromium exits on its own (a crash).
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(Duration::from_millis(250)) {
        if !exited.load(Ordering::SeqCst) && matches!(child.try_wait(), Ok(Some(_))) {
            exited.store(true, Ordering::SeqCst);
        }
    }
    if let Some(pgid) = Pid::from_raw(pid as i32) {
        let _ = kill_process_group(pgid, Signal::KILL);
    }
    let _ = child.wait();
}

/// Requests the page made during a call: the URL, and why it was refused if it was.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// The command that gives the page a viewport of `width` x `height` CSS pixels.
pub(crate) fn viewport(width: u32, height: u32) -> SetDeviceMetricsOverride {
    SetDeviceMetricsOverride {
        width,
        height,
        device_scale_factor: 1.0,
        mobile: false,
        scale: None,
        screen_width: None,
        screen_height: None,
        position_x: None,
        position_y: None,
        dont_set_visible_size: None,
        screen_orientation: None,
        viewport: None,
        display_feature: None,
        device_posture: None,
    }
}

/// One page (tab) of the browser, with what kyro follows of it.
pub(crate) struct PageHandle {
    tab: Arc<Tab>,
    world: World,
    loads: Loads,
    log: PageLog,
    /// The page's own DevTools connection, for the hot path (`None` where it could not
    /// be made: everything goes through `headless_chrome`'s then).
    direct: Option<Direct>,
}

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
    /// One call drives the browser at a time, so requests and dialogs belong to one call.
    busy: Mutex<()>,
    /// The browser's DevTools address, for each page's own connection.
    devtools: String,
    // Field order: the pages and the DevTools connection close before the process is killed.
    browser: Browser,
    process: Process,
    proxy: Proxy,
}

impl PageHandle {
    /// Opens a page, with kyro's viewport, request interception, and listeners for its
    /// navigations, loads, console and dialogs.
    fn open(browser: &Browser, devtools: &str, dialogs: &Dialogs) -> Result<PageHandle, ToolError> {
        let tab = browser.new_tab().map_err(|e| error("open a page", e))?;
        tab.set_default_timeout(COMMAND_TIMEOUT);
        let direct = match Direct::connect(devtools, tab.get_target_id()) {
            Ok(direct) => Some(direct),
            Err(why) => {
                eprintln!(
                    "kyro: the page's own DevTools connection failed ({why}); browser commands go the slower way"
                );
                None
            }
        };
        // A fixed viewport, whatever the headless window's decorations take.
        tab.call_method(viewport(VIEWPORT.0, VIEWPORT.1))
            .map_err(|e| error("set the viewport", e))?;
        // Every request the page makes pauses here first and is checked against the
        // policy of the call that installed the interceptor.
        match &direct {
            // Paused requests are answered on kyro's own connection at once.
            Some(direct) => direct
                .call(
                    headless_chrome::protocol::cdp::Fetch::Enable {
                        patterns: None,
                        handle_auth_requests: None,
                    },
                    COMMAND_TIMEOUT,
                )
                .map(drop)
                .map_err(|e| error("intercept requests", e))?,
            None => tab
                .enable_fetch(None, None)
                .map(drop)
                .map_err(|e| error("intercept requests", e))?,
        }
        // kyro's worlds end with their documents; loads of the main frame are followed as
        // they happen (no polling).
        let world = World::default();
        let worlds = world.clone();
        let main_frame = tab
            .call_method(GetFrameTree(None))
            .map_err(|e| error("open a page", e))?
            .frame_tree
            .frame
            .id;
        let loads = Loads::default();
        let followed = loads.clone();
        let log = PageLog::default();
        let logged = log.clone();
        tab.add_event_listener(Arc::new(move |event: &Event| match event {
            Event::PageFrameNavigated(navigated) => {
                forget_worlds(&worlds, &navigated.params.frame);
                if navigated.params.frame.parent_id.is_none() {
                    logged.new_document(&navigated.params.frame.url);
                }
            }
            Event::RuntimeConsoleAPICalled(called) => {
                let kind = format!("{:?}", called.params.Type).to_ascii_lowercase();
                let words: Vec<String> = called.params.args.iter().map(shown).collect();
                logged.console(format!("{kind}: {}", words.join(" ")));
            }
            Event::RuntimeExceptionThrown(thrown) => {
                let details = &thrown.params.exception_details;
                let message = details
                    .exception
                    .as_ref()
                    .and_then(|e| e.description.clone())
                    .unwrap_or_else(|| details.text.clone());
                logged.console(format!("error: {message}"));
            }
            Event::PageFrameStartedLoading(started) if started.params.frame_id == main_frame => {
                followed.update(|state| {
                    state.started += 1;
                    state.loading = true;
                });
            }
            Event::PageFrameStoppedLoading(stopped) if stopped.params.frame_id == main_frame => {
                followed.update(|state| state.loading = false);
            }
            Event::PageLifecycleEvent(life) if life.params.frame_id == main_frame && life.params.name == "load" => {
                let loader = life.params.loader_id.clone();
                followed.update(|state| state.last_loaded = Some(loader));
            }
            _ => {}
        }))
        .map_err(|e| error("watch for navigations", e))?;
        // alert/confirm/prompt would block the page: answer each one at once (as
        // browser_handle_dialog armed, or dismissed) and report it.
        let (page, seen) = (Arc::downgrade(&tab), dialogs.clone());
        tab.add_event_listener(Arc::new(move |event: &Event| {
            if let Event::PageJavascriptDialogOpening(opening) = event
                && let Some(page) = page.upgrade()
            {
                let kind = format!("{:?}", opening.params.Type).to_ascii_lowercase();
                let mut line = format!("{kind}: {}", opening.params.message);
                let armed = seen.answer.lock().ok().and_then(|mut a| a.take());
                let _ = match armed {
                    Some(DialogAnswer {
                        accept: true,
                        prompt_text,
                    }) => {
                        line.push_str(" (accepted");
                        if let Some(text) = &prompt_text {
                            line.push_str(&format!(" with {text:?}"));
                        }
                        line.push(')');
                        page.get_dialog().accept(prompt_text)
                    }
                    _ => page.get_dialog().dismiss(),
                };
                if let Ok(mut log) = seen.log.lock() {
                    log.push(line);
                }
            }
        }))
        .map_err(|e| error("watch for dialogs", e))?;
        Ok(PageHandle {
            tab,
            world,
            loads,
            log,
            direct,
        })
    }

    /// The page as the tools drive it.
    fn driven(&self) -> Driven<'_> {
        Driven {
            tab: &self.tab,
            direct: self.direct.as_ref(),
            world: &self.world,
            loads: &self.loads,
            log: &self.log,
        }
    }
}

impl Session {
    fn start() -> Result<Session, ToolError> {
        let blocked = Seen::default();
        let proxy = Proxy::start(blocked.clone())?;
        let (process, devtools) = Process::start(&chromium_path(), proxy.addr())?;
        let browser = Browser::connect_with_timeout(devtools.clone(), Duration::from_secs(365 * 24 * 3600))
            .map_err(|e| error("connect to Chromium", e))?;
        browser.set_default_timeout(COMMAND_TIMEOUT);
        let dialogs = Dialogs::default();
        let first = PageHandle::open(&browser, &devtools, &dialogs)?;
        Ok(Session {
            tabs: Mutex::new(Tabs {
                open: vec![Arc::new(first)],
                current: 0,
            }),
            seen: Seen::default(),
            blocked,
            dialogs,
            busy: Mutex::new(()),
            devtools,
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
        let seen = self.seen.clone();
        let log = page.log.clone();
        // One decision for both connections: checked, logged, recorded for the call.
        let check = move |method: &str, url: &str| -> bool {
            let refusal = request_refusal(&policy, url);
            let allowed = refusal.is_none();
            log.request(match &refusal {
                None => format!("{method} {url}"),
                Some(why) => format!("{method} {url} (refused: {why})"),
            });
            if let Ok(mut seen) = seen.lock() {
                seen.push((url.to_owned(), refusal));
            }
            allowed
        };
        if let Some(direct) = &page.direct {
            direct.intercept(Box::new(move |paused| {
                check(&paused.request.method, &paused.request.url)
            }));
            return Ok(());
        }
        page.tab
            .enable_request_interception(Arc::new(
                move |_transport,
                      _session,
                      event: headless_chrome::protocol::cdp::Fetch::events::RequestPausedEvent| {
                    if check(&event.params.request.method, &event.params.request.url) {
                        RequestPausedDecision::Continue(None)
                    } else {
                        RequestPausedDecision::Fail(FailRequest {
                            request_id: event.params.request_id,
                            error_reason: ErrorReason::BlockedByClient,
                        })
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

/// The dialogs (alert, confirm, prompt) the page opened, as `kind: message` (with how
/// each was answered when it was accepted), and the answer armed for the next one
/// (without one, a dialog is dismissed).
#[derive(Default, Clone)]
pub(crate) struct Dialogs {
    log: Arc<Mutex<Vec<String>>>,
    answer: Arc<Mutex<Option<DialogAnswer>>>,
}

/// How to answer the next dialog.
#[derive(Debug, Clone)]
pub(crate) struct DialogAnswer {
    /// Accept (OK) or dismiss (Cancel).
    pub accept: bool,
    /// The text a prompt is answered with.
    pub prompt_text: Option<String>,
}

impl Dialogs {
    /// The dialogs opened since the last take.
    pub(crate) fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Answers the next dialog so.
    pub(crate) fn arm(&self, answer: DialogAnswer) {
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer);
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
        work(&session.current().driven(), &session.dialogs)
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
                let page = Arc::new(PageHandle::open(&session.browser, &session.devtools, &session.dialogs)?);
                session.guard_page(&page, policy.clone())?;
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
                let (url, title, _) = super::page_info(&page.driven())?;
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
    let (result, seen, blocked) = tokio::task::spawn_blocking(move || {
        let session = workspace.resource(Session::start)?;
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

/// kyro's isolated JavaScript worlds, by frame id (the main frame's and those of the
/// cross-origin frames read), each for the document it was made in: (the document's loader
/// id, the world's execution context).
type World = Arc<Mutex<std::collections::HashMap<Option<String>, u32>>>;

/// Forgets the worlds of a frame that navigated to a new document (all of them when it is
/// the main frame: its child frames went with it).
fn forget_worlds(worlds: &World, navigated: &headless_chrome::protocol::cdp::Page::Frame) {
    let mut worlds = worlds.lock().unwrap_or_else(|e| e.into_inner());
    if navigated.parent_id.is_none() {
        worlds.clear();
    } else {
        worlds.remove(&Some(navigated.id.clone()));
    }
}

/// The page as the tools drive it: the tab, and kyro's own isolated world, where `page.js`
/// runs. Page scripts cannot see or patch what runs there (a page that replaced
/// `getBoundingClientRect` or `JSON.stringify` cannot steer clicks or forge the outline),
/// and with universal access it reads frames of other origins too.
pub(crate) struct Driven<'a> {
    tab: &'a Tab,
    direct: Option<&'a Direct>,
    world: &'a World,
    loads: &'a Loads,
    log: &'a PageLog,
}

/// The most console messages and requests kept of a page.
const LOGGED: usize = 1000;

/// What the current page logged to its console and the requests it made, the newest
/// [`LOGGED`] of each (a new document starts the requests afresh).
#[derive(Clone, Default)]
pub(crate) struct PageLog(Arc<Mutex<PageLogged>>);

#[derive(Default)]
struct PageLogged {
    console: std::collections::VecDeque<String>,
    requests: std::collections::VecDeque<String>,
    /// Runtime events are asked for on the first read (enabling them replays what the
    /// page's console stored before).
    console_enabled: bool,
}

impl PageLog {
    fn with<T>(&self, f: impl FnOnce(&mut PageLogged) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn console(&self, line: String) {
        self.with(|l| {
            if l.console.len() == LOGGED {
                l.console.pop_front();
            }
            l.console.push_back(line);
        });
    }

    fn request(&self, line: String) {
        self.with(|l| {
            if l.requests.len() == LOGGED {
                l.requests.pop_front();
            }
            l.requests.push_back(line);
        });
    }

    /// A new document in the page: the requests before its own are dropped.
    fn new_document(&self, url: &str) {
        self.with(|l| {
            let own = l.requests.iter().rposition(|r| {
                r.split_once(' ')
                    .is_some_and(|(_, rest)| rest == url || rest.starts_with(&format!("{url} ")))
            });
            match own {
                Some(at) => drop(l.requests.drain(..at)),
                None => l.requests.clear(),
            }
        });
    }
}

/// A console argument as the console shows it: a string as is, a number or an object as
/// JSON, anything else by its description.
fn shown(arg: &RemoteObject) -> String {
    match (&arg.value, &arg.description) {
        (Some(serde_json::Value::String(text)), _) => text.clone(),
        (Some(value), _) => value.to_string(),
        (None, Some(description)) => description.clone(),
        (None, None) => format!("{:?}", arg.Type).to_ascii_lowercase(),
    }
}

/// What the main frame's loads have been: how many started, whether one is under way
/// (started, not stopped: finished or abandoned), and the loader (document) of the last
/// one that reached its load event.
#[derive(Debug, Default)]
struct LoadState {
    started: u64,
    loading: bool,
    last_loaded: Option<String>,
}

/// The main frame's loads, with a condition variable woken at each event.
#[derive(Clone, Default)]
struct Loads(Arc<(Mutex<LoadState>, std::sync::Condvar)>);

impl Loads {
    fn update(&self, change: impl FnOnce(&mut LoadState)) {
        let (state, changed) = &*self.0;
        change(&mut state.lock().unwrap_or_else(|e| e.into_inner()));
        changed.notify_all();
    }

    fn started(&self) -> u64 {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner()).started
    }

    /// Waits until `done` holds of the state, `within` at most; whether it does.
    fn wait(&self, within: Duration, done: impl Fn(&LoadState) -> bool) -> bool {
        let (state, changed) = &*self.0;
        let guard = state.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = changed
            .wait_timeout_while(guard, within, |s| !done(s))
            .unwrap_or_else(|e| e.into_inner());
        done(&guard)
    }
}

impl std::ops::Deref for Driven<'_> {
    type Target = Tab;

    fn deref(&self) -> &Tab {
        self.tab
    }
}

impl Driven<'_> {
    /// Sends a DevTools command on the page's own connection (no wait for a lock), or on
    /// `headless_chrome`'s where that connection could not be made.
    pub(crate) fn call<M>(&self, method: M, operation: &str) -> Result<M::ReturnObject, ToolError>
    where
        M: headless_chrome::protocol::cdp::types::Method + serde::Serialize,
    {
        match self.direct {
            Some(direct) => direct.call(method, COMMAND_TIMEOUT).map_err(|e| error(operation, e)),
            None => self.tab.call_method(method).map_err(|e| error(operation, e)),
        }
    }

    /// A real mouse click at `point` (moved there, pressed, released).
    pub(crate) fn click_at(&self, point: Point) -> Result<(), ToolError> {
        self.hover_at(point)?;
        for kind in [
            DispatchMouseEventTypeOption::MousePressed,
            DispatchMouseEventTypeOption::MouseReleased,
        ] {
            self.mouse(kind, point, Some(MouseButton::Left), Some(1))?;
        }
        Ok(())
    }

    /// A drag with the left button from `from` to `to`, moved in steps so the page sees
    /// the motion.
    pub(crate) fn drag(&self, from: Point, to: Point) -> Result<(), ToolError> {
        self.hover_at(from)?;
        self.mouse(
            DispatchMouseEventTypeOption::MousePressed,
            from,
            Some(MouseButton::Left),
            Some(1),
        )?;
        const STEPS: u32 = 5;
        for step in 1..=STEPS {
            let f = f64::from(step) / f64::from(STEPS);
            let at = Point {
                x: from.x + (to.x - from.x) * f,
                y: from.y + (to.y - from.y) * f,
            };
            self.mouse(
                DispatchMouseEventTypeOption::MouseMoved,
                at,
                Some(MouseButton::Left),
                None,
            )?;
        }
        self.mouse(
            DispatchMouseEventTypeOption::MouseReleased,
            to,
            Some(MouseButton::Left),
            Some(1),
        )
    }

    /// The mouse moved to `point`, nothing pressed.
    pub(crate) fn hover_at(&self, point: Point) -> Result<(), ToolError> {
        self.mouse(DispatchMouseEventTypeOption::MouseMoved, point, None, None)
    }

    /// One mouse event; a move with `button` holds it down (a drag).
    fn mouse(
        &self,
        kind: DispatchMouseEventTypeOption,
        point: Point,
        button: Option<MouseButton>,
        click_count: Option<u32>,
    ) -> Result<(), ToolError> {
        let held = (kind == DispatchMouseEventTypeOption::MouseMoved && button.is_some()).then_some(1);
        self.call(
            DispatchMouseEvent {
                Type: kind,
                x: point.x,
                y: point.y,
                modifiers: None,
                timestamp: None,
                button,
                buttons: held,
                click_count,
                force: None,
                tangential_pressure: None,
                tilt_x: None,
                tilt_y: None,
                twist: None,
                delta_x: None,
                delta_y: None,
                pointer_Type: None,
            },
            "move the mouse",
        )
        .map(drop)
    }

    /// The console messages of the page so far (asking the browser for them on first use:
    /// it replays what it stored).
    pub(crate) fn console_messages(&self) -> Result<Vec<String>, ToolError> {
        if !self.log.with(|l| std::mem::replace(&mut l.console_enabled, true)) {
            self.tab
                .call_method(headless_chrome::protocol::cdp::Runtime::Enable(None))
                .map_err(|e| error("read the console", e))?;
            // The replayed messages come as events, on their own thread: let them land.
            let mut count = usize::MAX;
            while count != self.log.with(|l| l.console.len()) {
                count = self.log.with(|l| l.console.len());
                std::thread::sleep(Duration::from_millis(30));
            }
        }
        Ok(self.log.with(|l| l.console.iter().cloned().collect()))
    }

    /// The requests the current page made, with the policy's refusals.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.log.with(|l| l.requests.iter().cloned().collect())
    }

    /// Opens `url` and returns at its load event (the document and its subresources; not
    /// network idle), or at once for a navigation within the document.
    pub(crate) fn navigate(&self, url: &str) -> Result<(), ToolError> {
        let operation = format!("navigate to {url}");
        let navigated = self.call(
            headless_chrome::protocol::cdp::Page::Navigate {
                url: url.to_owned(),
                referrer: None,
                transition_Type: None,
                frame_id: None,
                referrer_policy: None,
            },
            &operation,
        )?;
        if let Some(failure) = navigated.error_text {
            return Err(error(&operation, failure));
        }
        let Some(loader) = navigated.loader_id else {
            return Ok(());
        };
        if self
            .loads
            .wait(COMMAND_TIMEOUT, |s| s.last_loaded.as_deref() == Some(&loader))
        {
            Ok(())
        } else {
            Err(error(&operation, "the page did not finish loading in time"))
        }
    }

    /// After an action: when a load of the page is under way or starts within a moment (a
    /// link, a form), waits until it stops; otherwise returns after that moment (`QUIET`).
    pub(crate) fn settle(&self) {
        const QUIET: Duration = Duration::from_millis(30);
        let started = self.loads.started();
        if self.loads.wait(QUIET, |s| s.loading || s.started > started) {
            self.loads.wait(COMMAND_TIMEOUT, |s| !s.loading);
        }
    }

    /// The world for the current document of `frame` (the main frame when `None`), made on
    /// first use in each document (a navigation to a new document ends the old one, and
    /// its refs with it).
    fn world(&self, operation: &str, frame: Option<&str>) -> Result<u32, ToolError> {
        let key = frame.map(str::to_owned);
        if let Some(context) = self.world.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(*context);
        }
        let frame_id = match frame {
            Some(id) => id.to_owned(),
            None => self.call(GetFrameTree(None), operation)?.frame_tree.frame.id,
        };
        let context = self
            .call(
                CreateIsolatedWorld {
                    frame_id,
                    world_name: Some("kyro".into()),
                    grant_univeral_access: Some(true),
                },
                operation,
            )?
            .execution_context_id;
        self.world
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, context);
        Ok(context)
    }

    /// The Kth (from 1) cross-origin frame of the latest snapshot, scrolled into view when
    /// `scroll` (for an action in it): its element's object id and its frame id, or `None`
    /// when it is gone.
    pub(crate) fn frame(
        &self,
        index: usize,
        scroll: bool,
        operation: &str,
    ) -> Result<Option<(String, String)>, ToolError> {
        let expression = format!(
            "(() => {{ const f = (window.__kyroFrames || [])[{}]; if (!f || !f.isConnected) return null; \
             if ({scroll}) f.scrollIntoView({{ block: 'center', inline: 'center' }}); return f; }})()",
            index.saturating_sub(1)
        );
        let Some(object) = self.evaluate(None, operation, expression, false)?.object_id else {
            return Ok(None);
        };
        let node = self
            .call(
                DescribeNode {
                    node_id: None,
                    backend_node_id: None,
                    object_id: Some(object.clone()),
                    depth: None,
                    pierce: None,
                },
                operation,
            )?
            .node;
        Ok(node.frame_id.map(|frame| (object, frame)))
    }

    /// The top-left corner of a frame element's content box, in the page's viewport.
    pub(crate) fn content_origin(&self, object: &str, operation: &str) -> Result<(f64, f64), ToolError> {
        let model = self
            .call(
                GetBoxModel {
                    node_id: None,
                    backend_node_id: None,
                    object_id: Some(object.to_owned()),
                },
                operation,
            )?
            .model;
        match model.content.as_slice() {
            [x, y, ..] => Ok((*x, *y)),
            _ => Err(error(operation, "the frame has no box")),
        }
    }

    /// Evaluates `expression` in kyro's world of `frame` (the main frame when `None`) and
    /// parses the JSON string it returns.
    pub(crate) fn evaluate_json_in(
        &self,
        frame: Option<&str>,
        operation: &str,
        expression: &str,
    ) -> Result<serde_json::Value, ToolError> {
        let result = self.evaluate(frame, operation, expression.to_owned(), true)?;
        let text = result
            .value
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| error(operation, "the page script returned nothing"))?;
        serde_json::from_str(text).map_err(|e| error(operation, e))
    }

    pub(crate) fn evaluate(
        &self,
        frame: Option<&str>,
        operation: &str,
        expression: String,
        by_value: bool,
    ) -> Result<RemoteObject, ToolError> {
        let context = self.world(operation, frame)?;
        let evaluated = match self.evaluate_in(Some(context), by_value, operation, expression.clone()) {
            // The document went (a navigation whose event has not arrived yet, a removed
            // frame): the script did not run; once more in the new document's world.
            Err(e) if e.kind() == "browser" && e.to_string().contains("Cannot find context") => {
                self.world
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&frame.map(str::to_owned));
                let context = self.world(operation, frame)?;
                self.evaluate_in(Some(context), by_value, operation, expression)?
            }
            other => other?,
        };
        thrown(evaluated, operation)
    }

    /// Evaluates `expression` in the page's own world (its globals), as a user gesture,
    /// returning its value as JSON; an exception is the error.
    pub(crate) fn evaluate_in_page(&self, operation: &str, expression: String) -> Result<RemoteObject, ToolError> {
        thrown(self.evaluate_in(None, true, operation, expression)?, operation)
    }

    /// One evaluation: in kyro's world `context` (silently), or in the page's own world
    /// when `None` (as a user gesture, its console output the page's).
    fn evaluate_in(
        &self,
        context: Option<u32>,
        by_value: bool,
        operation: &str,
        expression: String,
    ) -> Result<headless_chrome::protocol::cdp::Runtime::EvaluateReturnObject, ToolError> {
        self.call(
            Evaluate {
                expression,
                return_by_value: Some(by_value),
                generate_preview: None,
                silent: Some(context.is_some()),
                await_promise: Some(true),
                include_command_line_api: Some(false),
                user_gesture: Some(context.is_none()),
                object_group: None,
                context_id: context,
                throw_on_side_effect: None,
                timeout: None,
                disable_breaks: None,
                repl_mode: None,
                allow_unsafe_eval_blocked_by_csp: None,
                unique_context_id: None,
                serialization_options: None,
            },
            operation,
        )
    }
}

/// The value an evaluation returned, or the exception it threw as the error.
fn thrown(
    evaluated: headless_chrome::protocol::cdp::Runtime::EvaluateReturnObject,
    operation: &str,
) -> Result<RemoteObject, ToolError> {
    if let Some(exception) = evaluated.exception_details {
        let message = exception
            .exception
            .and_then(|e| e.description)
            .unwrap_or(exception.text);
        return Err(error(operation, message));
    }
    Ok(evaluated.result)
}
