use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub enum Args {
    A,
}

fn main() {}
