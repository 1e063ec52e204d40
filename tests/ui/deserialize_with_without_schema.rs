use kyro_core::tool;

/// Does a thing.
#[tool(name = "thing", category = "files", effect = "read")]
pub struct Args {
    /// A count.
    #[serde(deserialize_with = "lenient")]
    pub count: u32,
}

fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    serde::Deserialize::deserialize(d)
}

fn main() {}
