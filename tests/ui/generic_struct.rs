use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args<T> {
    /// A value.
    pub value: T,
}

fn main() {}
