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
    type Output = ();

    async fn run(self, _cx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
}

impl Execute for FetchThing {
    type Output = ();

    async fn run(self, _cx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
}

kyro_core::catalog! {
    pub const CATALOG = [ReadThing, FetchThing];
}

fn main() {}
