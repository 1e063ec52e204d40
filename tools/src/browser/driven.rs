//! The page as the tools drive it: DevTools commands, real mouse events, navigation and
//! evaluation in kyro's isolated worlds.

use std::time::Duration;

use headless_chrome::browser::tab::Tab;
use headless_chrome::browser::tab::point::Point;
use headless_chrome::protocol::cdp::DOM::{DescribeNode, GetBoxModel};
use headless_chrome::protocol::cdp::Input::{DispatchMouseEvent, DispatchMouseEventTypeOption, MouseButton};
use headless_chrome::protocol::cdp::Page::{CreateIsolatedWorld, GetFrameTree};
use headless_chrome::protocol::cdp::Runtime::{Evaluate, RemoteObject};
use kyro_core::ToolError;

use super::direct::Direct;
use super::memory::Memory;
use super::page::{COMMAND_TIMEOUT, Loads, PageHandle, PageLog, World};
use super::recorder::Studio;
use super::report::error;

/// A listener to a page's DevTools events.
pub(crate) type Listener =
    dyn headless_chrome::browser::tab::EventListener<headless_chrome::protocol::cdp::types::Event> + Send + Sync;

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
    memory: &'a Memory,
    /// The session's video state, for the action annotations (`None`: none are drawn).
    studio: Option<&'a Studio>,
}

impl PageHandle {
    /// The page as the tools drive it.
    pub(super) fn driven(&self) -> Driven<'_> {
        Driven {
            tab: &self.tab,
            direct: self.direct.as_ref(),
            world: &self.world,
            loads: &self.loads,
            log: &self.log,
            memory: &self.memory,
            studio: None,
        }
    }
}

impl std::ops::Deref for Driven<'_> {
    type Target = Tab;

    fn deref(&self) -> &Tab {
        self.tab
    }
}

impl<'a> Driven<'a> {
    /// The page with the session's video state, whose action annotations the action
    /// tools draw.
    pub(crate) fn annotated(self, studio: &'a Studio) -> Driven<'a> {
        Driven {
            studio: Some(studio),
            ..self
        }
    }

    /// The session's video state, when the page was given it.
    pub(crate) fn studio(&self) -> Option<&'a Studio> {
        self.studio
    }

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

    /// Sends a DevTools command on `headless_chrome`'s connection, where the events a
    /// [`Driven::listen`] listener hears arrive (a trace's end).
    pub(crate) fn call_listened<M>(&self, method: M, operation: &str) -> Result<M::ReturnObject, ToolError>
    where
        M: headless_chrome::protocol::cdp::types::Method + serde::Serialize,
    {
        self.tab.call_method(method).map_err(|e| error(operation, e))
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

    /// The wheel turned by `delta` pixels at `point` (the page scrolls as for a person's).
    pub(crate) fn wheel(&self, point: Point, delta_x: f64, delta_y: f64) -> Result<(), ToolError> {
        self.call(
            DispatchMouseEvent {
                Type: DispatchMouseEventTypeOption::MouseWheel,
                x: point.x,
                y: point.y,
                modifiers: None,
                timestamp: None,
                button: None,
                buttons: None,
                click_count: None,
                force: None,
                tangential_pressure: None,
                tilt_x: None,
                tilt_y: None,
                twist: None,
                delta_x: Some(delta_x),
                delta_y: Some(delta_y),
                pointer_Type: None,
            },
            "turn the mouse wheel",
        )
        .map(drop)
    }

    /// The mouse moved to `point`, nothing pressed.
    pub(crate) fn hover_at(&self, point: Point) -> Result<(), ToolError> {
        self.mouse(DispatchMouseEventTypeOption::MouseMoved, point, None, None)
    }

    /// What kyro keeps of this page between calls (its mouse, its emulated media).
    pub(crate) fn memory(&self) -> &Memory {
        self.memory
    }

    /// A mouse button pressed (`down`) or released where the mouse is, as
    /// `browser_mouse_down`/`browser_mouse_up` do; moves until its release hold it.
    pub(crate) fn press(&self, button: MouseButton, down: bool) -> Result<(), ToolError> {
        let at = self.memory.mouse();
        let buttons = self.memory.press(button_bit(&button), down);
        let kind = if down {
            DispatchMouseEventTypeOption::MousePressed
        } else {
            DispatchMouseEventTypeOption::MouseReleased
        };
        self.call(
            DispatchMouseEvent {
                Type: kind,
                x: at.x,
                y: at.y,
                modifiers: None,
                timestamp: None,
                button: Some(button),
                buttons: Some(buttons),
                click_count: Some(1),
                force: None,
                tangential_pressure: None,
                tilt_x: None,
                tilt_y: None,
                twist: None,
                delta_x: None,
                delta_y: None,
                pointer_Type: None,
            },
            if down {
                "press the mouse button"
            } else {
                "release the mouse button"
            },
        )
        .map(drop)
    }

    /// Takes the page offline (its requests fail as without a network) or back online;
    /// the interception and the proxy check every request as before.
    pub(crate) fn set_offline(&self, offline: bool) -> Result<(), ToolError> {
        // On the connection that follows the Network domain.
        self.tab
            .call_method(headless_chrome::protocol::cdp::Network::EmulateNetworkConditions {
                offline,
                latency: 0.0,
                download_throughput: -1.0,
                upload_throughput: -1.0,
                connection_Type: None,
                packet_loss: None,
                packet_queue_length: None,
                packet_reordering: None,
            })
            .map(drop)
            .map_err(|e| error(if offline { "go offline" } else { "go online" }, e))
    }

    /// One mouse event; a move with `button` holds it down (a drag), as does a move while
    /// `browser_mouse_down` holds a button.
    fn mouse(
        &self,
        kind: DispatchMouseEventTypeOption,
        point: Point,
        button: Option<MouseButton>,
        click_count: Option<u32>,
    ) -> Result<(), ToolError> {
        let mut held = (kind == DispatchMouseEventTypeOption::MouseMoved && button.is_some()).then_some(1);
        let mut button = button;
        let pressed = self.memory.mouse().buttons;
        if kind == DispatchMouseEventTypeOption::MouseMoved && button.is_none() && pressed != 0 {
            button = [MouseButton::Left, MouseButton::Right, MouseButton::Middle]
                .into_iter()
                .find(|b| pressed & button_bit(b) != 0);
            held = Some(pressed);
        }
        self.memory.moved(point.x, point.y);
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
        self.log.with(|l| l.requests.iter().map(|r| r.line.clone()).collect())
    }

    /// The `index`th request of [`Driven::requests`] (from 1), with its response when one
    /// came.
    pub(crate) fn request(&self, index: usize) -> Option<(super::page::Logged, Option<super::page::Answered>)> {
        self.log.with(|l| {
            let logged = l.requests.get(index.checked_sub(1)?)?.clone();
            let answered = logged
                .network_id
                .as_ref()
                .and_then(|id| l.responses.iter().rev().find(|(r, _)| r == id).map(|(_, a)| a.clone()));
            Some((logged, answered))
        })
    }

    /// A response's body, as Chromium kept it: text, or base64 (`true`).
    pub(crate) fn response_body(&self, network_id: &str) -> Result<(String, bool), ToolError> {
        // Asked on the connection that follows the Network domain (its buffer is that one's).
        let body = self
            .tab
            .call_method(headless_chrome::protocol::cdp::Network::GetResponseBody {
                request_id: network_id.to_owned(),
            })
            .map_err(|e| error("read the response body", e))?;
        Ok((body.body, body.base_64_encoded))
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

    /// Listens to the page's DevTools events until the returned handle is passed to
    /// [`Driven::unlisten`].
    pub(crate) fn listen(&self, listener: std::sync::Arc<Listener>) -> Result<std::sync::Weak<Listener>, ToolError> {
        self.tab
            .add_event_listener(listener)
            .map_err(|e| error("listen to the page", e))
    }

    /// Stops a listener [`Driven::listen`] added.
    pub(crate) fn unlisten(&self, listener: &std::sync::Weak<Listener>) {
        let _ = self.tab.remove_event_listener(listener);
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

/// A button's bit in DevTools' `buttons` (left 1, right 2, middle 4).
fn button_bit(button: &MouseButton) -> u32 {
    match button {
        MouseButton::Left => 1,
        MouseButton::Right => 2,
        MouseButton::Middle => 4,
        MouseButton::Back => 8,
        MouseButton::Forward => 16,
        MouseButton::None => 0,
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
