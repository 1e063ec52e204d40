//! Chromium as a program like any other: under kyro's OS sandbox (its profile and its
//! temporary directory writable, nothing else; no capabilities; no terminal) and in a
//! network namespace of its own, as root or not.
//!
//! There its DevTools port and kyro's request proxy listen on a loopback no other process
//! shares: a sandboxed command with the network on, or another local user, finds no port
//! to drive the browser through (before, an unauthenticated DevTools port on the host's
//! loopback let either read and write any file as kyro's user). Chromium reaches nothing
//! but the proxy, whose connections out kyro makes from the host's network after the
//! policy's checks.
//!
//! kyro reaches inside through sockets made there: between fork and exec, inside the new
//! namespace, Chromium's process makes the proxy's listening socket and [`SOCKETS`]
//! unconnected ones and hands them to kyro over a Unix socket pair ([`Handoff`]); a socket
//! keeps the namespace it was made in for its whole life. Each page's own DevTools
//! connection takes one of them. `headless_chrome` dials a `ws://` address itself, so it
//! dials a relay on the host's loopback ([`Relay`]) that carries the bytes over one of the
//! sockets made inside. The relay serves a WebSocket upgrade to `/devtools/...` under a
//! random path secret only kyro holds, from a socket of kyro's own process, and nothing
//! else (no `/json` endpoints): kyro's own HTTP tools, whose sockets are kyro's too, do
//! not know the secret.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::{Arc, Mutex};

use kyro_core::ToolError;
use kyro_core::policy::{SandboxMode, SandboxRead};
use kyro_core::sandbox::{Sandbox, SandboxRequest};

use super::report::error;

/// The proxy's port inside Chromium's network namespace, where nothing else listens.
pub(crate) const PROXY_PORT: u16 = 3128;
/// Chromium's DevTools port there.
pub(crate) const DEVTOOLS_PORT: u16 = 9222;
/// Sockets made inside for kyro's DevTools connections: the browser's, and one per page
/// opened (16 at once at most). Past them, a page goes without its own connection (the
/// slower way). Each is a descriptor kyro holds while the browser lives.
const SOCKETS: usize = 24;

/// Whether Chromium runs sandboxed in a namespace of its own: where the kernel sandboxes
/// programs at all. Elsewhere it runs as a bare process with its DevTools port on the
/// host's loopback, as the README says.
pub(crate) fn available() -> bool {
    kyro_core::sandbox::support().is_ok()
}

/// The sandbox Chromium runs under: writes only beneath its `profile` (and its private
/// temporary directory); reads only the system's directories (its installation beneath
/// `/usr` or `/opt`, fonts, `/etc`), the `executable`'s own directory wherever it is, the
/// fontconfig cache, and `readable` (the roots a page's uploads come from), nothing else of
/// the host's; the network in a namespace of its own. Chromium's own sandbox stays off
/// (`--no-sandbox`): it needs user namespaces, which kyro's filter refuses every program.
/// Chromium is kyro's own program, like git: where the kernel cannot sandbox, it runs
/// without, and says so.
pub(crate) fn sandbox(
    executable: &std::path::Path,
    profile: &std::path::Path,
    readable: &[std::path::PathBuf],
) -> Result<Sandbox, ToolError> {
    let mut reads: Vec<std::path::PathBuf> = readable.to_vec();
    reads.push("/var/cache/fontconfig".into());
    if let Some(install) = executable
        .canonicalize()
        .ok()
        .and_then(|e| e.parent().map(|p| p.to_owned()))
    {
        reads.push(install);
    }
    let request = SandboxRequest {
        mode: SandboxMode::WorkspaceWrite,
        network: true,
        private_loopback: true,
        read: SandboxRead::Roots,
        readable: reads,
        writable: vec![profile.to_owned()],
        read_only: Vec::new(),
        allow_unsandboxed: true,
        nested_search_complete: true,
    };
    Sandbox::prepare(&request).map_err(|e| error("sandbox Chromium", e))
}

/// The Unix socket pair the sockets made inside come back over.
pub(crate) struct Handoff {
    parent: OwnedFd,
    child: Option<OwnedFd>,
}

/// What came back from inside: the proxy's listener and the sockets to connect.
pub(crate) struct Inside {
    pub proxy: TcpListener,
    pub sockets: Arc<SocketPool>,
}

impl Handoff {
    pub(crate) fn new() -> Result<Handoff, ToolError> {
        let mut pair = [0; 2];
        // SAFETY: socketpair fills two descriptors, owned from here on.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        } != 0
        {
            return Err(error("start", std::io::Error::last_os_error()));
        }
        // SAFETY: fresh descriptors of our own.
        let (parent, child) = unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        Ok(Handoff {
            parent,
            child: Some(child),
        })
    }

    /// Has `command`'s child, once in its namespace (register this after the sandbox),
    /// make the sockets and send them. The child's end is closed here once spawned.
    pub(crate) fn arm(&self, command: &mut std::process::Command) {
        let channel = self.child.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        // SAFETY: the closure makes system calls only (socket, setsockopt, bind, listen,
        // sendmsg, close), all async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if make_and_send(channel) {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }

    /// After the spawn: the sockets the child sent.
    pub(crate) fn receive(mut self) -> Result<Inside, ToolError> {
        drop(self.child.take());
        let fail = |e: &dyn std::fmt::Display| error("reach Chromium's network namespace", e);
        let mut fds = receive_fds(self.parent.as_raw_fd(), SOCKETS + 1).map_err(|e| fail(&e))?;
        if fds.len() != SOCKETS + 1 {
            return Err(fail(&format!("{} sockets came back of {}", fds.len(), SOCKETS + 1)));
        }
        let proxy = TcpListener::from(fds.remove(0));
        Ok(Inside {
            proxy,
            sockets: Arc::new(SocketPool(Mutex::new(fds), DEVTOOLS_PORT)),
        })
    }
}

/// Buffer for the control message carrying `SOCKETS + 1` descriptors.
const CONTROL: usize = 64 + (SOCKETS + 1) * 4;

/// In the child: the proxy's listener on `127.0.0.1:PROXY_PORT` and [`SOCKETS`] sockets,
/// sent as one message over `channel`.
fn make_and_send(channel: RawFd) -> bool {
    // SAFETY: system calls on owned descriptors and stack buffers.
    unsafe {
        let mut fds = [-1 as libc::c_int; SOCKETS + 1];
        let loopback = loopback(PROXY_PORT);
        for fd in fds.iter_mut() {
            *fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if *fd < 0 {
                return false;
            }
        }
        let one: libc::c_int = 1;
        let listening = libc::setsockopt(
            fds[0],
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
            && libc::bind(
                fds[0],
                (&loopback as *const libc::sockaddr_in).cast(),
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ) == 0
            && libc::listen(fds[0], 128) == 0;
        let sent = listening && send_fds(channel, &fds);
        for fd in fds {
            libc::close(fd);
        }
        sent
    }
}

/// `127.0.0.1:port`, as the socket calls take it.
fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// `u64`-aligned room for a control message.
#[repr(C, align(8))]
struct ControlBuffer([u8; CONTROL]);

unsafe fn send_fds(channel: RawFd, fds: &[libc::c_int]) -> bool {
    // SAFETY: a msghdr over stack buffers sized for the descriptors (CMSG_SPACE fits CONTROL).
    unsafe {
        let mut byte = [0u8; 1];
        let mut io = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = ControlBuffer([0; CONTROL]);
        let length = std::mem::size_of_val(fds) as libc::c_uint;
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut io;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(length) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(length) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(header).cast(), fds.len());
        libc::sendmsg(channel, &message, libc::MSG_NOSIGNAL) == 1
    }
}

/// Receives one message of at most `most` descriptors from `channel`, waiting 10 s at most.
fn receive_fds(channel: RawFd, most: usize) -> std::io::Result<Vec<OwnedFd>> {
    // SAFETY: poll and recvmsg into stack buffers; each descriptor received is owned here.
    unsafe {
        let mut poll = libc::pollfd {
            fd: channel,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 10_000) != 1 {
            return Err(std::io::Error::other("Chromium's process sent no sockets"));
        }
        let mut byte = [0u8; 1];
        let mut io = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = ControlBuffer([0; CONTROL]);
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut io;
        message.msg_iovlen = 1;
        message.msg_control = control.0.as_mut_ptr().cast();
        message.msg_controllen = CONTROL as _;
        if libc::recvmsg(channel, &mut message, libc::MSG_CMSG_CLOEXEC) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut fds = Vec::new();
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<libc::c_int>();
                let count = ((*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / size_of::<libc::c_int>();
                for i in 0..count.min(most) {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
        Ok(fds)
    }
}

/// The unconnected sockets made in Chromium's namespace, and the DevTools port there.
pub(crate) struct SocketPool(Mutex<Vec<OwnedFd>>, u16);

impl SocketPool {
    /// A connection to Chromium's DevTools port, inside its namespace.
    pub(crate) fn devtools(&self) -> std::io::Result<TcpStream> {
        let socket = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .ok_or_else(|| std::io::Error::other(format!("the {SOCKETS} sockets made inside are used")))?;
        let address = loopback(self.1);
        // SAFETY: connect on an owned socket with a valid address.
        let connected = unsafe {
            libc::connect(
                socket.as_raw_fd(),
                (&address as *const libc::sockaddr_in).cast(),
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if connected != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let stream = TcpStream::from(socket);
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

/// Where kyro reaches Chromium's DevTools.
pub(crate) enum Reach {
    /// On the host's loopback, at the address Chromium printed.
    Host,
    /// Inside Chromium's namespace, `headless_chrome`'s connection through the relay
    /// (which stops with this).
    Inside {
        pool: Arc<SocketPool>,
        /// Kept for as long as this is: it stops when dropped.
        _relay: Relay,
    },
}

impl Reach {
    /// A connection to the DevTools server at `address` (`127.0.0.1:PORT`).
    pub(crate) fn connect(&self, address: &str) -> std::io::Result<TcpStream> {
        match self {
            Reach::Host => {
                let stream = TcpStream::connect(address)?;
                stream.set_nodelay(true)?;
                Ok(stream)
            }
            Reach::Inside { pool, .. } => pool.devtools(),
        }
    }
}

/// A listener on the host's loopback for `headless_chrome`'s connection, carried over a
/// socket made inside; it serves connections from this process only, to the DevTools
/// WebSocket only, under its secret.
pub(crate) struct Relay {
    address: SocketAddr,
    secret: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    listener: TcpListener,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        wake(&self.listener);
    }
}

/// Wakes a thread blocked accepting on `listener` (its accept fails at once from now on).
pub(crate) fn wake(listener: &TcpListener) {
    // SAFETY: shutdown on a descriptor `listener` owns.
    unsafe {
        libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR);
    }
}

/// The longest request line the relay reads.
const REQUEST_LINE: usize = 8192;

impl Relay {
    pub(crate) fn start(pool: Arc<SocketPool>) -> Result<Relay, ToolError> {
        let fail = |e: std::io::Error| error("start the DevTools relay", e);
        let listener = TcpListener::bind("127.0.0.1:0").map_err(fail)?;
        let address = listener.local_addr().map_err(fail)?;
        let secret = secret().map_err(fail)?;
        let expected = format!("GET /{secret}/devtools/");
        let woken = listener.try_clone().map_err(fail)?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::Builder::new()
            .name("kyro-devtools-relay".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    if !ours(&client) {
                        continue; // dropped: another process found the port
                    }
                    let _ = client.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                    let Some(line) = request_line(&client) else { continue };
                    let Some(rest) = line.strip_prefix(expected.as_str()) else {
                        continue; // dropped: not the DevTools WebSocket, or not kyro's secret
                    };
                    let _ = client.set_read_timeout(None);
                    let Ok(mut inside) = pool.devtools() else { continue };
                    if std::io::Write::write_all(&mut inside, format!("GET /devtools/{rest}").as_bytes()).is_err() {
                        continue;
                    }
                    splice(client, inside);
                }
            })
            .map_err(fail)?;
        Ok(Relay {
            address,
            secret,
            stop,
            listener: woken,
        })
    }

    /// `url` (`ws://127.0.0.1:9222/devtools/browser/ID`) pointed at the relay.
    pub(crate) fn url(&self, url: &str) -> String {
        url.replacen(
            &format!("127.0.0.1:{DEVTOOLS_PORT}/"),
            &format!("{}/{}/", self.address, self.secret),
            1,
        )
    }
}

/// 128 random bits, in hex.
fn secret() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The request line (with its CRLF), read a byte at a time so that nothing after it is
/// taken from the stream; `None` past [`REQUEST_LINE`] bytes or at an error.
fn request_line(mut client: &TcpStream) -> Option<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        if line.len() == REQUEST_LINE || client.read(&mut byte).ok()? != 1 {
            return None;
        }
        line.push(byte[0]);
    }
    String::from_utf8(line).ok()
}

/// Carries bytes both ways until either side closes.
fn splice(a: TcpStream, b: TcpStream) {
    let _ = a.set_nodelay(true);
    let pairs = [(a.try_clone(), b.try_clone()), (b.try_clone(), a.try_clone())];
    for (from, to) in pairs {
        let (Ok(mut from), Ok(mut to)) = (from, to) else {
            continue;
        };
        let _ = std::thread::Builder::new()
            .name("kyro-devtools-relay-conn".into())
            .spawn(move || {
                let _ = std::io::copy(&mut from, &mut to);
                let _ = to.shutdown(std::net::Shutdown::Both);
                let _ = from.shutdown(std::net::Shutdown::Both);
            });
    }
}

/// Whether the peer of `client` (a loopback connection) is a socket this process holds:
/// its inode, found by its address in `/proc/net/tcp`, is one of `/proc/self/fd`'s.
fn ours(client: &TcpStream) -> bool {
    let (Ok(peer), Ok(local)) = (client.peer_addr(), client.local_addr()) else {
        return false;
    };
    let hex = |address: SocketAddr| match address {
        SocketAddr::V4(v4) => format!("{:08X}:{:04X}", u32::from_le_bytes(v4.ip().octets()), v4.port()),
        SocketAddr::V6(_) => String::new(),
    };
    let (peer, local) = (hex(peer), hex(local));
    let mut table = String::new();
    if std::fs::File::open("/proc/net/tcp")
        .and_then(|mut f| f.read_to_string(&mut table))
        .is_err()
    {
        return false;
    }
    // The peer's own row: its local address is our peer, its remote address is us.
    let inode = table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&peer.as_str()) && fields.get(2) == Some(&local.as_str()))
            .then(|| fields.get(9).map(|inode| format!("socket:[{inode}]")))
            .flatten()
    });
    let Some(inode) = inode else {
        return false;
    };
    std::fs::read_dir("/proc/self/fd").is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| std::fs::read_link(entry.path()).is_ok_and(|link| link.as_os_str() == inode.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_carries_only_the_devtools_websocket_under_its_secret() {
        // A stand-in for Chromium's DevTools port: echoes the request line it got.
        let inside = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = inside.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in inside.incoming().flatten() {
                let line = request_line(&stream).unwrap_or_default();
                let _ = std::io::Write::write_all(&mut &stream, line.as_bytes());
            }
        });
        // Sockets "made inside", that connect to it.
        let sockets = (0..4)
            // SAFETY: a fresh socket, owned from here on.
            .map(|_| unsafe {
                OwnedFd::from_raw_fd(libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0))
            })
            .collect();
        let pool = Arc::new(SocketPool(Mutex::new(sockets), port));
        let relay = Relay::start(pool.clone()).unwrap();
        let ask = |request: &str| {
            let stream = TcpStream::connect(port_of(&relay)).unwrap();
            std::io::Write::write_all(&mut &stream, request.as_bytes()).unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(2)))
                .unwrap();
            let mut answer = String::new();
            let _ = (&stream).read_to_string(&mut answer);
            answer
        };
        let url = relay.url(&format!("ws://127.0.0.1:{DEVTOOLS_PORT}/devtools/browser/B"));
        let path = url.split_once(&port_of(&relay)).unwrap().1.to_owned();
        assert_eq!(
            ask(&format!("GET {path} HTTP/1.1\r\n")),
            "GET /devtools/browser/B HTTP/1.1\r\n"
        );
        assert_eq!(ask("GET /devtools/browser/B HTTP/1.1\r\n"), "", "no secret");
        assert_eq!(ask("GET /json/version HTTP/1.1\r\n"), "", "not the WebSocket");
        let secret = path.split('/').nth(1).unwrap();
        assert_eq!(
            ask(&format!("PUT /{secret}/json/new?file:///etc/shadow HTTP/1.1\r\n")),
            ""
        );
    }

    fn port_of(relay: &Relay) -> String {
        relay.address.to_string()
    }

    #[test]
    fn the_relay_serves_this_process_and_no_other() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let ours_client = TcpStream::connect(address).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        assert!(ours(&accepted));
        // Another process's connection: a shell's bash /dev/tcp.
        let mut other = std::process::Command::new("bash")
            .args(["-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{}; sleep 5", address.port())])
            .spawn()
            .unwrap();
        let (accepted, _) = listener.accept().unwrap();
        assert!(!ours(&accepted));
        let _ = other.kill();
        let _ = other.wait();
        drop(ours_client);
    }
}
