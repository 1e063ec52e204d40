//! Every process a call starts ends with it: the program runs in a PID namespace of its
//! own, whose init (forked from the spawned child, before exec) exits when the program
//! does, and the kernel then kills everything left in the namespace: background children,
//! `setsid` daemons, a grandchild holding stdout.
//!
//! The spawned child stays outside as the supervisor kyro waits for and signals: it ends
//! as the program ended, ignores SIGTERM sent to the group (the program gets it and
//! decides), and dies with the kyro thread that started it (`PR_SET_PDEATHSIG`), taking
//! the init and so the namespace with it. As root the namespace
//! needs no privilege; otherwise it is made inside a user namespace mapping the user to
//! itself. Where the kernel allows neither, the program runs in its process group only,
//! and [`contain`] says so.

use std::os::unix::process::CommandExt;

use kyro_core::sandbox::{IdMaps, InChild, Sandbox, probe, unshare};

/// Whether this kernel lets kyro give a program a PID namespace (checked once).
pub(crate) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| probe(|command| enter_before_exec(command, None)))
}

/// Makes `command` run its program in a session of its own (no controlling terminal; the
/// group kyro signals), in a PID namespace of its own under a supervisor when the kernel
/// allows it, and under `sandbox`; returns whether the PID namespace is made.
pub(crate) fn contain(command: &mut std::process::Command, sandbox: &Sandbox) -> bool {
    if !available() {
        sandbox.apply(command);
        return false;
    }
    let in_child = sandbox.in_child(command);
    enter_before_exec(command, in_child);
    true
}

/// Has the spawned child [`enter`] its namespace before it execs; the spawn fails if it
/// cannot.
fn enter_before_exec(command: &mut std::process::Command, sandbox: Option<InChild>) {
    let maps = IdMaps::current();
    // SAFETY: the closure calls only async-signal-safe functions (see `enter`).
    unsafe {
        command.pre_exec(move || {
            if enter(&maps, sandbox.as_ref()) {
                Ok(())
            } else {
                Err(std::io::Error::other("cannot make a PID namespace"))
            }
        });
    }
}

/// In the freshly forked child: a new PID namespace (and the sandbox's mount namespace,
/// with its read-only mounts), then two forks. The spawned child becomes the outer
/// supervisor (what kyro waits for and signals), its child the namespace's init (PID 1),
/// and the init's child restricts itself to the sandbox, returns `true` and goes on to
/// exec the program as PID 2, an ordinary process that SIGTERM can end.
///
/// Only async-signal-safe calls (unshare, open, write, read, close, pipe, fork, prctl,
/// signal, waitpid, kill, _exit): this runs between fork and exec in a multi-threaded
/// process.
fn enter(maps: &IdMaps, sandbox: Option<&InChild>) -> bool {
    // SAFETY: raw system calls on valid, NUL-terminated paths and owned buffers.
    unsafe {
        let flags = libc::CLONE_NEWPID | sandbox.map_or(0, InChild::namespaces);
        if !unshare(flags, maps) || sandbox.is_some_and(|s| !s.mount()) {
            return false;
        }
        // The init tells the outer supervisor how the program ended.
        let mut status_pipe = [0; 2];
        if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return false;
        }
        let [read_end, write_end] = status_pipe;
        match libc::fork() {
            -1 => false,
            0 => {
                // PID 1: dies with the outer supervisor, and takes the namespace with it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                match libc::fork() {
                    -1 => libc::_exit(127),
                    0 => sandbox.is_none_or(|s| {
                        s.mount_proc();
                        s.restrict()
                    }),
                    program => init(program, write_end),
                }
            }
            init_pid => outer(init_pid, read_end),
        }
    }
}

/// Closes every descriptor but `keep` (stdio and std's exec-error pipe included, which
/// spawn() reads to its end).
unsafe fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range on descriptor numbers; `keep` stays open.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
    }
}

/// The namespace's init: reaps every orphan, and when the program ends reports its wait
/// status and exits, which makes the kernel kill whatever is left in the namespace.
unsafe fn init(program: libc::pid_t, report: libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls only; see `enter`.
    unsafe {
        close_all_but(report);
        let mut status = 0;
        loop {
            let reaped = libc::waitpid(-1, &mut status, 0);
            if reaped == program {
                let bytes = status.to_ne_bytes();
                libc::write(report, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
            if reaped == -1 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
    }
}

/// The outer supervisor: waits for the init's report and ends as the program ended (its
/// exit code, or its signal). It ignores SIGTERM and friends sent to the group (the
/// program gets them and decides), and dies with the kyro thread that started it.
unsafe fn outer(init_pid: libc::pid_t, report: libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls only; see `enter`.
    unsafe {
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        close_all_but(report);
        let mut bytes = [0u8; 4];
        let mut got = 0;
        while got < bytes.len() {
            let n = libc::read(report, bytes[got..].as_mut_ptr().cast(), bytes.len() - got);
            if n > 0 {
                got += n as usize;
            } else if n == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        let mut init_status = 0;
        while libc::waitpid(init_pid, &mut init_status, 0) == -1 && *libc::__errno_location() == libc::EINTR {}
        // No report: the init was killed (SIGKILL to the group), and so was the program.
        let status = if got == bytes.len() {
            i32::from_ne_bytes(bytes)
        } else {
            libc::SIGKILL
        };
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        let mut unblock: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut unblock);
        libc::sigaddset(&mut unblock, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}
