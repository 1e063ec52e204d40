use kyro_core::{Execute, ToolContext, ToolError, tool};

/// Reads a thing.
#[tool(name = "read_thing", category = "files", effect = "read", aliases = ["get"])]
pub struct ReadThing {
    /// A path.
    pub path: String,
}

/// Fetches a thing.
#[tool(name = "fetch_thing", category = "files", effect = "read", aliases = ["get"])]
pub struct FetchThing {
    /// A path.
    pub path: String,
}

impl Execute for ReadThing {
    type Output = serde_json::Map<String, serde_json::Value>;

    async fn run(self, _cx: &ToolContext) -> Result<Self::Output, ToolError> {
        Ok(serde_json::Map::new())
    }
}

impl Execute for FetchThing {
    type Output = serde_json::Map<String, serde_json::Value>;

    async fn run(self, _cx: &ToolContext) -> Result<Self::Output, ToolError> {
        Ok(serde_json::Map::new())
    }
}

kyro_core::catalog! {
    pub const CATALOG = [ReadThing, FetchThing];
}

fn main() {}
