//! Said at start: the served tools the policy makes unusable, and why, so a policy that
//! grants less than the catalog needs is not found out one refused call at a time; and the
//! author's `#[tool]` types that no catalog served holds.

use kyro_core::Runtime;

/// The served tools the runtime's policy never lets run, each with why: the capabilities
/// it lacks, or a `deny` for its effect or name.
pub(super) fn unusable(runtime: &Runtime) -> Vec<String> {
    let scope = runtime.scope();
    runtime
        .registry()
        .snapshot()
        .descriptors()
        .filter(|d| !scope.may_allow(d))
        .map(|d| {
            let missing: Vec<String> = d
                .capabilities
                .iter()
                .filter(|c| !scope.capabilities().contains(c))
                .map(|c| format!("`{c}`"))
                .collect();
            if missing.is_empty() {
                format!("{} (denied by the policy's approvals)", d.name)
            } else {
                format!("{} (needs {})", d.name, missing.join(", "))
            }
        })
        .collect()
}

/// One line on stderr when the policy makes served tools unusable.
pub(super) fn say_unusable(server: &str, runtime: &Runtime) {
    let unusable = unusable(runtime);
    if unusable.is_empty() {
        return;
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{server}: the policy makes {} served tools unusable (not listed, refused if called): {}",
        unusable.len(),
        unusable.join(", ")
    );
}

/// One line on stderr when a `#[tool]` of the author's crates is in no catalog served.
pub(super) fn say_left_out(server: &str, entries: &[kyro_core::ToolEntry]) {
    if let Some(message) = kyro_core::left_out_message(entries) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{server}: {message}");
    }
}
