//! The ways out of the OS sandbox an adversarial run found, each tried by a hostile
//! program: typing into kyro's terminal, root's capabilities, device nodes, the host's name
//! and network, the kernel's privileged calls, `/dev`, `/etc/shadow`, nested repositories'
//! `.git`, unlimited resources. Each test also runs the attack where the rule does not apply
//! (no sandbox), where that shows the attack is real, so a test cannot pass because the
//! attack was broken.

use std::path::Path;
use std::sync::Arc;

use kyro_core::policy::{ApprovalRule, ApprovalRules, SandboxMode, SandboxPolicy, SandboxRead};
use kyro_core::{Call, Outcome, Policy, Registry, Runtime, Workspace};
use serde_json::{Value, json};

fn run(root: &Path, sandbox: SandboxPolicy, argv: &[&str]) -> Value {
    let policy = Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        sandbox,
        ..Policy::default()
    };
    let registry = Arc::new(Registry::with_catalog(kyro_tools::BUILTINS).unwrap());
    let runtime = Runtime::new(registry, Workspace::new(root).unwrap(), &policy).unwrap();
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(runtime.execute_call(Call::new("run_command", json!({ "argv": argv }))));
    match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    }
}

/// Runs a Python program in `root`; its result.
fn python(root: &Path, sandbox: SandboxPolicy, program: &str) -> Value {
    run(root, sandbox, &["python3", "-c", program])
}

fn sandboxed() -> SandboxPolicy {
    SandboxPolicy::default()
}

fn unsandboxed() -> SandboxPolicy {
    SandboxPolicy {
        mode: SandboxMode::Full,
        ..SandboxPolicy::default()
    }
}

fn stdout(result: &Value) -> &str {
    result["stdout"].as_str().unwrap()
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap()
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A system call by number through libc, printing `ok` or the errno's name.
const CALL: &str = r#"
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def call(name, number, *args):
    r = libc.syscall(number, *args)
    print(name, "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
"#;

#[test]
fn a_program_has_no_terminal_and_may_not_type_into_one() {
    let ws = tempfile::tempdir().unwrap();
    // Its own session (so `/dev/tty` is no terminal of kyro's), and TIOCSTI refused by the
    // filter itself: on a pipe the kernel would say ENOTTY, the filter says EPERM first.
    let program = "import os, fcntl, termios, errno\n\
        print('session', os.getsid(0) != int(os.environ['KYRO_TEST_SID']))\n\
        try:\n    os.open('/dev/tty', os.O_RDWR); print('tty opened')\n\
        except OSError as e: print('tty', errno.errorcode[e.errno])\n\
        try:\n    fcntl.ioctl(1, termios.TIOCSTI, b'x'); print('typed')\n\
        except OSError as e: print('tiocsti', errno.errorcode[e.errno])";
    // SAFETY: getsid(0) cannot fail.
    let sid = unsafe { libc::getsid(0) };
    // Session ids are as a PID namespace sees them: where the test's own session leader is
    // outside its namespace (a container's, CI's), getsid says 0 here and in the program's
    // namespace alike, and only the terminal's refusal below tells.
    let program = if sid == 0 {
        program.replace("os.getsid(0) != int(os.environ['KYRO_TEST_SID'])", "True")
    } else {
        program.replace("os.environ['KYRO_TEST_SID']", &sid.to_string())
    };
    let result = python(ws.path(), sandboxed(), &program);
    assert_eq!(stdout(&result), "session True\ntty ENXIO\ntiocsti EPERM\n", "{result}");
    // Without the sandbox the filter is gone (the session stays: every program gets one).
    let result = python(ws.path(), unsandboxed(), &program);
    assert_eq!(stdout(&result), "session True\ntty ENXIO\ntiocsti ENOTTY\n", "{result}");
}

#[test]
fn a_program_has_no_capabilities_even_as_root() {
    let ws = tempfile::tempdir().unwrap();
    let script = "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status";
    let result = run(ws.path(), sandboxed(), &["sh", "-c", script]);
    assert_eq!(
        stdout(&result),
        "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n\
         CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n",
        "{result}"
    );
    if is_root() {
        let result = run(ws.path(), unsandboxed(), &["sh", "-c", script]);
        assert!(!stdout(&result).contains("CapEff:\t0000000000000000"), "{result}");
    }
}

#[test]
fn a_program_makes_no_device_node_and_finds_only_its_own_dev() {
    let ws = tempfile::tempdir().unwrap();
    // /dev/kmsg's numbers: a node of it in the workspace would write the kernel log.
    let program = "import os, stat, errno\n\
        try:\n    os.mknod('kmsg', 0o600 | stat.S_IFCHR, os.makedev(1, 11)); print('made')\n\
        except OSError as e: print('mknod', errno.errorcode[e.errno])\n\
        os.mkfifo('fifo'); print('fifo made')\n\
        print(' '.join(sorted(os.listdir('/dev'))))";
    let result = python(ws.path(), sandboxed(), program);
    assert_eq!(
        stdout(&result),
        "mknod EPERM\nfifo made\nfd full null pts random shm stderr stdin stdout tty urandom zero\n",
        "{result}"
    );
    assert!(!ws.path().join("kmsg").exists());
    if is_root() {
        let ws = tempfile::tempdir().unwrap();
        let result = python(ws.path(), unsandboxed(), program);
        assert!(stdout(&result).starts_with("made\n"), "{result}");
        assert!(stdout(&result).contains("kmsg"), "the host's /dev: {result}");
    }
}

#[test]
fn the_host_name_and_network_are_not_the_programs_to_change() {
    let ws = tempfile::tempdir().unwrap();
    let host = host_name();
    let program = "import socket, errno\n\
        try:\n    socket.sethostname('pwned'); print('renamed')\n\
        except OSError as e: print('sethostname', errno.errorcode[e.errno])\n\
        print(' '.join(line.split(':')[0].strip() for line in open('/proc/net/dev').readlines()[2:]))";
    let result = python(ws.path(), sandboxed(), program);
    // Network off: a namespace of its own, holding a loopback only.
    assert_eq!(stdout(&result), "sethostname EPERM\nlo\n", "{result}");
    assert_eq!(host_name(), host);
    let on = SandboxPolicy {
        network: true,
        ..SandboxPolicy::default()
    };
    let result = python(ws.path(), on, program);
    assert!(stdout(&result).starts_with("sethostname EPERM\n"), "{result}");
    assert_eq!(host_name(), host);
}

#[test]
fn the_kernels_privileged_calls_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    // x86_64 numbers: bpf, perf_event_open, keyctl, add_key, kexec_load, swapon,
    // init_module, io_uring_setup. Each is refused by the filter before the kernel reads
    // its (null) arguments, which would fail otherwise with EFAULT or EINVAL.
    if std::env::consts::ARCH != "x86_64" {
        return;
    }
    let program = format!(
        "{CALL}\ncall('bpf', 321, 0, None, 0)\ncall('perf_event_open', 298, None, 0, -1, -1, 0)\n\
         call('keyctl', 250, 0, 0)\ncall('add_key', 248, None, None, None, 0, 0)\n\
         call('kexec_load', 246, 0, 0, None, 0)\ncall('swapon', 167, None, 0)\n\
         call('init_module', 175, None, 0, None)\ncall('io_uring_setup', 425, 1, None)"
    );
    let result = python(ws.path(), sandboxed(), &program);
    assert_eq!(
        stdout(&result),
        "bpf EPERM\nperf_event_open EPERM\nkeyctl EPERM\nadd_key EPERM\nkexec_load EPERM\nswapon EPERM\n\
         init_module EPERM\nio_uring_setup EPERM\n",
        "{result}"
    );
    let result = python(ws.path(), unsandboxed(), &program);
    assert!(
        stdout(&result).contains("bpf EFAULT") || stdout(&result).contains("bpf EINVAL"),
        "{result}"
    );
}

#[test]
fn reads_confined_to_the_roots_leave_out_password_hashes() {
    let ws = tempfile::tempdir().unwrap();
    let roots = SandboxPolicy {
        read: SandboxRead::Roots,
        ..SandboxPolicy::default()
    };
    // `/dev/shm` is the program's own, empty (or, here, not even listable), and `/proc`
    // shows the program's own processes only (the shell, `ls`, and the namespace's first
    // process, which waits for them): no command line of the host's.
    let script = "head -c 0 /etc/passwd && echo passwd; head -c 0 /etc/shadow && echo shadow; \
        ls -A /dev/shm 2>/dev/null | wc -l; ls /proc > p; grep -c '^[0-9]' p";
    let result = run(ws.path(), roots, &["sh", "-c", script]);
    assert_eq!(stdout(&result), "passwd\n0\n3\n", "{result}");
    // Reading everywhere (the default) reads `/etc/shadow` as root, but `/dev` and `/proc`
    // are the program's own there too.
    let result = run(ws.path(), sandboxed(), &["sh", "-c", script]);
    assert!(stdout(&result).ends_with("0\n3\n"), "{result}");
    if is_root() && Path::new("/etc/shadow").exists() {
        let result = run(ws.path(), unsandboxed(), &["sh", "-c", script]);
        assert!(stdout(&result).contains("shadow"), "{result}");
    }
}

#[test]
fn a_program_runs_under_resource_limits() {
    let ws = tempfile::tempdir().unwrap();
    let result = run(
        ws.path(),
        sandboxed(),
        &["bash", "-c", "ulimit -c; ulimit -H -n; ulimit -H -u; ulimit -H -d"],
    );
    let lines: Vec<&str> = stdout(&result).lines().collect();
    assert_eq!(lines[0], "0", "{result}");
    assert!(lines[1].parse::<u64>().is_ok_and(|n| n <= 4096), "{result}");
    assert!(lines[2].parse::<u64>().is_ok_and(|n| n <= 4096), "{result}");
    // KiB: 16 GiB of writable memory at most.
    assert!(lines[3].parse::<u64>().is_ok_and(|n| n <= 16 << 20), "{result}");
}

#[test]
fn nested_repositories_three_levels_down_and_in_hidden_directories_keep_git_read_only() {
    let ws = tempfile::tempdir().unwrap();
    for nested in ["a/b/c", ".hidden/repo"] {
        std::fs::create_dir_all(ws.path().join(nested).join(".git/hooks")).unwrap();
    }
    let script = "echo x > a/b/c/.git/hooks/post-checkout; echo y > .hidden/repo/.git/hooks/post-checkout; \
        echo z > a/b/c/made && echo wrote";
    let result = run(ws.path(), sandboxed(), &["sh", "-c", script]);
    assert_eq!(stdout(&result), "wrote\n", "{result}");
    assert!(!ws.path().join("a/b/c/.git/hooks/post-checkout").exists(), "{result}");
    assert!(
        !ws.path().join(".hidden/repo/.git/hooks/post-checkout").exists(),
        "{result}"
    );
}

#[test]
fn a_descriptor_kyro_inherited_does_not_reach_the_program() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("leaked");
    std::fs::write(&target, "").unwrap();
    let path = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).unwrap();
    // As a client that started kyro with a file open and no close-on-exec would leave it.
    // SAFETY: open on a valid path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_APPEND) };
    assert!(fd > 2);
    let script = format!("echo through >&{fd} && echo wrote");
    let result = run(ws.path(), sandboxed(), &["sh", "-c", &script]);
    assert_eq!(stdout(&result), "", "{result}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "", "{result}");
    // Unsandboxed, the descriptor is there: the sandbox is what closed it.
    let result = run(ws.path(), unsandboxed(), &["sh", "-c", &script]);
    assert_eq!(stdout(&result), "wrote\n", "{result}");
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
}

fn reads_in_roots() -> SandboxPolicy {
    SandboxPolicy {
        read: SandboxRead::Roots,
        ..SandboxPolicy::default()
    }
}

/// Landlock has no right for `connect` on a named Unix socket: under `read = "roots"` the
/// program's root holds only the roots and the system's directories, so a socket anywhere
/// else (a Docker or agent socket) is not there to connect to.
#[test]
fn under_read_roots_a_unix_socket_outside_the_roots_is_not_there() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let socket = outside.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let program = format!(
        "import socket, errno\n\
         s = socket.socket(socket.AF_UNIX)\n\
         try:\n    s.connect({:?}); print('connected')\n\
         except OSError as e: print('connect', errno.errorcode[e.errno])\n\
         import os\nprint(os.path.exists('/run'), os.getcwd() == {:?})",
        socket.display().to_string(),
        ws.path().canonicalize().unwrap().display().to_string()
    );
    // The system's Python: what a program finds in its root.
    let result = run(ws.path(), reads_in_roots(), &["/usr/bin/python3", "-c", &program]);
    assert!(stdout(&result).starts_with("connect ENOENT\n"), "{result}");
    assert!(
        stdout(&result).ends_with("False True\n"),
        "no /run, in its own directory: {result}"
    );
    // Reading everywhere (the README says sockets are reached where reads reach), the same
    // program connects: the attack is real.
    let result = python(ws.path(), sandboxed(), &program);
    assert!(stdout(&result).starts_with("connected\n"), "{result}");
    // And the programs a command runs still work there: the shell, the C library, Python.
    let result = run(
        ws.path(),
        reads_in_roots(),
        &[
            "sh",
            "-c",
            "echo hi > made && cat made && ls /etc/passwd && /usr/bin/python3 -c 'print(2+2)'",
        ],
    );
    assert_eq!(stdout(&result), "hi\n/etc/passwd\n4\n", "{result}");
}

/// A device node already beneath a writable path (an extracted root filesystem's) opens
/// nothing: writable paths are mounted `nodev` in the program's namespace, and so are the
/// read-only `.git` and `.kyro`, where read-only is no bar to a device's writes.
#[test]
fn an_existing_device_node_beneath_a_writable_path_opens_nothing() {
    if !is_root() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    for node in ["zero", ".git/zero"] {
        let path = std::ffi::CString::new(ws.path().join(node).as_os_str().as_encoded_bytes()).unwrap();
        // /dev/zero's numbers.
        // SAFETY: mknod on a valid path.
        let made = unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
        assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
    }
    let program = "import errno\n\
        for node in ['zero', '.git/zero']:\n    \
            try:\n        print(node, len(open(node, 'rb').read(4)))\n    \
            except OSError as e: print(node, errno.errorcode[e.errno])";
    let result = python(ws.path(), sandboxed(), program);
    assert_eq!(stdout(&result), "zero EACCES\n.git/zero EACCES\n", "{result}");
    let result = python(ws.path(), unsandboxed(), program);
    assert_eq!(stdout(&result), "zero 4\n.git/zero 4\n", "{result}");

    // Nor one anywhere else a program may read (a read-only root, a readable path, the
    // rest of the host under the default `read = "everywhere"`): only its private /dev's.
    let outside = tempfile::tempdir().unwrap();
    let node = outside.path().join("zero");
    let path = std::ffi::CString::new(node.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod on a valid path.
    assert_eq!(
        unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) },
        0
    );
    let program = format!(
        "import errno\n\
         for node in [{:?}, '/dev/zero']:\n    \
             try:\n        print(len(open(node, 'rb').read(4)))\n    \
             except OSError as e: print(errno.errorcode[e.errno])",
        node.display().to_string()
    );
    let readable = SandboxPolicy {
        readable: vec![outside.path().to_owned()],
        ..reads_in_roots()
    };
    for policy in [sandboxed(), readable] {
        let result = run(ws.path(), policy, &["/usr/bin/python3", "-c", &program]);
        assert_eq!(stdout(&result), "EACCES\n4\n", "{result}");
    }
    let result = run(ws.path(), unsandboxed(), &["/usr/bin/python3", "-c", &program]);
    assert_eq!(stdout(&result), "4\n4\n", "{result}");
}

/// A program makes no user namespace (inside one it would hold every capability): unshare
/// and clone with `CLONE_NEWUSER` are refused, `clone3` (whose flags seccomp cannot read)
/// is `ENOSYS`, an x32 system call (which no exact rule matches) is refused, and processes
/// and threads are still made through `clone`.
#[test]
fn a_program_makes_no_user_namespace() {
    if std::env::consts::ARCH != "x86_64" {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let program = format!(
        "{CALL}\ncall('unshare', 272, 0x10000000)\ncall('clone3', 435, None, 0)\n\
         call('x32_unshare', 0x40000000 + 272, 0x10000000)\n\
         import subprocess, threading\n\
         t = threading.Thread(target=lambda: None); t.start(); t.join()\n\
         print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())"
    );
    let result = python(ws.path(), sandboxed(), &program);
    assert_eq!(
        stdout(&result),
        "unshare EPERM\nclone3 ENOSYS\nx32_unshare EPERM\nchild\n",
        "{result}"
    );
    // Unsandboxed the calls reach the kernel (which, as root, makes the namespace).
    let result = python(ws.path(), unsandboxed(), &program);
    assert!(!stdout(&result).contains("clone3 ENOSYS"), "{result}");
    // An x32 number (bit 30) passed every exact rule before: the kernel answers it itself.
    assert!(!stdout(&result).contains("x32_unshare EPERM"), "{result}");
    if is_root() {
        assert!(stdout(&result).starts_with("unshare ok\n"), "{result}");
    }
}
