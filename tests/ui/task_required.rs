use kyro_core::tool;

/// Does a long thing.
#[tool(name = "long_thing", category = "files", effect = "read", task = "required")]
pub struct Args {
    /// A path.
    pub path: String,
}

fn main() {}
