use kyro_core::tool;

/// Fetches a page.
#[tool(name = "fetch", category = "web", effect = "network", read_only = "yes")]
pub struct Args {
    /// The URL.
    pub url: String,
}

fn main() {}
