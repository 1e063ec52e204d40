use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A ratio.
    pub ratio: f32,
}

fn main() {}
