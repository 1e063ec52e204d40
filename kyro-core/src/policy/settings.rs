//! A tool family's own policy table (`[tools.shell]`, `[tools.network]`): declared by the
//! tools that read it, checked when the policy loads, read by the tools through the scope.
//! kyro-core knows no table: a new tool family brings its own.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A tool family's settings: the typed form of the policy table `[tools.<TABLE>]`. Absent,
/// the table is `Default::default()`. Make the type refuse unknown fields
/// (`#[serde(deny_unknown_fields)]`) so a misspelt key is an error at load.
///
/// ```
/// use kyro_core::policy::{Settings, SettingsTable};
/// #[derive(serde::Deserialize, Default)]
/// #[serde(deny_unknown_fields, default)]
/// struct Weather {
///     station: String,
/// }
/// impl Settings for Weather {
///     const TABLE: &'static str = "weather";
/// }
/// // In the reading tool's `impl Execute`:
/// const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<Weather>()];
/// ```
pub trait Settings: DeserializeOwned + Default + Send + Sync + 'static {
    /// The table's name under `[tools]`: snake_case.
    const TABLE: &'static str;
}

/// A table a tool reads, as its `Execute::SETTINGS` declares it: the name and a check of a
/// table's content against the type.
#[derive(Clone, Copy)]
pub struct SettingsTable {
    /// The name under `[tools]`.
    pub table: &'static str,
    check: fn(&Value) -> Result<(), String>,
}

impl std::fmt::Debug for SettingsTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[tools.{}]", self.table)
    }
}

impl SettingsTable {
    /// The table of settings type `T`.
    pub const fn of<T: Settings>() -> SettingsTable {
        SettingsTable {
            table: T::TABLE,
            check: check::<T>,
        }
    }

    /// Whether `content` is a valid table of this type (serde's message when not).
    pub fn check(&self, content: &Value) -> Result<(), String> {
        (self.check)(content)
    }
}

fn check<T: Settings>(content: &Value) -> Result<(), String> {
    T::deserialize(content).map(drop).map_err(|e| e.to_string())
}

/// The policy's `[tools.*]` tables, shared by a scope and its children, each read once per
/// type.
#[derive(Default)]
pub(crate) struct Tables {
    content: BTreeMap<String, Value>,
    read: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.content.keys()).finish()
    }
}

impl Tables {
    pub(crate) fn new(content: BTreeMap<String, Value>) -> Tables {
        Tables {
            content,
            read: Mutex::default(),
        }
    }

    /// The settings of type `T`: the table deserialized, or the default when absent.
    pub(crate) fn get<T: Settings>(&self) -> Result<Arc<T>, String> {
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(done) = read.get(&TypeId::of::<T>())
            && let Ok(done) = done.clone().downcast::<T>()
        {
            return Ok(done);
        }
        let settings = match self.content.get(T::TABLE) {
            Some(content) => T::deserialize(content).map_err(|e| e.to_string())?,
            None => T::default(),
        };
        let settings = Arc::new(settings);
        read.insert(TypeId::of::<T>(), settings.clone());
        Ok(settings)
    }
}
