use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "browser..Vision", effect = "none")]
pub struct Thing {}

fn main() {}
