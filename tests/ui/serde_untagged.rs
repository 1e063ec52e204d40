use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
#[serde(untagged)]
pub struct Args {
    /// A path.
    pub path: String,
}

fn main() {}
