use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files")]
pub struct Args {
    /// A path.
    pub path: String,
}

fn main() {}
