use kyro_core::tool;

#[tool(name = "Bad Name", category = "files", effect = "delete", colour = "red")]
pub struct Args {
    pub path: String,
    /// A ratio.
    pub ratio: f32,
}

fn main() {}
