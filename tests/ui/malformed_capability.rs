use kyro_core::{Execute, ToolContext, ToolError, tool};

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read", capabilities = ["Greet Send"])]
pub struct Args {
    /// A path.
    pub path: String,
}

impl Execute for Args {
    type Output = serde_json::Map<String, serde_json::Value>;

    async fn run(self, _cx: &ToolContext) -> Result<Self::Output, ToolError> {
        Ok(serde_json::Map::new())
    }
}

fn main() {}
