use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A path.
    #[tool(rename = "p")]
    pub path: String,
}

fn main() {}
