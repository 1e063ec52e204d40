use kyro_core::tool;

/// Does a quick thing.
#[tool(name = "quick_thing", category = "testing", effect = "none", inline = "yes")]
pub struct QuickThing {}

fn main() {}
