//! Writes docs/tool-inventory.md from the same descriptors the server lists.

#[path = "src/tools.rs"]
#[allow(dead_code)]
mod tools;

fn main() {
    println!("cargo:rerun-if-changed=src/tools.rs");
    let text = kyro::inventory::render_catalog(tools::TOOLS).expect("the catalog registers");
    kyro::inventory::write_if_changed("docs/tool-inventory.md".as_ref(), &text).expect("the inventory is written");
}
