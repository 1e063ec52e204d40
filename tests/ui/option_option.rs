use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// Maybe maybe.
    pub note: Option<Option<String>>,
}

fn main() {}
