use kyro_core::{Execute, ToolContext, ToolError, tool};

/// Lists things.
#[tool(name = "list_things", category = "files", effect = "read")]
pub struct ListThings {
    /// A path.
    pub path: String,
}

// A list is not an object: MCP's structuredContent is one, so the output must be too.
impl Execute for ListThings {
    type Output = Vec<String>;

    async fn run(self, _cx: &ToolContext) -> Result<Vec<String>, ToolError> {
        Ok(vec![self.path])
    }
}

fn main() {}
