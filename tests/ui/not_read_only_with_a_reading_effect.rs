use kyro_core::tool;

/// Reads a file.
#[tool(name = "peek", category = "files", effect = "read", read_only = false)]
pub struct Args {
    /// The path.
    pub path: String,
}

fn main() {}
