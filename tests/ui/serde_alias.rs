use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A path.
    #[serde(alias = "file_path")]
    pub path: String,
}

fn main() {}
