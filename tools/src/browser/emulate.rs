//! `browser_emulate_media`: CSS media features (`prefers-color-scheme`, ...) and the media
//! type emulated for the page. Each call changes only what it names: an omitted feature
//! keeps its override, `null` clears it.

use std::borrow::Cow;

use headless_chrome::protocol::cdp::Emulation::{MediaFeature, SetEmulatedMedia};
use kyro_core::check::{Check, Checker, Rules};
use kyro_core::policy::SettingsTable;
use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};

use super::memory::Media;
use super::session::with_page;
use crate::Failure;
use crate::settings::NetworkSettings;

/// One override as an argument: omitted, it is left as it is; `null` clears it; a value
/// sets it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum MediaOverride<T> {
    /// Omitted: left as it is.
    #[default]
    Keep,
    /// `null`: cleared (the page's own value again).
    Clear,
    /// Set to this.
    Set(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MediaOverride<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => MediaOverride::Clear,
            Some(value) => MediaOverride::Set(value),
        })
    }
}

impl<T: JsonSchema> JsonSchema for MediaOverride<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Option::<T>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        Option::<T>::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Option::<T>::json_schema(generator)
    }
}

impl<T: Check> Check for MediaOverride<T> {
    fn complete() -> bool {
        T::complete()
    }

    fn check(value: &serde_json::Value, rules: &Rules, c: &mut Checker) {
        <Option<T> as Check>::check(value, rules, c);
    }

    fn take(value: &serde_json::Value, rules: &Rules, c: &mut Checker) -> Option<Self> {
        Some(match <Option<T> as Check>::take(value, rules, c)? {
            None => MediaOverride::Clear,
            Some(value) => MediaOverride::Set(value),
        })
    }
}

/// `light` or `dark`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ColorScheme {
    /// Light.
    Light,
    /// Dark.
    Dark,
}

/// `reduce` or `no-preference`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ReducedMotion {
    /// Less motion.
    Reduce,
    /// No preference.
    NoPreference,
}

/// `active` or `none`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ForcedColors {
    /// Forced colors on.
    Active,
    /// Off.
    None,
}

/// `more` or `no-preference`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Contrast {
    /// More contrast.
    More,
    /// No preference.
    NoPreference,
}

/// `screen` or `print`.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MediaType {
    /// A screen.
    Screen,
    /// Printing.
    Print,
}

/// Emulate CSS media features for the page (like the dark color scheme).
/// An omitted one keeps its override; `null` clears it. Kept across navigations.
#[tool(
    name = "browser_emulate_media",
    title = "Emulate media features in the browser",
    category = "browser",
    effect = "network",
    destructive = false,
    idempotent = true
)]
pub struct BrowserEmulateMedia {
    /// prefers-color-scheme: `light` or `dark`; null clears.
    #[tool(alias = "colorScheme")]
    #[serde(default)]
    pub color_scheme: MediaOverride<ColorScheme>,
    /// prefers-reduced-motion: `reduce` or `no-preference`; null clears.
    #[tool(alias = "reducedMotion")]
    #[serde(default)]
    pub reduced_motion: MediaOverride<ReducedMotion>,
    /// forced-colors: `active` or `none`; null clears.
    #[tool(alias = "forcedColors")]
    #[serde(default)]
    pub forced_colors: MediaOverride<ForcedColors>,
    /// prefers-contrast: `more` or `no-preference`; null clears.
    #[serde(default)]
    pub contrast: MediaOverride<Contrast>,
    /// The CSS media type: `screen` or `print`; null clears.
    #[serde(default)]
    pub media: MediaOverride<MediaType>,
}

/// The overrides in force now (absent: the page's own).
#[kyro_core::output]
#[derive(Debug)]
pub struct EmulatedMedia {
    /// prefers-color-scheme.
    pub color_scheme: Option<String>,
    /// prefers-reduced-motion.
    pub reduced_motion: Option<String>,
    /// forced-colors.
    pub forced_colors: Option<String>,
    /// prefers-contrast.
    pub contrast: Option<String>,
    /// The media type.
    pub media: Option<String>,
}

/// A value's name as CSS writes it (`dark`, `no-preference`).
fn css<T: std::fmt::Debug>(value: T) -> String {
    let name = format!("{value:?}");
    let mut css = String::with_capacity(name.len() + 2);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            css.push('-');
        }
        css.push(c.to_ascii_lowercase());
    }
    css
}

/// `change` applied to what is emulated now.
fn apply<T: std::fmt::Debug>(current: &mut Option<String>, change: MediaOverride<T>) {
    match change {
        MediaOverride::Keep => {}
        MediaOverride::Clear => *current = None,
        MediaOverride::Set(value) => *current = Some(css(value)),
    }
}

const FEATURES: [&str; 4] = [
    "prefers-color-scheme",
    "prefers-reduced-motion",
    "forced-colors",
    "prefers-contrast",
];

impl Execute for BrowserEmulateMedia {
    type Output = EmulatedMedia;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<EmulatedMedia, ToolError> {
        let BrowserEmulateMedia {
            color_scheme,
            reduced_motion,
            forced_colors,
            contrast,
            media,
        } = self;
        if [
            color_scheme == MediaOverride::Keep,
            reduced_motion == MediaOverride::Keep,
            forced_colors == MediaOverride::Keep,
            contrast == MediaOverride::Keep,
            media == MediaOverride::Keep,
        ]
        .iter()
        .all(|keep| *keep)
        {
            return Err(Failure::InvalidRequest {
                message: "name at least one media feature to emulate (null clears one)".into(),
            }
            .into());
        }
        with_page(cx, move |tab, _| {
            let Media { mut kind, features } = tab.memory().media();
            let mut values: [Option<String>; 4] = FEATURES.map(|f| features.get(f).cloned());
            apply(&mut values[0], color_scheme);
            apply(&mut values[1], reduced_motion);
            apply(&mut values[2], forced_colors);
            apply(&mut values[3], contrast);
            apply(&mut kind, media);
            let features: std::collections::BTreeMap<String, String> = FEATURES
                .iter()
                .zip(&values)
                .filter_map(|(name, value)| Some(((*name).to_owned(), value.clone()?)))
                .collect();
            // The whole set each time: DevTools replaces what was emulated.
            tab.call(
                SetEmulatedMedia {
                    media: Some(kind.clone().unwrap_or_default()),
                    features: Some(
                        features
                            .iter()
                            .map(|(name, value)| MediaFeature {
                                name: name.clone(),
                                value: value.clone(),
                            })
                            .collect(),
                    ),
                },
                "emulate the media",
            )?;
            tab.memory().set_media(Media {
                kind: kind.clone(),
                features,
            });
            let [color_scheme, reduced_motion, forced_colors, contrast] = values;
            Ok(EmulatedMedia {
                color_scheme,
                reduced_motion,
                forced_colors,
                contrast,
                media: kind,
            })
        })
        .await
    }
}
