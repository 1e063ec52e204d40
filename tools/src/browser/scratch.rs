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
