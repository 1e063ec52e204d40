use kyro_core::tool;

/// Writes a file.
#[tool(name = "put", category = "files", effect = "write", read_only = true)]
pub struct Args {
    /// The path.
    pub path: String,
}

fn main() {}
