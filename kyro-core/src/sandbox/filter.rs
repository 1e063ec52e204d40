//! The seccomp filter every sandboxed program runs under: what Landlock and the dropped
//! capabilities leave reachable of the kernel's privileged or shared surface is refused
//! with `EPERM`, new user namespaces too (inside one a program holds every capability, the
//! usual way to the kernel's nf_tables and mount bugs), and with the network off, every
//! socket but a Unix one. `clone3`, whose flags seccomp cannot read, fails with `ENOSYS`
//! (a second filter), which the C library takes to mean "use `clone`".

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// System calls refused outright, whatever their arguments: kernel keyrings, BPF,
/// performance counters, modules, kexec, swap, host and domain names, the kernel log,
/// reboot, process accounting, file handles (which open by inode, past every path rule),
/// and io_uring (whose operations seccomp never sees).
const REFUSED: &[libc::c_long] = &[
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_syslog,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_open_by_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Terminal ioctls that act on another principal: typing into a terminal (`TIOCSTI`) and
/// the virtual console's selection and keyboard (`TIOCLINUX`). Compared on the low 32
/// bits, as the kernel reads the request.
#[allow(clippy::unnecessary_cast, reason = "the request's type is c_int on some targets")]
const REFUSED_IOCTLS: &[u64] = &[libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// The filter for a program with the network `on` or off.
pub(super) fn program(network: bool) -> Result<BpfProgram, BackendError> {
    let arg =
        |index: u8, op: SeccompCmpOp, value: u64| SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value);
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&call| (call, Vec::new())).collect();
    rules.insert(
        libc::SYS_ioctl,
        REFUSED_IOCTLS
            .iter()
            .map(|&request| SeccompRule::new(vec![arg(1, SeccompCmpOp::Eq, request)?]))
            .collect::<Result<_, _>>()?,
    );
    // Device nodes: a character or block special file, by the mode's type bits.
    let devices = |mode_arg: u8| -> Result<Vec<SeccompRule>, BackendError> {
        [libc::S_IFCHR, libc::S_IFBLK]
            .into_iter()
            .map(|kind| {
                SeccompRule::new(vec![arg(
                    mode_arg,
                    SeccompCmpOp::MaskedEq(libc::S_IFMT as u64),
                    kind as u64,
                )?])
            })
            .collect()
    };
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, devices(1)?);
    rules.insert(libc::SYS_mknodat, devices(2)?);
    // New user namespaces, by their flag, in unshare and clone (flags are the first
    // argument of both on every architecture kyro builds for).
    let new_user = || {
        SeccompRule::new(vec![arg(
            0,
            SeccompCmpOp::MaskedEq(libc::CLONE_NEWUSER as u64),
            libc::CLONE_NEWUSER as u64,
        )?])
    };
    rules.insert(libc::SYS_unshare, vec![new_user()?]);
    rules.insert(libc::SYS_clone, vec![new_user()?]);
    if !network {
        let not_unix = SeccompRule::new(vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?;
        rules.insert(libc::SYS_socket, vec![not_unix]);
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    filter.try_into()
}

/// The filter refusing `clone3` with `ENOSYS`: its flags are in memory seccomp cannot read,
/// so a new user namespace could pass through it; the C library then uses `clone`, which
/// [`program`] checks.
///
/// On x86_64 it first refuses every x32 system call (a number with bit 30 set, under the
/// same audit architecture): the rules above compare numbers exactly, so an x32 number
/// (where the kernel offers that ABI) would pass every one of them.
pub(super) fn no_clone3_nor_x32() -> Result<BpfProgram, BackendError> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
    let clone3: BpfProgram = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?
    .try_into()?;
    let mut program = no_x32();
    program.extend(clone3);
    Ok(program)
}

/// The instructions refusing x32 system calls with `EPERM`, falling through to what
/// follows for every other call (none off x86_64).
fn no_x32() -> BpfProgram {
    if !cfg!(target_arch = "x86_64") {
        return Vec::new();
    }
    const LOAD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JUMP_IF_AT_LEAST: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let at = |code, jt, jf, k| seccompiler::sock_filter { code, jt, jf, k };
    vec![
        // struct seccomp_data: nr at 0, arch at 4.
        at(LOAD, 0, 0, 4),
        at(JUMP_IF_EQUAL, 0, 3, AUDIT_ARCH_X86_64),
        at(LOAD, 0, 0, 0),
        at(JUMP_IF_AT_LEAST, 0, 1, X32_SYSCALL_BIT),
        at(RETURN, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
    ]
}
