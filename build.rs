//! Regenerates `docs/tool-inventory.md` from the compiled catalog.
//!
//! The document is rendered into OUT_DIR (what packaging allows) and, in a workspace
//! checkout, copied to `docs/` when its content changed. `kyro docs --check` is the guard
//! when the copy cannot be written.

#[cfg(feature = "builtins")]
#[path = "src/inventory.rs"]
#[allow(dead_code)]
mod inventory;

#[cfg(feature = "builtins")]
use std::path::PathBuf;

/// Without the built-ins (an author's `default-features = false`) there is nothing to render.
#[cfg(not(feature = "builtins"))]
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}

#[cfg(feature = "builtins")]
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/inventory.rs");
    println!("cargo:rerun-if-changed=docs/tool-inventory.md");
    // Servers compile validators on first use; a built-in schema that does not register or
    // compile fails here, at build time.
    let text = inventory::render_catalog(kyro_tools::BUILTINS)
        .unwrap_or_else(|e| panic!("the built-in catalog does not register: {e}"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    write_if_changed(&out_dir.join("tool-inventory.md"), &text);
    // The canonical schemas, generated and checked here once: `kyro` embeds them and its
    // start-up registers the catalog without generating a schema.
    let prepared = kyro_core::Registry::prepared_schemas(kyro_tools::BUILTINS)
        .unwrap_or_else(|e| panic!("the built-in catalog does not register: {e}"));
    write_if_changed(&out_dir.join("prepared-schemas.json"), &prepared);
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // Only a checkout has .git; a packaged crate being verified must not write outside OUT_DIR.
    if manifest.join(".git").exists() {
        write_if_changed(&manifest.join("docs").join("tool-inventory.md"), &text);
    }
}

#[cfg(feature = "builtins")]
fn write_if_changed(path: &std::path::Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
