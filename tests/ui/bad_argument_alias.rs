use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "none")]
pub struct Thing {
    /// A path.
    #[tool(alias = "file-path")]
    pub path: String,
}

fn main() {}
