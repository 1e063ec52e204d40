use kyro::prelude::*;

/// How a word is matched.
#[input(rename_all = "snake_case")]
pub enum Matching {
    /// The whole word.
    Exact,
}

fn main() {}
