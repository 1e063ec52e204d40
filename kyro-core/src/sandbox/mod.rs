//! The OS sandbox for programs tools start (`run_command`, `start_process`, git, upstream
//! MCP servers): the kernel, not kyro, keeps them inside what the policy's `[sandbox]`
//! allows, and everything they start inherits it.
//!
//! - The file system by Landlock: reads where `read` says, writes only beneath the
//!   writable paths and a private temporary directory. `.git` and `.kyro` of a writable
//!   root are bind-mounted read-only in a mount namespace of the program's own (Landlock
//!   grants rights to whole hierarchies and cannot take one back beneath a grant), and a
//!   Landlock-restricted process may not change mounts, so it cannot undo that.
//! - The network, when off: a network namespace of its own (nothing but a loopback that
//!   is down), seccomp refuses every socket but a Unix one, Landlock refuses TCP bind and
//!   connect (ABI 4) and abstract Unix sockets made outside (ABI 6). Named Unix sockets
//!   are files: reachable where reads reach, as the README says.
//! - Other principals: no controlling terminal (a session of its own) and no terminal
//!   ioctls; a private `/dev` (null, zero, full, random, urandom, tty); no capabilities,
//!   even as root; its own UTS namespace; resource limits; and a seccomp deny list for the
//!   kernel's privileged surface (device nodes, BPF, perf, keyrings, modules, kexec, swap,
//!   host names, io_uring). The filter is in `filter.rs`.
//! - Signals: a sandboxed program may not signal a process outside its sandbox (ABI 6).
//!
//! Everything is prepared in kyro's process ([`Sandbox::prepare`]); the forked child only
//! makes system calls ([`InChild`]), between fork and exec, so kyro itself is never
//! restricted and the program cannot run one instruction unrestricted.

//!
//! On other platforms there is no OS sandbox: [`support`] says why, and programs run only
//! where the policy allows running them without one (`allow_unsandboxed`, or `mode =
//! "full"`), each receipt saying so.

use std::path::Path;
use std::sync::Arc;

#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod linux;
mod request;

#[cfg(target_os = "linux")]
pub use child::InChild;
#[cfg(target_os = "linux")]
use linux::Restrictions;
#[cfg(target_os = "linux")]
pub use linux::{IdMaps, probe, support, unshare};
pub use request::{SandboxRequest, SandboxUnavailable};

use crate::policy::{SandboxMode, SandboxRead};
use request::NESTED_DIRECTORIES;

/// A sandbox prepared for one program: the restrictions its child applies, its private
/// temporary directory (removed when this is dropped) and what the receipt says of it.
#[derive(Debug)]
pub struct Sandbox {
    restrictions: Option<Arc<Restrictions>>,
    description: String,
    temp: Option<tempfile::TempDir>,
}

impl Sandbox {
    /// Prepares `request` in this process: the Landlock ruleset (paths opened, rules
    /// added), the seccomp filter, the read-only mounts and the temporary directory.
    pub fn prepare(request: &SandboxRequest) -> Result<Sandbox, SandboxUnavailable> {
        if request.mode == SandboxMode::Full {
            return Ok(Sandbox {
                restrictions: None,
                description: "full (no sandbox: the policy's [sandbox] mode = \"full\")".into(),
                temp: None,
            });
        }
        let abi = match support() {
            Ok(abi) => abi,
            Err(why) if request.allow_unsandboxed => {
                return Ok(Sandbox {
                    restrictions: None,
                    description: format!("none: {why}; ran unsandboxed because the policy sets allow_unsandboxed"),
                    temp: None,
                });
            }
            Err(why) => {
                return Err(SandboxUnavailable(format!(
                    "programs run only under the OS sandbox and {why}; set [sandbox] allow_unsandboxed = true to run them without it, or mode = \"full\""
                )));
            }
        };
        let temp = tempfile::Builder::new()
            .prefix("kyro-sandbox-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|e| SandboxUnavailable(format!("cannot make the sandbox's temporary directory: {e}")))?;
        let restrictions = Restrictions::new(request, abi, temp.path())?;
        let mut description = format!(
            "{}, network {}",
            request.mode.as_str(),
            if request.network { "on" } else { "off" }
        );
        if request.read == SandboxRead::Roots {
            description.push_str(", reads confined to the roots");
        }
        if !request.nested_search_complete {
            description.push_str(&format!(
                ", nested repositories' .git protected within the first {NESTED_DIRECTORIES} directories only"
            ));
        }
        description.push_str(&format!(" (Landlock ABI {abi})"));
        Ok(Sandbox {
            restrictions: Some(Arc::new(restrictions)),
            description,
            temp: Some(temp),
        })
    }

    /// What the receipt says: the mode and network, or why there is no sandbox.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The program's private temporary directory (its `TMPDIR`), when sandboxed.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_ref().map(|t| t.path())
    }

    /// What the forked child of `command` applies, when there is something to apply.
    /// The command gets a session of its own in any case (see [`new_session`]), so the
    /// program never shares kyro's controlling terminal, whatever the caller forks next.
    pub fn in_child(&self, command: &mut std::process::Command) -> Option<InChild> {
        new_session(command);
        self.restrictions.clone().map(InChild)
    }

    /// Applies the sandbox to `command` (for callers without a namespace of their own to
    /// make): before exec the child enters its namespaces, mounts `.git` and `.kyro`
    /// read-only and its private `/dev`, and restricts itself; `TMPDIR` is the private
    /// temporary directory. The command gets a session of its own in any case (see
    /// [`new_session`]).
    pub fn apply(&self, command: &mut std::process::Command) {
        let Some(child) = self.in_child(command) else {
            return;
        };
        if let Some(temp) = self.temp_dir() {
            command.env("TMPDIR", temp);
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let maps = IdMaps::current();
            // SAFETY: the closure makes system calls only (see `InChild`).
            unsafe {
                command.pre_exec(move || {
                    if unshare(child.namespaces(), &maps) && child.mount() && child.restrict() {
                        Ok(())
                    } else {
                        Err(std::io::Error::other("cannot enter the sandbox"))
                    }
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        match *child.0 {}
    }
}

/// Puts the program `command` starts in a session (and process group) of its own, led by
/// itself: it has no controlling terminal, so it can neither open `/dev/tty` nor type
/// into the terminal kyro was started from, and kyro signals it and everything it starts
/// as one group (the group's id is its process id). Replaces `process_group(0)`, which
/// would make the `setsid` fail; a second call adds nothing.
///
/// Every signal also gets its default action back and is unblocked: a kyro started with
/// SIGTERM or SIGINT ignored (a background job of a script, `nohup`, some supervisors) or
/// blocked (a parent that blocks them around its fork) would otherwise pass that on through
/// exec (the standard library's fork path keeps the mask), and its programs would ignore
/// the SIGTERM that stops them.
pub fn new_session(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid, sigaction and sigprocmask are async-signal-safe; the structs are on
    // the stack.
    unsafe {
        command.pre_exec(|| {
            if libc::getsid(0) != libc::getpid() && libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            default_signals();
            Ok(())
        });
    }
}

/// Every signal's default action, none blocked: in a forked child, before exec.
///
/// # Safety
/// Async-signal-safe calls only.
#[cfg(target_os = "linux")]
unsafe fn default_signals() {
    // SAFETY: the kernel's own calls on structs on the stack.
    unsafe {
        // The kernel's own call, so that the real-time signals the C library keeps for
        // itself (32, 33) are reset too: all zeros is SIG_DFL, no flags, an empty mask, in
        // every architecture's layout of the kernel's struct.
        let default = [0u64; 4];
        for signal in 1..=64 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    signal,
                    default.as_ptr(),
                    std::ptr::null_mut::<u64>(),
                    8usize,
                );
            }
        }
        let unblocked = 0u64;
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &unblocked as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        );
    }
}

/// Every signal's default action, none blocked: in a forked child, before exec.
///
/// # Safety
/// Async-signal-safe calls only.
#[cfg(not(target_os = "linux"))]
unsafe fn default_signals() {
    // SAFETY: signal and sigprocmask on values and a set on the stack.
    unsafe {
        for signal in 1..32 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut unblocked: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut unblocked);
        libc::sigprocmask(libc::SIG_SETMASK, &unblocked, std::ptr::null_mut());
    }
}

/// Why this platform has no OS sandbox.
#[cfg(not(target_os = "linux"))]
pub fn support() -> Result<i32, String> {
    Err("kyro's OS sandbox needs Linux (Landlock, namespaces, seccomp), and this is not Linux".into())
}

/// Restrictions are never prepared where [`support`] always fails.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
enum Restrictions {}

#[cfg(not(target_os = "linux"))]
impl Restrictions {
    fn new(_: &SandboxRequest, _: i32, _: &Path) -> Result<Restrictions, SandboxUnavailable> {
        Err(SandboxUnavailable(support().unwrap_err()))
    }
}

/// What a forked child applies; never made where there is no OS sandbox.
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone)]
pub struct InChild(Arc<Restrictions>);
