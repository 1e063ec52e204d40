use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A path.
    #[tool(alias = "target")]
    pub path: String,
    /// A target.
    pub target: String,
}

fn main() {}
