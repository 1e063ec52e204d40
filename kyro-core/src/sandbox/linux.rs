//! The kernel's part of the sandbox, on Linux: what the kernel offers, the identity maps of
//! a user namespace, and the restrictions prepared in kyro's process for the child.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::filter;
use super::request::{SandboxRequest, SandboxUnavailable};
use crate::policy::{SandboxMode, SandboxRead};

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

/// A path bound over itself and remounted with `flags` (read-only, no device nodes)
/// besides those its mount already has (which a remount in a user namespace must keep).
#[derive(Debug)]
pub(super) struct Remount {
    pub(super) path: CString,
    pub(super) flags: libc::c_ulong,
}

/// Under `read = "roots"`, the program's root directory: a fresh tmpfs holding only the
/// system's directories, the roots and the sandbox's paths (bound from the host's at the
/// same paths), so nothing else (a Docker or agent socket in `/run`, a socket in a folder
/// outside the roots, which Landlock cannot keep a program from connecting to) is there
/// to reach.
#[derive(Debug)]
pub(super) struct NewRoot {
    /// Where the tmpfs is mounted before it becomes `/` (an empty directory of kyro's,
    /// removed with the sandbox).
    _dir: tempfile::TempDir,
    pub(super) dir_c: CString,
    /// Directories to make in the tmpfs, parents first.
    pub(super) dirs: Vec<CString>,
    /// Empty files to make in the tmpfs, where a file is bound.
    pub(super) files: Vec<CString>,
    /// Symbolic links to make in the tmpfs: (what it points to, where it is).
    pub(super) links: Vec<(CString, CString)>,
    /// (host path, its place in the tmpfs), parents first.
    pub(super) binds: Vec<(CString, CString)>,
}

/// The paths a program under `read = "roots"` finds: each of `paths` that exists, bound
/// from the host's at its real path (a symbolic link such as `/bin -> usr/bin` is made as
/// a link too, beside its target's bind).
fn new_root(paths: &[PathBuf]) -> std::io::Result<NewRoot> {
    let dir = tempfile::Builder::new().prefix("kyro-root-").tempdir()?;
    let inside = |path: &Path| dir.path().join(path.strip_prefix("/").unwrap_or(path));
    let c = |path: &Path| CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let mut bound: Vec<(PathBuf, bool)> = Vec::new();
    let mut links = Vec::new();
    for path in paths {
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        let Ok(real) = path.canonicalize() else {
            continue;
        };
        if meta.file_type().is_symlink()
            && let (Ok(target), Some(parent)) = (std::fs::read_link(path), path.parent())
            && parent.canonicalize().is_ok_and(|p| p == parent)
        {
            links.push((c(&target)?, c(&inside(path))?));
        }
        let is_dir = real.is_dir();
        if !bound.iter().any(|(b, _)| *b == real) {
            bound.push((real, is_dir));
        }
    }
    bound.sort_by_key(|(path, _)| path.components().count());
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut files = Vec::new();
    for (path, is_dir) in &bound {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).filter(|a| *a != Path::new("/")).collect();
        ancestors.reverse();
        for ancestor in ancestors {
            if !dirs.iter().any(|d| d == ancestor) {
                dirs.push(ancestor.to_owned());
            }
        }
        if *is_dir {
            if !dirs.iter().any(|d| d == path) {
                dirs.push(path.clone());
            }
        } else {
            files.push(c(&inside(path))?);
        }
    }
    Ok(NewRoot {
        dir_c: c(dir.path())?,
        dirs: dirs.iter().map(|d| c(&inside(d))).collect::<Result<_, _>>()?,
        files,
        links,
        binds: bound
            .iter()
            .map(|(path, _)| Ok((c(path)?, c(&inside(path))?)))
            .collect::<std::io::Result<_>>()?,
        _dir: dir,
    })
}

/// What the child applies, prepared by the parent.
#[derive(Debug)]
pub(super) struct Restrictions {
    pub(super) ruleset: OwnedFd,
    pub(super) seccomp: seccompiler::BpfProgram,
    /// Refuses `clone3` and x32 system calls ([`filter::no_clone3_nor_x32`]).
    pub(super) no_clone3: seccompiler::BpfProgram,
    /// Under `read = "roots"`, the root the program gets.
    pub(super) new_root: Option<NewRoot>,
    /// Writable paths, made `nodev`: a device node already there (an extracted root
    /// filesystem's) opens nothing.
    pub(super) no_devices: Vec<Remount>,
    pub(super) read_only: Vec<Remount>,
    /// A network namespace of its own (network off, or a private loopback).
    pub(super) own_network: bool,
    /// Its loopback brought up.
    pub(super) loopback: bool,
    /// What a program may do beneath a `/proc` of its own (Landlock's read rights).
    pub(super) proc_access: u64,
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
    pub(super) fn new(request: &SandboxRequest, abi: i32, temp: &Path) -> Result<Restrictions, SandboxUnavailable> {
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
                // Abstract Unix sockets made outside are out of reach with the network on
                // too (in the host's network namespace, where D-Bus's and X11's are).
                ruleset = ruleset.scope(landlock::Scope::Signal | landlock::Scope::AbstractUnixSocket)?;
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
        let no_clone3 = filter::no_clone3_nor_x32().map_err(|e| fail("cannot prepare the seccomp filter", &e))?;
        let remounts = |paths: &[PathBuf], flags: libc::c_ulong| {
            paths
                .iter()
                .map(|path| remount(path, flags).map_err(|e| fail(&format!("cannot protect `{}`", path.display()), &e)))
                .collect::<Result<Vec<_>, _>>()
        };
        // Read-only is no bar to a device node (its writes go to the device): no devices
        // there either.
        let read_only = remounts(&request.read_only, libc::MS_RDONLY | libc::MS_NODEV)?;
        let no_devices = remounts(&writable, libc::MS_NODEV)?;
        let new_root = match request.read {
            SandboxRead::Everywhere => None,
            SandboxRead::Roots => {
                let mut shown: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
                shown.extend(["/etc", "/dev"].map(PathBuf::from));
                shown.extend(request.readable.iter().cloned());
                shown.extend(writable.iter().cloned());
                Some(new_root(&shown).map_err(|e| fail("cannot prepare the program's root", &e))?)
            }
        };
        Ok(Restrictions {
            ruleset,
            seccomp,
            no_clone3,
            new_root,
            no_devices,
            read_only,
            own_network: !request.network || request.private_loopback,
            loopback: request.network && request.private_loopback,
            proc_access: AccessFs::from_read(abi).bits(),
        })
    }
}

fn remount(path: &Path, extra: libc::c_ulong) -> std::io::Result<Remount> {
    let path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: statvfs on a valid path into an owned struct.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut flags = libc::MS_BIND | libc::MS_REMOUNT | extra;
    for (st, ms) in [
        (libc::ST_RDONLY, libc::MS_RDONLY),
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
    Ok(Remount { path, flags })
}
