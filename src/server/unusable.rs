//! Said at start: the served tools the policy makes unusable, and why, so a policy that
//! grants less than the catalog needs is not found out one refused call at a time; the
//! author's `#[tool]` types that no catalog served holds; and when programs run without
//! the OS sandbox.

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
    kyro_core::log::set_program(server);
    kyro_core::log::warn(&format!(
        "the policy makes {} served tools unusable (not listed, refused if called): {}",
        unusable.len(),
        unusable.join(", ")
    ));
}

/// One line on stderr when a `#[tool]` of the author's crates is in no catalog served.
pub(super) fn say_left_out(server: &str, entries: &[kyro_core::ToolEntry]) {
    if let Some(message) = kyro_core::left_out_message(entries) {
        kyro_core::log::set_program(server);
        kyro_core::log::warn(&message);
    }
}

/// Says on stderr when programs will not run under the OS sandbox, and what happens then.
/// The kernel is probed (a child process is started) on a thread of its own when
/// `background`, so that a server answers its first request without waiting for it; a
/// call that needs the answer waits for the same probe.
pub(super) fn say_sandbox(runtime: &Runtime, background: bool) {
    let policy = runtime.scope().sandbox().clone();
    let say = move || {
        if policy.mode == kyro_core::policy::SandboxMode::Full {
            kyro_core::log::warn("[sandbox] mode = \"full\": programs tools start run without an OS sandbox");
        } else if let Err(why) = kyro_core::sandbox::support() {
            if policy.allow_unsandboxed {
                kyro_core::log::warn(&format!(
                    "{why}; programs tools start run WITHOUT an OS sandbox ([sandbox] allow_unsandboxed = true)"
                ));
            } else {
                kyro_core::log::warn(&format!(
                    "{why}; run_command, start_process and upstream servers are refused (set [sandbox] allow_unsandboxed = true to run them without a sandbox); git runs unsandboxed"
                ));
            }
        }
    };
    if background {
        std::thread::spawn(move || {
            crate::frames::first_answer::wait();
            say();
        });
    } else {
        say();
    }
}
