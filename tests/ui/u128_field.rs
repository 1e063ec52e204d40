use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A big count.
    pub count: u128,
}

fn main() {}
