//! `browser_fill_form`: many fields of a form in one call.

use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, tool};

use super::session::with_page;
use crate::settings::NetworkSettings;

/// Fill many fields of the browser page in one call: text typed over, checkboxes and radio
/// buttons set (`"true"`/`"false"`), options of a `<select>` chosen (by value or label).
///
/// Each field is named by `ref` from the latest browser_snapshot or by a CSS `selector`.
/// Fields are filled in order; the first that cannot be filled stops the call, and the
/// error says which (the fields before it stay filled). Nothing is submitted.
#[tool(
    name = "browser_fill_form",
    title = "Fill a form in the browser",
    category = "browser",
    effect = "network",
    destructive = true,
    idempotent = true
)]
pub struct BrowserFillForm {
    /// The fields, in the order to fill them.
    #[schemars(length(min = 1, max = 100))]
    pub fields: Vec<FormField>,
}

/// One field and its value.
#[kyro_core::input]
#[derive(Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct FormField {
    /// The field's ref from browser_snapshot, like `e3` (or `f1e3` in a cross-origin frame).
    #[schemars(regex(pattern = "^(f[0-9]{1,4})?e[0-9]{1,9}$"))]
    pub r#ref: Option<String>,
    /// A CSS selector instead of a ref; the first match is filled.
    #[schemars(length(min = 1, max = 1000))]
    pub selector: Option<String>,
    /// The text, `"true"`/`"false"` for a checkbox or radio button, an option's value or
    /// label for a `<select>`.
    #[schemars(length(max = 100000))]
    pub value: String,
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
            let (mut target, name) = super::target(field.r#ref.as_deref(), field.selector.as_deref())?;
            target["value"] = field.value.into();
            targets.push((target, name));
        }
        with_page(cx, move |tab, dialogs| {
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
