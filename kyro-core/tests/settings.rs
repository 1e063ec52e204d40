//! A tool family's own policy table: declared by its tools, checked at load, read through
//! the scope. kyro-core knows no table; these tests define their own.

use std::sync::Arc;

use kyro_core::policy::{ScopeError, Settings, SettingsTable};
use kyro_core::{Call, Execute, Outcome, Policy, Registry, Runtime, ToolContext, ToolError, Workspace, tool};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Weather {
    station: String,
    units: Units,
}

impl Default for Weather {
    fn default() -> Weather {
        Weather {
            station: "none".into(),
            units: Units::Metric,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Units {
    Metric,
    Imperial,
}

impl Settings for Weather {
    const TABLE: &'static str = "weather";
}

/// Reports the station the policy names.
#[tool(name = "station", category = "testing", effect = "none")]
struct Station {}

/// The station.
#[kyro_core::output]
struct Named {
    /// From `[tools.weather]`.
    station: String,
    /// Imperial units?
    imperial: bool,
}

impl Execute for Station {
    type Output = Named;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<Weather>()];

    async fn run(self, cx: &ToolContext) -> Result<Named, ToolError> {
        let weather = cx.scope().settings::<Weather>()?;
        Ok(Named {
            station: weather.station.clone(),
            imperial: matches!(weather.units, Units::Imperial),
        })
    }
}

kyro_core::catalog! {
    const CATALOG = [Station];
}

fn runtime(policy: &str) -> Result<Runtime, ScopeError> {
    let policy: Policy = toml::from_str(policy).expect("policy parses");
    let registry = Arc::new(Registry::with_catalog(CATALOG).unwrap());
    Runtime::new(registry, Workspace::new(std::env::temp_dir()).unwrap(), &policy)
}

fn station(runtime: &Runtime) -> Value {
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new("station", json!({}))));
    match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_declared_table_reaches_its_tool_and_an_absent_one_is_the_default() {
    let configured = runtime("[tools.weather]\nstation = \"EGLL\"\nunits = \"imperial\"\n").unwrap();
    assert_eq!(station(&configured), json!({"station": "EGLL", "imperial": true}));
    let absent = runtime("").unwrap();
    assert_eq!(station(&absent), json!({"station": "none", "imperial": false}));
}

#[test]
fn a_table_no_tool_reads_is_refused_at_load() {
    let error = runtime("[tools.wether]\nstation = \"EGLL\"\n").unwrap_err();
    assert!(
        matches!(&error, ScopeError::Settings { table, message } if table == "wether" && message.contains("weather")),
        "{error}"
    );
}

#[test]
fn a_table_its_reader_refuses_is_refused_at_load() {
    for bad in [
        "[tools.weather]\nstaton = \"EGLL\"\n",
        "[tools.weather]\nunits = \"kelvin\"\n",
        "[tools.weather]\nstation = 7\n",
    ] {
        let error = runtime(bad).unwrap_err();
        assert!(
            matches!(&error, ScopeError::Settings { table, .. } if table == "weather"),
            "{bad}: {error}"
        );
    }
}
