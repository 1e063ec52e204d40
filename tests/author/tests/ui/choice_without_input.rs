use kyro::prelude::*;

/// How names are matched.
pub enum Matching {
    /// The whole name.
    Exact,
    /// The start of the name.
    Prefix,
}

/// Find a name.
#[tool(name = "find_name", category = "text", effect = "none")]
pub struct FindName {
    /// The name to find.
    pub name: String,
    /// How to match it.
    pub matching: Matching,
}

/// What was found.
#[output]
pub struct Found {
    /// Whether it was.
    pub found: bool,
}

impl Execute for FindName {
    type Output = Found;

    async fn run(self, _cx: &ToolContext) -> Result<Found, ToolError> {
        Ok(Found { found: !self.name.is_empty() })
    }
}

fn main() {}
