use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// Common options.
    #[serde(flatten)]
    pub common: std::collections::HashMap<String, String>,
}

fn main() {}
