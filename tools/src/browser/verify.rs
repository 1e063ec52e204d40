//! The rest of the testing family (Playwright MCP's `--caps testing`): an element's value,
//! a list's items, and a locator for an element to use in tests.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use serde_json::Value;

use super::session::with_page;
use crate::Failure;
use crate::settings::NetworkSettings;

/// What kind of element holds the value.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ValueKind {
    /// A text field or text area: its text.
    Textbox,
    /// A checkbox: `true` or `false`.
    Checkbox,
    /// A radio button: `true` or `false`.
    Radio,
    /// A select (dropdown): the chosen option's value.
    Combobox,
    /// A range input: its number.
    Slider,
}

/// Check an element's value: a field's text, a select's or slider's value, or whether a checkbox or
/// radio is checked (`true`/`false`). Fails naming the expected and actual values.
#[tool(
    name = "browser_verify_value",
    title = "Verify an element's value",
    category = "browser.testing",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVerifyValue {
    /// Kind: `textbox`, `checkbox`, `radio`, `combobox` or `slider`.
    pub r#type: ValueKind,
    /// Ref from browser_snapshot, like `e3` or `f1e3`.
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// CSS selector instead of a ref (first match).
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The element in words (Playwright's `element`; shown when asked).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
    /// The value expected; `true` or `false` for a checkbox or radio.
    #[schemars(length(max = 100000))]
    pub value: String,
}

/// A value check that passed.
#[kyro_core::output]
#[derive(Debug)]
pub struct ValueVerified {
    /// The value found (the one expected).
    pub value: String,
}

/// The element's answer, or the typed refusal it is.
fn answer_about(tab: &super::driven::Driven, op: &str, target: &Value, element: &str) -> Result<Value, ToolError> {
    let (answer, _) = super::element_op(tab, "read the element", op, target, element)?;
    super::element_answer(&answer, element)?;
    Ok(answer)
}

impl Execute for BrowserVerifyValue {
    type Output = ValueVerified;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<ValueVerified, ToolError> {
        let checked = matches!(self.r#type, ValueKind::Checkbox | ValueKind::Radio);
        if checked && self.value != "true" && self.value != "false" {
            return Err(Failure::InvalidRequest {
                message: format!(
                    "a {} is checked or not: give `true` or `false`, not {:?}",
                    if self.r#type == ValueKind::Radio {
                        "radio button"
                    } else {
                        "checkbox"
                    },
                    self.value
                ),
            }
            .into());
        }
        let (mut target, element) =
            super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        target["checked"] = checked.into();
        let expected = self.value;
        with_page(cx, move |tab, _| {
            let answer = answer_about(tab, "read_value", &target, &element)?;
            let actual = match &answer["value"] {
                Value::Bool(b) => b.to_string(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if actual == expected {
                return Ok(ValueVerified { value: actual });
            }
            // A password's value is not shown, as the outline does not show it.
            let actual = if answer["secret"] == true {
                "(a password, not shown)".to_owned()
            } else {
                format!("{actual:?}")
            };
            Err(Failure::ValueMismatch {
                element,
                expected: format!("{expected:?}"),
                actual,
            }
            .into())
        })
        .await
    }
}

/// Check that a list shows these items, in this order: each is the text (any case) of something
/// visible in the list element, after the one before. Fails naming the item missing or out of order.
#[tool(
    name = "browser_verify_list_visible",
    title = "Verify a list is visible",
    category = "browser.testing",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserVerifyListVisible {
    /// The list's ref from browser_snapshot, like `e3` or `f1e3`.
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// CSS selector instead of a ref (first match).
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The list in words (Playwright's `element`; shown when asked).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
    /// The items' texts, in order.
    #[schemars(length(min = 1, max = 100), inner(length(min = 1, max = 1000)))]
    pub items: Vec<String>,
}

/// A list check that passed.
#[kyro_core::output]
#[derive(Debug)]
pub struct ListVerified {
    /// The text of the element each item was found in, in order.
    pub items: Vec<String>,
}

impl Execute for BrowserVerifyListVisible {
    type Output = ListVerified;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<ListVerified, ToolError> {
        let (mut target, element) =
            super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        target["items"] = self.items.clone().into();
        let description = self.element.unwrap_or_else(|| "the list".into());
        with_page(cx, move |tab, _| {
            let answer = answer_about(tab, "list_items", &target, &element)?;
            if let Some(item) = answer["failed"].as_str() {
                let what = match answer["after"].as_str() {
                    Some(previous) => format!("{item:?} after {previous:?} in {description} ({element})"),
                    None => format!("{item:?} in {description} ({element})"),
                };
                return Err(Failure::NotVisible { what }.into());
            }
            let items = answer["matched"]
                .as_array()
                .map(|m| m.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            Ok(ListVerified { items })
        })
        .await
    }
}

/// A Playwright locator for an element, to use in tests: by role and accessible name
/// (`getByRole('button', { name: 'Go' })`), else by test id, by text, or by CSS.
#[tool(
    name = "browser_generate_locator",
    title = "Generate a locator for an element",
    category = "browser.testing",
    effect = "network",
    read_only = true,
    idempotent = true
)]
pub struct BrowserGenerateLocator {
    /// Ref from browser_snapshot, like `e3` or `f1e3`.
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// CSS selector instead of a ref (first match).
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The element in words (Playwright's `element`; shown when asked).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
}

/// The locator.
#[kyro_core::output]
#[derive(Debug)]
pub struct GeneratedLocator {
    /// Playwright's locator, as code after `page.` (`getByRole('link', { name: 'Next' })`).
    pub locator: String,
}

impl Execute for BrowserGenerateLocator {
    type Output = GeneratedLocator;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    fn text(generated: &GeneratedLocator) -> Option<String> {
        Some(generated.locator.clone())
    }

    async fn run(self, cx: &ToolContext) -> Result<GeneratedLocator, ToolError> {
        let (target, element) = super::target(self.r#ref.as_deref(), self.selector.as_deref(), self.target.as_deref())?;
        with_page(cx, move |tab, _| {
            let answer = answer_about(tab, "locator", &target, &element)?;
            let mut locator = answer["locator"].as_str().unwrap_or_default().to_owned();
            // In a cross-origin frame: reached through the frame element, found in the page.
            if let Some(index) = target["ref"].as_str().and_then(super::frame_index) {
                let frame = super::script::page_op(
                    tab,
                    "read the frame",
                    "frame_locator",
                    &serde_json::json!({ "index": index }),
                )?;
                super::element_answer(&frame, &element)?;
                locator = format!(
                    "{}.contentFrame().{locator}",
                    frame["locator"].as_str().unwrap_or_default()
                );
            }
            Ok(GeneratedLocator { locator })
        })
        .await
    }
}
