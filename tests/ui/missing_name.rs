use kyro_core::tool;

/// Does a thing.
#[tool(category = "files", effect = "read")]
pub struct Args {
    /// A path.
    pub path: String,
}

fn main() {}
