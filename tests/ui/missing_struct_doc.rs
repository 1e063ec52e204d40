use kyro_core::tool;

#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A path.
    pub path: String,
}

fn main() {}
