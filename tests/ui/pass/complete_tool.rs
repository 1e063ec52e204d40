use std::collections::BTreeMap;

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

/// Search for a pattern and return matches.
///
/// Every key the attribute takes, on one tool.
#[tool(
    name = "find_things",
    title = "Find things",
    category = "files",
    effect = "read",
    aliases = ["find", "search_things"],
    capabilities = ["fs.read"],
    approval = "auto",
    read_only = true,
    destructive = false,
    idempotent = true,
    open_world = false
)]
pub struct FindThings {
    /// Where to look.
    #[tool(alias = "dir")]
    pub path: WorkspacePath,
    /// How many, at most.
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Labels by name.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Free-form metadata, explicitly untyped.
    #[tool(any_value)]
    pub extra: Option<serde_json::Value>,
    /// A count read leniently, with the schema saying exactly what it accepts.
    #[serde(default, deserialize_with = "lenient")]
    #[schemars(schema_with = "count_schema")]
    pub count: u32,
}

fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    serde::Deserialize::deserialize(d)
}

fn count_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "integer", "minimum": 0, "maximum": 4294967295u64 })
}

/// What was found.
#[kyro_core::output]
pub struct Found {
    /// The matching paths.
    pub paths: Vec<String>,
}

impl Execute for FindThings {
    type Output = Found;

    async fn run(self, _cx: &ToolContext) -> Result<Found, ToolError> {
        Ok(Found {
            paths: vec![self.path.to_string()],
        })
    }
}

kyro_core::catalog! {
    pub const CATALOG = [FindThings];
}

fn main() {
    assert_eq!(CATALOG[0].spec.name, "find_things");
    assert_eq!(CATALOG[0].spec.aliases, ["find", "search_things"]);
    assert_eq!(CATALOG[0].spec.arg_aliases[0].alias, "dir");
}
