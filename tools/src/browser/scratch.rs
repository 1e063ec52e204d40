//! A page of kyro's own for work on an origin's storage (as Playwright does it): every
//! request it makes is answered here with an empty document, so nothing it loads reaches
//! the network or a server, and it is closed when dropped. It is no tab of the browser's.

use std::sync::Arc;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use headless_chrome::browser::tab::RequestPausedDecision;
use headless_chrome::protocol::cdp::Fetch::{FulfillRequest, HeaderEntry};
use kyro_core::ToolError;

use super::driven::Driven;
use super::page::PageHandle;
use super::report::error;
use super::routes::Decision;

/// The document every request of the page gets.
const EMPTY: &str = "<!doctype html><html></html>";

/// The page, closed on drop.
pub(crate) struct Scratch {
    page: PageHandle,
}

impl Scratch {
    /// Opens the page with `open` and answers its every request with [`EMPTY`].
    pub(crate) fn open(open: &dyn Fn() -> Result<PageHandle, ToolError>) -> Result<Scratch, ToolError> {
        let page = open()?;
        let scratch = Scratch { page };
        // An origin's service worker would answer the page's navigations itself, past the
        // interception below.
        scratch.page.driven().call(
            headless_chrome::protocol::cdp::Network::SetBypassServiceWorker { bypass: true },
            "bypass service workers",
        )?;
        let body = BASE64_STANDARD.encode(EMPTY);
        match &scratch.page.direct {
            Some(direct) => direct.intercept(Box::new(move |_| Decision::Fulfill {
                status: 200,
                content_type: "text/html".into(),
                body: body.clone(),
            })),
            None => scratch
                .page
                .tab
                .enable_request_interception(Arc::new(move |_transport, _session, event: headless_chrome::protocol::cdp::Fetch::events::RequestPausedEvent| {
                    RequestPausedDecision::Fulfill(FulfillRequest {
                        request_id: event.params.request_id,
                        response_code: 200,
                        response_headers: Some(vec![HeaderEntry {
                            name: "Content-Type".into(),
                            value: "text/html".into(),
                        }]),
                        binary_response_headers: None,
                        body: Some(body.clone()),
                        response_phrase: None,
                    })
                }))
                .map_err(|e| error("intercept requests", e))?,
        }
        Ok(scratch)
    }

    /// The page with an empty document of `origin` (`http://host[:port]`) open in it.
    pub(crate) fn at(&self, origin: &str) -> Result<Driven<'_>, ToolError> {
        let page = self.page.driven();
        page.navigate(&format!("{origin}/"))?;
        Ok(page)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.page.tab.close(false);
    }
}

/// Where an origin's storage is read or written: the driven page itself when its document
/// is of that origin (nothing to open), else a [`Scratch`] page, opened on first need and
/// kept for the other origins of the call.
pub(crate) struct AtOrigin<'a, 'b> {
    tab: &'a Driven<'b>,
    current: Option<String>,
    open: &'a dyn Fn() -> Result<PageHandle, ToolError>,
    scratch: Option<Scratch>,
}

impl<'a, 'b> AtOrigin<'a, 'b> {
    /// Over the driven page `tab`, opening scratch pages with `open`.
    pub(crate) fn new(tab: &'a Driven<'b>, open: &'a dyn Fn() -> Result<PageHandle, ToolError>) -> Self {
        let current = super::script::page_info(tab)
            .ok()
            .and_then(|(url, _, _)| super::origins::origin_of(&url));
        AtOrigin {
            tab,
            current,
            open,
            scratch: None,
        }
    }

    /// Runs `work` in a page whose document is of `origin`.
    pub(crate) fn run<T>(
        &mut self,
        origin: &str,
        work: impl FnOnce(&Driven) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        if self.current.as_deref() == Some(origin) && is_at(self.tab, origin)? {
            return work(self.tab);
        }
        if self.scratch.is_none() {
            self.scratch = Some(Scratch::open(self.open)?);
        }
        let page = self.scratch.as_ref().map(|s| s.at(origin)).transpose()?;
        match page {
            // Whatever answered the navigation (a service worker of another origin's, a
            // redirect), the document must be of `origin` before its storage is touched.
            Some(page) if is_at(&page, origin)? => work(&page),
            Some(_) => Err(error(
                "open the origin",
                format!("the page did not stay at {origin}; its storage was not touched"),
            )),
            None => Err(error("open a page", "no scratch page")),
        }
    }
}

/// Whether the document of `page` is of `origin`, as the page itself says (`location.origin`,
/// read in kyro's world).
fn is_at(page: &Driven, origin: &str) -> Result<bool, ToolError> {
    let at = page.evaluate_json_in(None, "check the origin", "JSON.stringify(location.origin)")?;
    Ok(at.as_str() == Some(origin))
}
