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

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

mod child;
mod filter;

pub use child::InChild;

use crate::policy::{Access, SandboxMode, SandboxPolicy, SandboxRead, Scope};

/// What the system's programs need to read under `read = "roots"` (`/etc` without
/// [`SECRETS`]; `/dev` is private and holds only [`DEVICES`]).
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys",
];

/// Entries of `/etc` left out under `read = "roots"`: password hashes and sudo's rules.
const SECRETS: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "security",
];

/// Devices every program may write (and read); the whole of its private `/dev` but the
/// links into `/proc`.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// What one program (and its descendants) may do, before it is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRequest {
    /// What it may write.
    pub mode: SandboxMode,
    /// Whether it may open network sockets.
    pub network: bool,
    /// With `network`: in a network namespace of its own whose loopback is up, so that it
    /// reaches only what listens inside (the browser, which reaches kyro's proxy there).
    pub private_loopback: bool,
    /// Where it may read.
    pub read: SandboxRead,
    /// Read beneath these besides the system's directories, under `read = "roots"`.
    pub readable: Vec<PathBuf>,
    /// Write beneath these, under `workspace-write`.
    pub writable: Vec<PathBuf>,
    /// Read-only even beneath a writable path (`.git`, `.kyro`).
    pub read_only: Vec<PathBuf>,
    /// Run bare where the kernel cannot sandbox, instead of refusing.
    pub allow_unsandboxed: bool,
    /// Whether the search for nested repositories' `.git` read every directory it meant
    /// to (false: it stopped at its bound, and the receipt says so).
    pub nested_search_complete: bool,
}

impl SandboxRequest {
    /// The policy's sandbox for a program started in `scope`: writable are the scope's
    /// read-write roots (their `.git` and `.kyro` read-only) and the policy's `writable`;
    /// readable (under `read = "roots"`) every root and the policy's `readable`.
    pub fn for_scope(scope: &Scope) -> SandboxRequest {
        let policy: &SandboxPolicy = scope.sandbox();
        let mut request = SandboxRequest {
            mode: policy.mode,
            network: policy.network,
            private_loopback: false,
            read: policy.read,
            readable: policy.readable.clone(),
            writable: policy.writable.clone(),
            read_only: Vec::new(),
            allow_unsandboxed: policy.allow_unsandboxed,
            nested_search_complete: true,
        };
        for root in scope.roots() {
            request.readable.push(root.path().to_owned());
            if root.access() == Access::ReadWrite {
                request.writable.push(root.path().to_owned());
                for protected in [".git", ".kyro"] {
                    let path = root.path().join(protected);
                    if path.symlink_metadata().is_ok() {
                        request.read_only.push(path);
                    }
                }
                let (nested, complete) = nested_git_dirs(root.path());
                request.read_only.extend(nested);
                request.nested_search_complete &= complete;
            }
        }
        request
    }

    /// git's own processes: write the repository (`dirs`: its work tree and git
    /// directories; none while it is being located) and nothing else, no network; reads as
    /// the policy says. git is kyro's own program, run with every setting that could name
    /// another program overridden: where the kernel cannot sandbox, it runs as before (the
    /// receipt says so).
    pub fn repository(scope: &Scope, dirs: &[PathBuf]) -> SandboxRequest {
        let policy = scope.sandbox();
        let mut readable = policy.readable.clone();
        readable.extend(scope.roots().iter().map(|r| r.path().to_owned()));
        SandboxRequest {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            private_loopback: false,
            read: policy.read,
            readable,
            writable: dirs.to_vec(),
            read_only: Vec::new(),
            allow_unsandboxed: true,
            nested_search_complete: true,
        }
    }
}

/// How deep below a root nested repositories' `.git` are looked for (a repository three
/// directories down is found), and how many directories are read at most looking (the
/// search costs a program start that much; past it, the receipt says the search stopped).
const NESTED_DEPTH: usize = 3;
const NESTED_DIRECTORIES: usize = 10_000;

/// The `.git` of repositories nested in `root` (submodules, vendored checkouts, hidden
/// directories included), down to [`NESTED_DEPTH`] levels, without following symlinks or
/// entering a `.git`; and whether the search read every directory it meant to.
fn nested_git_dirs(root: &Path) -> (Vec<PathBuf>, bool) {
    let mut found = Vec::new();
    let mut level = vec![root.to_owned()];
    let mut read = 0;
    // Level 0 reads the root's entries; a repository `NESTED_DEPTH` down is found reading
    // its parent, one level deeper.
    for depth in 0..=NESTED_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            if read == NESTED_DIRECTORIES {
                return (found, false);
            }
            read += 1;
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if name == ".git" {
                    if dir != root {
                        found.push(entry.path());
                    }
                } else if kind.is_dir() && depth < NESTED_DEPTH {
                    next.push(entry.path());
                }
            }
        }
        level = next;
    }
    (found, true)
}

/// Whether this kernel can enforce the sandbox: `Ok(landlock_abi)`, or why not. Checked
/// once. (`KYRO_SANDBOX_UNAVAILABLE=1` makes kyro act as on a kernel without Landlock, to
/// try the fallback.)
pub fn support() -> Result<i32, String> {
    static SUPPORT: OnceLock<Result<i32, String>> = OnceLock::new();
    SUPPORT
        .get_or_init(|| {
            if std::env::var_os("KYRO_SANDBOX_UNAVAILABLE").is_some_and(|v| !v.is_empty()) {
                return Err("KYRO_SANDBOX_UNAVAILABLE is set: acting as on a kernel without Landlock".into());
            }
            // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only returns the ABI.
            let abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
            if abi < 1 {
                return Err(format!(
                    "this kernel does not offer Landlock ({})",
                    std::io::Error::last_os_error()
                ));
            }
            if !mount_namespace_available() {
                return Err(
                    "this kernel does not let kyro make a mount namespace (as root or in a user namespace)".into(),
                );
            }
            Ok(abi as i32)
        })
        .clone()
}

fn mount_namespace_available() -> bool {
    use std::os::unix::process::CommandExt;
    let maps = IdMaps::current();
    probe(|command| {
        // SAFETY: the closure makes system calls only.
        unsafe {
            command.pre_exec(move || {
                if unshare(libc::CLONE_NEWNS, &maps) {
                    Ok(())
                } else {
                    Err(std::io::Error::other("no mount namespace"))
                }
            });
        }
    })
}

/// Whether a trivial program (`/bin/sh -c 'exit 0'`) starts and succeeds once `setup` has
/// prepared its command: how kyro learns what the kernel lets a child do before exec.
pub fn probe(setup: impl FnOnce(&mut std::process::Command)) -> bool {
    let mut probe = std::process::Command::new("/bin/sh");
    probe
        .args(["-c", "exit 0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    setup(&mut probe);
    probe.status().is_ok_and(|s| s.success())
}

/// The identity maps written when a user namespace is needed, prepared before the fork.
#[derive(Debug, Clone)]
pub struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    /// This process's user and group, each mapped to itself.
    pub fn current() -> IdMaps {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        IdMaps {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }
}

/// Makes new namespaces (`flags`: `CLONE_NEWNS`, `CLONE_NEWPID`, ...) for the calling
/// process: directly when it may (root), otherwise inside a new user namespace that maps
/// the user to itself.
///
/// # Safety
/// To be called in a forked child before exec: it makes system calls only (unshare, open,
/// write, close), which are async-signal-safe.
pub unsafe fn unshare(flags: libc::c_int, maps: &IdMaps) -> bool {
    // SAFETY: raw system calls on valid, NUL-terminated paths and owned buffers.
    unsafe {
        if libc::unshare(flags) == 0 {
            return true;
        }
        libc::unshare(libc::CLONE_NEWUSER | flags) == 0
            && write(c"/proc/self/setgroups", b"deny")
            && write(c"/proc/self/uid_map", &maps.uid)
            && write(c"/proc/self/gid_map", &maps.gid)
    }
}

/// Writes `bytes` to `path`, whole.
unsafe fn write(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: a valid path and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        written == bytes.len() as isize
    }
}

/// A sandbox prepared for one program: the restrictions its child applies, its private
/// temporary directory (removed when this is dropped) and what the receipt says of it.
#[derive(Debug)]
pub struct Sandbox {
    restrictions: Option<Arc<Restrictions>>,
    description: String,
    temp: Option<tempfile::TempDir>,
}

/// The sandbox could not be prepared: the kernel cannot enforce it and the policy does not
/// allow running without it, or a path could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SandboxUnavailable(pub String);

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
        use std::os::unix::process::CommandExt;
        let Some(child) = self.in_child(command) else {
            return;
        };
        if let Some(temp) = self.temp_dir() {
            command.env("TMPDIR", temp);
        }
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
}

/// A mount to make read-only: the path and the flags its mount already has (which a
/// remount in a user namespace must keep).
#[derive(Debug)]
struct ReadOnlyMount {
    path: CString,
    flags: libc::c_ulong,
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
            // The kernel's own call, so that the real-time signals the C library keeps
            // for itself (32, 33) are reset too: all zeros is SIG_DFL, no flags, an empty
            // mask, in every architecture's layout of the kernel's struct.
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
            Ok(())
        });
    }
}

/// What the child applies, prepared by the parent.
#[derive(Debug)]
struct Restrictions {
    ruleset: OwnedFd,
    seccomp: seccompiler::BpfProgram,
    read_only: Vec<ReadOnlyMount>,
    /// A network namespace of its own (network off, or a private loopback).
    own_network: bool,
    /// Its loopback brought up.
    loopback: bool,
    /// What a program may do beneath a `/proc` of its own (Landlock's read rights).
    proc_access: u64,
}

/// `/etc`'s entries but [`SECRETS`], read once.
fn etc_without_secrets() -> &'static [PathBuf] {
    static ETC: OnceLock<Vec<PathBuf>> = OnceLock::new();
    ETC.get_or_init(|| {
        let Ok(entries) = std::fs::read_dir("/etc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|entry| !SECRETS.iter().any(|secret| entry.file_name() == *secret))
            .map(|entry| entry.path())
            .collect()
    })
}

impl Restrictions {
    fn new(request: &SandboxRequest, abi: i32, temp: &Path) -> Result<Restrictions, SandboxUnavailable> {
        use landlock::{
            ABI, Access as _, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
            path_beneath_rules,
        };
        let fail = |what: &str, e: &dyn std::fmt::Display| SandboxUnavailable(format!("{what}: {e}"));
        let abi = match abi {
            1 => ABI::V1,
            2 => ABI::V2,
            3 => ABI::V3,
            4 => ABI::V4,
            5 => ABI::V5,
            _ => ABI::V6,
        };
        let existing = |paths: Vec<PathBuf>| paths.into_iter().filter(|p| p.exists()).collect::<Vec<_>>();
        let mut writable = vec![temp.to_owned()];
        if request.mode == SandboxMode::WorkspaceWrite {
            writable.extend(existing(request.writable.clone()));
        }
        let readable = match request.read {
            SandboxRead::Everywhere => vec![PathBuf::from("/")],
            SandboxRead::Roots => {
                let mut paths: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
                paths.extend(etc_without_secrets().iter().cloned());
                paths.extend(request.readable.iter().cloned());
                existing(paths)
            }
        };
        let devices = existing(DEVICES.iter().map(PathBuf::from).collect());
        // Everything beneath a writable path but making device nodes.
        let writes = AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        let rules = || -> Result<OwnedFd, landlock::RulesetError> {
            let mut ruleset = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::from_all(abi))?;
            if !request.network && abi >= ABI::V4 {
                ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
            }
            if abi >= ABI::V6 {
                let mut scopes = landlock::BitFlags::from(landlock::Scope::Signal);
                if !request.network {
                    scopes |= landlock::Scope::AbstractUnixSocket;
                }
                ruleset = ruleset.scope(scopes)?;
            }
            let created = ruleset
                .create()?
                .add_rules(path_beneath_rules(&readable, AccessFs::from_read(abi)))?
                .add_rules(path_beneath_rules(&writable, writes))?
                .add_rules(path_beneath_rules(&devices, AccessFs::from_file(abi)))?;
            Ok(Option::<OwnedFd>::from(created).expect("a created ruleset has a descriptor"))
        };
        let ruleset = rules().map_err(|e| fail("cannot prepare the Landlock ruleset", &e))?;
        let seccomp = filter::program(request.network).map_err(|e| fail("cannot prepare the seccomp filter", &e))?;
        let read_only = request
            .read_only
            .iter()
            .map(|path| read_only_mount(path).map_err(|e| fail(&format!("cannot protect `{}`", path.display()), &e)))
            .collect::<Result<_, _>>()?;
        Ok(Restrictions {
            ruleset,
            seccomp,
            read_only,
            own_network: !request.network || request.private_loopback,
            loopback: request.network && request.private_loopback,
            proc_access: AccessFs::from_read(abi).bits(),
        })
    }
}

fn read_only_mount(path: &Path) -> std::io::Result<ReadOnlyMount> {
    let path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: statvfs on a valid path into an owned struct.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if stat.f_flag & st != 0 {
            flags |= ms;
        }
    }
    Ok(ReadOnlyMount { path, flags })
}
