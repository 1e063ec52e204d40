//! One page (tab) of the browser and what kyro follows of it: its viewport, its loads,
//! its console and requests, kyro's isolated worlds in it, and its dialogs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use headless_chrome::Browser;
use headless_chrome::browser::tab::Tab;
use headless_chrome::protocol::cdp::Emulation::SetDeviceMetricsOverride;
use headless_chrome::protocol::cdp::Page::{GetFrameTree, SetDownloadBehavior, SetDownloadBehaviorBehaviorOption};
use headless_chrome::protocol::cdp::Runtime::RemoteObject;
use headless_chrome::protocol::cdp::types::Event;
use kyro_core::ToolError;

use super::direct::Direct;
use super::isolation::Reach;
use super::memory::Memory;
use super::report::error;

/// The page's viewport, in CSS pixels.
pub(crate) const VIEWPORT: (u32, u32) = (1280, 800);
/// How long one DevTools command or wait may take.
pub(super) const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

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
    pub(super) tab: Arc<Tab>,
    pub(super) world: World,
    pub(super) loads: Loads,
    pub(super) log: PageLog,
    /// The page's own DevTools connection, for the hot path (`None` where it could not
    /// be made: everything goes through `headless_chrome`'s then).
    pub(super) direct: Option<Direct>,
    /// What kyro keeps of the page between calls (its mouse, its emulated media).
    pub(super) memory: Memory,
}

impl PageHandle {
    /// Opens a page, with kyro's viewport, request interception, and listeners for its
    /// navigations, loads, console and dialogs.
    pub(super) fn open(
        browser: &Browser,
        devtools: &str,
        reach: &Reach,
        dialogs: &Dialogs,
    ) -> Result<PageHandle, ToolError> {
        let tab = browser.new_tab().map_err(|e| error("open a page", e))?;
        tab.set_default_timeout(COMMAND_TIMEOUT);
        // Nothing a page downloads is written anywhere.
        tab.call_method(SetDownloadBehavior {
            behavior: SetDownloadBehaviorBehaviorOption::Deny,
            download_path: None,
        })
        .map_err(|e| error("deny downloads", e))?;
        let direct = match Direct::connect(devtools, tab.get_target_id(), reach) {
            Ok(direct) => Some(direct),
            Err(why) => {
                kyro_core::log::warn(&format!(
                    "the page's own DevTools connection failed ({why}); browser commands go the slower way"
                ));
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
        // Responses are followed (status, headers; bodies buffered by Chromium, 16 MiB in
        // all, 4 MiB each) for browser_network_request.
        tab.call_method(headless_chrome::protocol::cdp::Network::Enable {
            max_total_buffer_size: Some(16 << 20),
            max_resource_buffer_size: Some(4 << 20),
            max_post_data_size: Some(64 << 10),
            report_direct_socket_traffic: None,
            enable_durable_messages: None,
        })
        .map_err(|e| error("follow responses", e))?;
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
            Event::NetworkResponseReceived(received) => {
                let response = &received.params.response;
                logged.response(
                    received.params.request_id.clone(),
                    Answered {
                        status: response.status,
                        status_text: response.status_text.clone(),
                        headers: header_pairs(&response.headers.0),
                        mime_type: response.mime_type.clone(),
                    },
                );
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
            memory: Memory::default(),
        })
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

/// kyro's isolated JavaScript worlds, by frame id (the main frame's and those of the
/// cross-origin frames read), each for the document it was made in: (the document's loader
/// id, the world's execution context).
pub(super) type World = Arc<Mutex<std::collections::HashMap<Option<String>, u32>>>;

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

/// The most console messages and requests kept of a page.
const LOGGED: usize = 1000;

/// What the current page logged to its console and the requests it made, the newest
/// [`LOGGED`] of each (a new document starts the requests afresh).
#[derive(Clone, Default)]
pub(crate) struct PageLog(Arc<Mutex<PageLogged>>);

#[derive(Default)]
pub(super) struct PageLogged {
    pub(super) console: std::collections::VecDeque<String>,
    pub(super) requests: std::collections::VecDeque<Logged>,
    /// The responses the page received, by the network's request id, the newest
    /// [`LOGGED`].
    pub(super) responses: std::collections::VecDeque<(String, Answered)>,
    /// Runtime events are asked for on the first read (enabling them replays what the
    /// page's console stored before).
    pub(super) console_enabled: bool,
}

/// A request the page made: its line in `browser_network_requests`, and what was sent.
#[derive(Clone)]
pub(crate) struct Logged {
    pub line: String,
    /// The network's id of the request, to find its response.
    pub network_id: Option<String>,
    /// The request's headers, `name: value`.
    pub headers: Vec<(String, String)>,
    /// Its body, when it had one (64 KiB at most).
    pub post_data: Option<String>,
}

/// A response the page received.
#[derive(Clone)]
pub(crate) struct Answered {
    pub status: u32,
    pub status_text: String,
    pub headers: Vec<(String, String)>,
    pub mime_type: String,
}

/// A DevTools header object as pairs.
pub(crate) fn header_pairs(headers: &Option<serde_json::Value>) -> Vec<(String, String)> {
    headers
        .as_ref()
        .and_then(serde_json::Value::as_object)
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

impl PageLog {
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut PageLogged) -> T) -> T {
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

    pub(super) fn request(&self, logged: Logged) {
        self.with(|l| {
            if l.requests.len() == LOGGED {
                l.requests.pop_front();
            }
            l.requests.push_back(logged);
        });
    }

    fn response(&self, request_id: String, answered: Answered) {
        self.with(|l| {
            if l.responses.len() == LOGGED {
                l.responses.pop_front();
            }
            l.responses.push_back((request_id, answered));
        });
    }

    /// A new document in the page: the requests before its own are dropped.
    fn new_document(&self, url: &str) {
        self.with(|l| {
            let own = l.requests.iter().rposition(|r| {
                r.line
                    .split_once(' ')
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
pub(super) struct LoadState {
    pub(super) started: u64,
    pub(super) loading: bool,
    pub(super) last_loaded: Option<String>,
}

/// The main frame's loads, with a condition variable woken at each event.
#[derive(Clone, Default)]
pub(super) struct Loads(Arc<(Mutex<LoadState>, std::sync::Condvar)>);

impl Loads {
    fn update(&self, change: impl FnOnce(&mut LoadState)) {
        let (state, changed) = &*self.0;
        change(&mut state.lock().unwrap_or_else(|e| e.into_inner()));
        changed.notify_all();
    }

    pub(super) fn started(&self) -> u64 {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner()).started
    }

    /// Waits until `done` holds of the state, `within` at most; whether it does.
    pub(super) fn wait(&self, within: Duration, done: impl Fn(&LoadState) -> bool) -> bool {
        let (state, changed) = &*self.0;
        let guard = state.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = changed
            .wait_timeout_while(guard, within, |s| !done(s))
            .unwrap_or_else(|e| e.into_inner());
        done(&guard)
    }
}
