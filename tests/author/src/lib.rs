//! The author's tools, as a library: the server binary serves them, and the tests (the
//! inventory's among them) reach them.

mod tools;

pub use tools::TOOLS;
