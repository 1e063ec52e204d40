use kyro_core::{Execute, ToolContext, ToolError, tool};

#[doc = include_str!("doc_include_str.md")]
#[tool(name = "documented_elsewhere", category = "files", effect = "read")]
pub struct Args {
    /// A path.
    pub path: String,
}

/// Nothing.
#[kyro_core::output]
pub struct Nothing {}

impl Execute for Args {
    type Output = Nothing;

    async fn run(self, _cx: &ToolContext) -> Result<Nothing, ToolError> {
        Ok(Nothing {})
    }
}

fn main() {
    use kyro_core::Tool;
    assert_eq!(Args::SPEC.description, "Read nothing, documented in a file of its own.\n");
}
