use kyro_core::tool;

/// Does a long thing.
#[tool(name = "long_thing", category = "testing", effect = "none", task = "optional", inline = true)]
pub struct LongThing {}

fn main() {}
