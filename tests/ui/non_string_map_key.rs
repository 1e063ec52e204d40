use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// Counts by id.
    pub counts: std::collections::HashMap<u32, String>,
}

fn main() {}
