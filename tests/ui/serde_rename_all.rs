use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
#[serde(rename_all = "camelCase")]
pub struct Args {
    /// A path.
    pub file_path: String,
}

fn main() {}
