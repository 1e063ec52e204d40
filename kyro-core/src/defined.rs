//! Every `#[tool]` type linked into the program, whether or not a catalog holds it, so a
//! tool defined but left out of `catalog!` is found (by the inventory test and at start)
//! instead of compiling into a server that never serves it.

use crate::tool::ToolEntry;

/// A `#[tool]` type as its definition records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defined {
    /// The tool's name.
    pub name: &'static str,
    /// The Rust type carrying `#[tool]`.
    pub type_name: &'static str,
    /// The package (crate) that defines it.
    pub package: &'static str,
}

/// The definitions, one per `#[tool]` type linked in (filled by the linker).
#[linkme::distributed_slice]
pub static DEFINED: [Defined];

/// Packages whose tools are offered as families an author picks from, never all served.
const KYRO_OWN: [&str; 3] = ["kyro-core", "kyro-tools", "kyro"];

/// The `#[tool]` types of the crates `tools` come from (kyro's own crates aside, whose
/// families an author picks from) that `tools` leaves out, sorted by package and name.
pub fn left_out(tools: &[ToolEntry]) -> Vec<Defined> {
    let packages: Vec<&str> = tools
        .iter()
        .map(|t| t.spec.package.name)
        .filter(|p| !KYRO_OWN.contains(p))
        .collect();
    let mut out: Vec<Defined> = DEFINED
        .iter()
        .filter(|d| packages.contains(&d.package))
        .filter(|d| {
            !tools
                .iter()
                .any(|t| t.spec.name == d.name && t.spec.package.name == d.package)
        })
        .copied()
        .collect();
    out.sort_by_key(|d| (d.package, d.name));
    out.dedup();
    out
}

/// `left_out` said in one sentence, or `None` when nothing is left out.
pub fn left_out_message(tools: &[ToolEntry]) -> Option<String> {
    let left = left_out(tools);
    if left.is_empty() {
        return None;
    }
    let names: Vec<String> = left
        .iter()
        .map(|d| format!("{} (`{}` in {})", d.name, d.type_name, d.package))
        .collect();
    Some(format!(
        "{} tool{} carrying #[tool] {} in no catalog served, so never served: {}; add {} to `catalog!`",
        left.len(),
        if left.len() == 1 { "" } else { "s" },
        if left.len() == 1 { "is" } else { "are" },
        names.join(", "),
        if left.len() == 1 { "it" } else { "them" },
    ))
}
