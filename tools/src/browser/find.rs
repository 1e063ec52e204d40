//! `browser_find` and the testing family (Playwright MCP's `--caps testing`): questions
//! about the page answered from its outline, without returning the outline.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use super::snapshot::{Outline, WHOLE_PAGE_CHARS, outline};
use crate::Failure;
use crate::settings::NetworkSettings;

/// Most lines `browser_find` returns.
const MAX_FOUND: usize = 100;

/// Find page elements by text without reading the whole outline: the outline lines (with refs)
/// containing `text` (any case) or matching `regex`.
#[tool(
    name = "browser_find",
    title = "Find in the browser page",
    category = "browser",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserFind {
    /// Text the line contains (any case).
    #[schemars(length(min = 1, max = 1000))]
    pub text: Option<String>,
    /// Regex (Rust syntax) the line matches, instead.
    #[schemars(length(min = 1, max = 1000))]
    pub regex: Option<String>,
}

/// What was found.
#[kyro_core::output]
#[derive(Debug)]
pub struct Found {
    /// The page's URL.
    pub url: String,
    /// The matching outline lines, unindented, in page order (100 at most).
    pub matches: Vec<String>,
    /// How many lines matched in all.
    pub total: u64,
}

impl Execute for BrowserFind {
    type Output = Found;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    fn text(found: &Found) -> Option<String> {
        let mut text = format!(
            "{} of {} matching lines on {}",
            found.matches.len(),
            found.total,
            found.url
        );
        for line in &found.matches {
            text.push_str("\n- ");
            text.push_str(line.trim_start_matches("- "));
        }
        Some(text)
    }

    async fn run(self, cx: &ToolContext) -> Result<Found, ToolError> {
        let matcher: Box<dyn Fn(&str) -> bool + Send> = match (self.text, self.regex) {
            (Some(text), None) => {
                let text = text.to_lowercase();
                Box::new(move |line: &str| line.to_lowercase().contains(&text))
            }
            (None, Some(pattern)) => {
                // Bounded, so a pattern cannot make a program or a cache of any size.
                let regex = regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 20)
                    .dfa_size_limit(1 << 20)
                    .build()
                    .map_err(|e| Failure::InvalidPattern {
                        pattern: pattern.clone(),
                        message: e.to_string(),
                    })?;
                Box::new(move |line: &str| regex.is_match(line))
            }
            _ => {
                return Err(Failure::InvalidRequest {
                    message: "give `text` or `regex`, one of them".into(),
                }
                .into());
            }
        };
        with_page(cx, move |tab, _| {
            let Outline { url, lines, .. } = outline(tab, WHOLE_PAGE_CHARS, WHOLE_PAGE_CHARS, None)?;
            let all: Vec<&String> = lines.iter().filter(|l| matcher(l.trim_start())).collect();
            Ok(Found {
                url,
                total: all.len() as u64,
                matches: all.iter().take(MAX_FOUND).map(|l| l.trim_start().to_owned()).collect(),
            })
        })
        .await
    }
}

/// A check that passed.
#[kyro_core::output]
#[derive(Debug)]
pub struct Verified {
    /// The outline line that shows it.
    pub line: String,
}

/// Check that text is visible on the page (in an element's name, value or text); fails naming what
/// was sought.
#[tool(
    name = "browser_verify_text_visible",
    title = "Verify text is visible",
    category = "browser.testing",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVerifyTextVisible {
    /// The text, matched exactly.
    #[schemars(length(min = 1, max = 1000))]
    pub text: String,
}

impl Execute for BrowserVerifyTextVisible {
    type Output = Verified;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Verified, ToolError> {
        with_page(cx, move |tab, _| {
            let Outline { lines, .. } = outline(tab, WHOLE_PAGE_CHARS, WHOLE_PAGE_CHARS, None)?;
            // The outline quotes names and text as JSON strings: the text may be there
            // escaped (`say \"hi\"`).
            let quoted = serde_json::Value::String(self.text.clone()).to_string();
            let escaped = &quoted[1..quoted.len() - 1];
            lines
                .iter()
                .find(|l| l.contains(&self.text) || l.contains(escaped))
                .map(|l| Verified {
                    line: l.trim_start().to_owned(),
                })
                .ok_or_else(|| {
                    Failure::NotVisible {
                        what: format!("the text {:?}", self.text),
                    }
                    .into()
                })
        })
        .await
    }
}

/// Check that an element with a role and accessible name is visible (`button` "Send"); fails naming
/// what was sought.
#[tool(
    name = "browser_verify_element_visible",
    title = "Verify an element is visible",
    category = "browser.testing",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVerifyElementVisible {
    /// Role as the outline writes it (`button`, `link`, `textbox`).
    #[schemars(length(min = 1, max = 100))]
    pub role: String,
    /// Accessible name (a button's text, a field's label).
    #[tool(alias = "accessibleName")]
    #[schemars(length(min = 1, max = 1000))]
    pub accessible_name: String,
}

impl Execute for BrowserVerifyElementVisible {
    type Output = Verified;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Verified, ToolError> {
        with_page(cx, move |tab, _| {
            let Outline { lines, .. } = outline(tab, WHOLE_PAGE_CHARS, WHOLE_PAGE_CHARS, None)?;
            let head = format!(
                "- {} {}",
                self.role,
                serde_json::Value::String(self.accessible_name.clone())
            );
            lines
                .iter()
                .map(|l| l.trim_start())
                .find(|l| *l == head || l.starts_with(&format!("{head} ")) || l.starts_with(&format!("{head}:")))
                .map(|l| Verified { line: l.to_owned() })
                .ok_or_else(|| {
                    Failure::NotVisible {
                        what: format!("{} {:?}", self.role, self.accessible_name),
                    }
                    .into()
                })
        })
        .await
    }
}
