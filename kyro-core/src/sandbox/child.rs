//! The restrictions as the forked child applies them, between fork and exec: only system
//! calls (async-signal-safe) on what the parent prepared.

use std::os::fd::AsRawFd;
use std::sync::Arc;

use super::linux::Restrictions;

/// What the forked child applies, prepared by the parent.
#[derive(Debug, Clone)]
pub struct InChild(pub(super) Arc<Restrictions>);

impl InChild {
    /// The namespaces to make (with [`super::unshare`]) before [`InChild::mount`]: always
    /// a mount namespace (nothing propagates back) and a UTS namespace (the host's name
    /// stays the host's), and a network namespace of its own unless the program shares
    /// the host's network.
    pub fn namespaces(&self) -> libc::c_int {
        let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWUTS;
        if self.0.own_network {
            flags |= libc::CLONE_NEWNET;
        }
        flags
    }

    /// In the new namespaces: mounts stop propagating; under `read = "roots"` the program's
    /// root becomes a tmpfs showing only what it may read (the parent prepared it); every
    /// mount is made `nodev`; `.git` and `.kyro` are bound read-only over themselves; `/dev`
    /// is private (its devices open); and a private network's loopback is brought up when
    /// the program is to reach what listens inside it.
    ///
    /// # Safety
    /// In a forked child, after [`super::unshare`] made [`InChild::namespaces`]; system
    /// calls only.
    pub unsafe fn mount(&self) -> bool {
        let none = std::ptr::null();
        // SAFETY: mount(2) on NUL-terminated paths prepared by the parent.
        unsafe {
            // The working directory is entered again once the mounts are made: as it is,
            // it names the directory beneath them (a writable root bound over itself).
            let mut cwd = [0u8; 4096];
            if libc::syscall(libc::SYS_getcwd, cwd.as_mut_ptr(), cwd.len()) < 0 {
                return false;
            }
            if libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return false;
            }
            if let Some(root) = &self.0.new_root
                && !enter_new_root(root)
            {
                return false;
            }
            // No device node opens anywhere but the private `/dev` (a node in a read-only
            // root or a readable path would read a disk too): every mount `nodev`, at once;
            // a kernel without mount_setattr (before 5.12) gets the writable paths'.
            let everywhere = set_mount_attributes(c"/", MOUNT_ATTR_NODEV, 0, true);
            if !everywhere && *libc::__errno_location() != libc::ENOSYS {
                return false;
            }
            let no_devices = if everywhere { &[][..] } else { &self.0.no_devices[..] };
            for mount in no_devices.iter().chain(&self.0.read_only) {
                let path = mount.path.as_ptr();
                if libc::mount(path, path, none, libc::MS_BIND | libc::MS_REC, std::ptr::null()) != 0
                    || libc::mount(none, path, none, mount.flags, std::ptr::null()) != 0
                {
                    return false;
                }
            }
            private_dev(everywhere) && (!self.0.loopback || loopback_up()) && libc::chdir(cwd.as_ptr().cast()) == 0
        }
    }

    /// In a new PID namespace, as its first process's child: a `/proc` of that namespace
    /// over the host's, so the program sees its own processes only (not the host's
    /// command lines). Best effort: where the kernel refuses (a container's masked
    /// `/proc`), the host's stays.
    ///
    /// # Safety
    /// In a forked child inside the namespace, before [`InChild::restrict`]; system calls
    /// only.
    pub unsafe fn mount_proc(&self) {
        // SAFETY: mount(2) on static NUL-terminated strings; open, landlock_add_rule and
        // close on an owned descriptor and a struct on the stack.
        unsafe {
            if libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) != 0
            {
                return;
            }
            // The new `/proc` is readable as the host's was: Landlock's rules name the
            // host's, and this program's ruleset is its own to add to.
            let proc = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if proc >= 0 {
                let rule = PathBeneath {
                    allowed_access: self.0.proc_access,
                    parent_fd: proc,
                };
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    self.0.ruleset.as_raw_fd(),
                    LANDLOCK_RULE_PATH_BENEATH,
                    &rule as *const PathBeneath,
                    0u32,
                );
                libc::close(proc);
            }
        }
    }

    /// No descriptor but stdio kept across exec, no capabilities (bounding, ambient,
    /// effective, permitted and inheritable sets emptied, root given none back at exec),
    /// resource limits, no new privileges, then the Landlock ruleset and the seccomp
    /// filter, for this process and everything it starts; none can be lifted. The session
    /// of its own (no controlling terminal) was made by [`super::Sandbox::in_child`].
    ///
    /// # Safety
    /// In a forked child, just before exec; system calls only.
    pub unsafe fn restrict(&self) -> bool {
        // SAFETY: prctl, setrlimit, capset and landlock_restrict_self on values and a
        // descriptor the parent keeps open; apply_filter makes the seccomp system call on
        // a prepared program.
        unsafe {
            // No descriptor but stdio survives exec: one kyro inherited without
            // close-on-exec (a file, a terminal, a socket its client left open) would let the
            // program write past every rule, which Landlock checks at open only.
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) == 0
                && limit_resources()
                && drop_capabilities()
                && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                && libc::syscall(libc::SYS_landlock_restrict_self, self.0.ruleset.as_raw_fd(), 0u32) == 0
                && seccompiler::apply_filter(&self.0.seccomp).is_ok()
                && seccompiler::apply_filter(&self.0.no_clone3).is_ok()
        }
    }
}

/// Mounts a tmpfs on the new root's directory, makes its directories, files and links,
/// binds the host's paths into it, and makes it `/` (`pivot_root`), the old root
/// detached ([`InChild::mount`] enters the working directory again, at its path in the
/// new root).
///
/// # Safety
/// In a forked child, in a mount namespace of its own; system calls only.
unsafe fn enter_new_root(root: &super::linux::NewRoot) -> bool {
    let none = std::ptr::null();
    // SAFETY: mount, mkdir, open, close, symlink, chdir, pivot_root and umount2 on
    // NUL-terminated paths the parent prepared.
    unsafe {
        if libc::mount(
            c"tmpfs".as_ptr(),
            root.dir_c.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0755,size=64k".as_ptr().cast(),
        ) != 0
        {
            return false;
        }
        for dir in &root.dirs {
            if libc::mkdir(dir.as_ptr(), 0o755) != 0 && *libc::__errno_location() != libc::EEXIST {
                return false;
            }
        }
        for file in &root.files {
            let fd = libc::open(file.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o644);
            if fd < 0 {
                return false;
            }
            libc::close(fd);
        }
        for (target, link) in &root.links {
            if libc::symlink(target.as_ptr(), link.as_ptr()) != 0 && *libc::__errno_location() != libc::EEXIST {
                return false;
            }
        }
        for (host, place) in &root.binds {
            if libc::mount(
                host.as_ptr(),
                place.as_ptr(),
                none,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ) != 0
            {
                return false;
            }
        }
        libc::chdir(root.dir_c.as_ptr()) == 0
            && libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) == 0
            && libc::umount2(c".".as_ptr(), libc::MNT_DETACH) == 0
            && libc::chdir(c"/".as_ptr()) == 0
    }
}

/// The limits every sandboxed program runs under: no core files (a crash does not write
/// the program's memory into the workspace), at most [`OPEN_FILES`] descriptors, at most
/// [`PROCESSES`] processes of its user (the kernel exempts root: there the PID namespace
/// and the time limit bound it), files of at most [`FILE_SIZE`] bytes, at most [`MEMORY`]
/// bytes of writable memory each (heap and private mappings: address space merely
/// reserved, as V8's and the JVM's, does not count). Each only lowers.
const OPEN_FILES: u64 = 4096;
const PROCESSES: u64 = 4096;
const FILE_SIZE: u64 = 16 << 30;
const MEMORY: u64 = 16 << 30;

unsafe fn limit_resources() -> bool {
    // SAFETY: getrlimit/setrlimit on owned structs.
    unsafe {
        [
            (libc::RLIMIT_CORE, 0),
            (libc::RLIMIT_NOFILE, OPEN_FILES),
            (libc::RLIMIT_NPROC, PROCESSES),
            (libc::RLIMIT_FSIZE, FILE_SIZE),
            (libc::RLIMIT_DATA, MEMORY),
        ]
        .into_iter()
        .all(|(resource, most)| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(resource, &mut limit) != 0 {
                return false;
            }
            limit.rlim_max = limit.rlim_max.min(most);
            limit.rlim_cur = limit.rlim_cur.min(limit.rlim_max);
            libc::setrlimit(resource, &limit) == 0
        })
    }
}

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// `struct __user_cap_header_struct` of `<linux/capability.h>`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`, two of which (64 capabilities) version 3 takes.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Empties every capability set, for good: root's exec-time grant is switched off and
/// locked (securebits), the bounding set (which caps what any exec may grant) is emptied,
/// ambient capabilities cleared, then the process's own sets. The securebits and bounding
/// set need `CAP_SETPCAP`, which root (or the user namespace's owner) has until the end.
unsafe fn drop_capabilities() -> bool {
    const SECBITS: libc::c_int = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED;
    // SAFETY: prctl and capset on owned structs.
    unsafe {
        if libc::prctl(libc::PR_SET_SECUREBITS, SECBITS as libc::c_ulong, 0, 0, 0) != 0 {
            return false;
        }
        for capability in 0..64 {
            // Past the kernel's last capability this fails with EINVAL: nothing to drop.
            if libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) != 0
                && *libc::__errno_location() != libc::EINVAL
            {
                return false;
            }
        }
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return false;
        }
        let mut header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) == 0
    }
}

/// `struct ifreq` as `SIOCSIFFLAGS` reads it: the interface's name and its flags.
#[repr(C)]
struct InterfaceFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// Brings up `lo` in the (new) network namespace.
unsafe fn loopback_up() -> bool {
    // SAFETY: socket, ioctl and close on an owned descriptor and struct.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return false;
        }
        let mut request = InterfaceFlags {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short,
            _rest: [0; 22],
        };
        request.name[..2].copy_from_slice(b"lo");
        let done = libc::ioctl(socket, libc::SIOCSIFFLAGS, &mut request) == 0;
        libc::close(socket);
        done
    }
}

/// The devices a program finds in its private `/dev`, bound from the host's.
const DEVICES: [&std::ffi::CStr; 6] = [
    c"/dev/null",
    c"/dev/zero",
    c"/dev/full",
    c"/dev/random",
    c"/dev/urandom",
    c"/dev/tty",
];

/// `struct mount_attr` of `<linux/mount.h>`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Sets (`set`) and clears (`clear`) mount attributes of the mount at `path` (and every
/// mount beneath it when `recursive`); the other attributes stay as they are.
unsafe fn set_mount_attributes(path: &std::ffi::CStr, set: u64, clear: u64, recursive: bool) -> bool {
    let attributes = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr on a NUL-terminated path and a struct on the stack.
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            if recursive { AT_RECURSIVE } else { 0 },
            &attributes as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) == 0
    }
}

/// Replaces `/dev` with a private one: a fresh tmpfs holding only [`DEVICES`] (bound from
/// the host's, and allowed devices again when every mount was made `nodev`), `fd`,
/// `stdin`, `stdout`, `stderr` and empty `shm` and `pts`. No other terminal, console, disk
/// or kernel device is there to open.
unsafe fn private_dev(nodev_everywhere: bool) -> bool {
    // SAFETY: open, mount, mkdir, symlink and close on NUL-terminated paths and owned
    // descriptors.
    unsafe {
        let mut sources = [-1; DEVICES.len()];
        for (source, device) in sources.iter_mut().zip(DEVICES) {
            *source = libc::open(device.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        }
        let mut done = libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"mode=0755,size=64k".as_ptr().cast(),
        ) == 0;
        for (source, device) in sources.into_iter().zip(DEVICES) {
            if source < 0 {
                continue;
            }
            if done {
                let target = libc::open(device.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o666);
                let mut path = [0u8; 32];
                done = target >= 0
                    && libc::close(target) == 0
                    && libc::mount(
                        fd_path(&mut path, source),
                        device.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND,
                        std::ptr::null(),
                    ) == 0
                    && (!nodev_everywhere || set_mount_attributes(device, 0, MOUNT_ATTR_NODEV, false));
            }
            libc::close(source);
        }
        done && libc::mkdir(c"/dev/shm".as_ptr(), 0o1777) == 0
            && libc::mkdir(c"/dev/pts".as_ptr(), 0o755) == 0
            && [
                (c"/proc/self/fd", c"/dev/fd"),
                (c"/proc/self/fd/0", c"/dev/stdin"),
                (c"/proc/self/fd/1", c"/dev/stdout"),
                (c"/proc/self/fd/2", c"/dev/stderr"),
            ]
            .into_iter()
            .all(|(to, link)| libc::symlink(to.as_ptr(), link.as_ptr()) == 0)
    }
}

/// Writes `/proc/self/fd/<fd>` into `buffer`, NUL-terminated, without allocating.
fn fd_path(buffer: &mut [u8; 32], fd: libc::c_int) -> *const libc::c_char {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buffer[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = fd.unsigned_abs();
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for (i, digit) in digits[..count].iter().rev().enumerate() {
        buffer[PREFIX.len() + i] = *digit;
    }
    buffer[PREFIX.len() + count] = 0;
    buffer.as_ptr().cast()
}
