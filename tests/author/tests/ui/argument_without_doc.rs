use kyro::prelude::*;

/// Echo a text.
#[tool(name = "echo", category = "text", effect = "none")]
pub struct Echo {
    pub text: String,
}

fn main() {}
