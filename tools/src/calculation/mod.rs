//! Calculation: pure arithmetic and logic.

mod calculate;

pub use calculate::{Calculate, Calculation, ResultKind};
