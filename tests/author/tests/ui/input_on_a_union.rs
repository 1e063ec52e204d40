use kyro::prelude::*;

/// Either.
#[input]
pub union Either {
    /// One.
    pub one: u32,
    /// Other.
    pub other: f64,
}

fn main() {}
