//! `browser_fill_form`: many fields of a form in one call.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use crate::settings::NetworkSettings;

/// Fill several fields in order: text typed over, checkboxes and radios set, `<select>` options chosen.
/// The first failure stops the call and is named (earlier fields stay filled). Nothing is
/// submitted.
#[tool(
    name = "browser_fill_form",
    title = "Fill a form in the browser",
    category = "browser",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserFillForm {
    /// The fields, in order.
    #[schemars(length(min = 1, max = 100))]
    pub fields: Vec<FormField>,
}

/// A field.
#[kyro_core::input]
#[derive(Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FormField {
    /// Ref from browser_snapshot, like `e3` or `f1e3`.
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// CSS selector instead of a ref (first match).
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// Playwright's spelling: a ref or a CSS selector.
    #[schemars(length(min = 1, max = 1000))]
    pub target: Option<String>,
    /// The field in words (Playwright's `name`).
    #[schemars(length(max = 1000))]
    pub name: Option<String>,
    /// The element in words (Playwright's `element`).
    #[schemars(length(max = 1000))]
    pub element: Option<String>,
    /// Text, `"true"`/`"false"` for a checkbox or radio, or an option's value or label.
    #[schemars(length(max = 100000))]
    pub value: String,
    /// Playwright's field type (accepted; the element itself decides how it is filled).
    pub r#type: Option<FieldKind>,
}

/// A field's kind, as Playwright names it.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// A text field.
    Textbox,
    /// A checkbox.
    Checkbox,
    /// A radio button.
    Radio,
    /// A select.
    Combobox,
    /// A range input.
    Slider,
}

/// The form after filling.
#[kyro_core::output]
#[derive(Debug)]
pub struct Filled {
    /// Each field's value afterwards, in order (`"true"`/`"false"` for a checkbox or radio).
    pub values: Vec<String>,
    /// The page's URL.
    pub url: String,
    /// The document's title.
    pub title: String,
    /// Dialogs the page opened meanwhile.
    pub dialogs: Vec<String>,
}

impl Execute for BrowserFillForm {
    type Output = Filled;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Filled, ToolError> {
        let mut targets = Vec::with_capacity(self.fields.len());
        for field in self.fields {
            let (mut target, name) = super::target(
                field.r#ref.as_deref(),
                field.selector.as_deref(),
                field.target.as_deref(),
            )?;
            target["value"] = field.value.into();
            targets.push((target, name));
        }
        with_page(cx, move |tab, dialogs| {
            let action = match targets.as_slice() {
                [(_, name)] => format!("Fill {name}"),
                _ => format!("Fill {} form fields", targets.len()),
            };
            super::actions::announce(tab, &action, targets.first().map(|(t, _)| t), None);
            let mut values = Vec::with_capacity(targets.len());
            for (target, name) in &targets {
                let (answer, _) = super::element_op(tab, "fill a field", "fill", target, name)?;
                super::element_answer(&answer, name)?;
                let value = match &answer["value"] {
                    serde_json::Value::String(v) => v.clone(),
                    // A <select>: the chosen values.
                    _ => answer["values"]
                        .as_array()
                        .map(|v| v.iter().filter_map(|s| s.as_str()).collect::<Vec<_>>().join(","))
                        .unwrap_or_default(),
                };
                values.push(value);
            }
            let (url, title, _) = super::script::page_info(tab)?;
            Ok(Filled {
                values,
                url,
                title,
                dialogs: dialogs.take(),
            })
        })
        .await
    }
}
