//! The browser's only way out. Chromium is started with this proxy for every request
//! (`--proxy-server`, loopback included), so what the page, its frames, its workers and its
//! WebSockets ask for is connected here under the network policy of the current call, to
//! the addresses checked in that same lookup: a DNS answer that changes after a check
//! (rebinding) cannot turn an allowed name into a private address. The page's Fetch
//! interception still checks and reports each URL first; this is the enforcement beneath it.
//!
//! HTTPS and WebSockets arrive as `CONNECT host:port` and are tunnelled. Plain HTTP arrives
//! as one absolute-form request per connection: it is forwarded with `Connection: close`
//! and answered with `Connection: close`, so a connection never carries a second request,
//! which could name another host, to the host checked for the first.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::settings::NetworkSettings;
use kyro_core::ToolError;

use crate::integration::connect_checked;

use super::report::{Seen, error};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection idle this long in either direction is closed.
const IDLE: Duration = Duration::from_secs(300);
/// The longest request or response head read.
const MAX_HEAD: u64 = 64 * 1024;
/// Connections served at once (two threads each); past it a connection is answered `503`
/// at once and logged as refused, so a page cannot make kyro start threads without bound.
const MAX_CONNECTIONS: usize = 64;

/// The policy connections are checked against; `None` refuses everything.
type Current = Arc<Mutex<Option<NetworkSettings>>>;

/// A running proxy on 127.0.0.1; dropping it stops accepting (open tunnels end when either
/// side closes, as Chromium's do when it is killed).
pub(crate) struct Proxy {
    addr: SocketAddr,
    policy: Current,
    stop: Arc<AtomicBool>,
    /// The listener, to shut down on drop: that wakes the accept loop wherever the
    /// listener is (in Chromium's network namespace, a connection from here could not).
    listener: TcpListener,
}

impl Proxy {
    /// Listens on an ephemeral loopback port; refused connections are logged in `refused`
    /// as (URL, reason).
    pub(crate) fn start(refused: Seen) -> Result<Proxy, ToolError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| error("start the request proxy", e))?;
        Proxy::serve(listener, refused)
    }

    /// Serves the clients of `listener` (which may be in Chromium's network namespace: the
    /// connections out are made from the host's, by threads this one starts).
    pub(crate) fn serve(listener: TcpListener, refused: Seen) -> Result<Proxy, ToolError> {
        let addr = listener.local_addr().map_err(|e| error("start the request proxy", e))?;
        let woken = listener.try_clone().map_err(|e| error("start the request proxy", e))?;
        let policy: Current = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (current, stopping) = (policy.clone(), stop.clone());
        let open = Arc::new(AtomicUsize::new(0));
        std::thread::Builder::new()
            .name("kyro-browser-proxy".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Some(place) = Place::take(&open) else {
                        let reason = format!("{MAX_CONNECTIONS} connections are open through kyro's proxy, its limit");
                        if let Ok(mut log) = refused.lock() {
                            log.push(("(a new connection)".into(), Some(reason.clone())));
                        }
                        let _ = client.set_write_timeout(Some(Duration::from_secs(1)));
                        let _ = answer(&client, 503, &reason);
                        continue;
                    };
                    let policy = current.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    let refused = refused.clone();
                    let _ = std::thread::Builder::new()
                        .name("kyro-browser-proxy-conn".into())
                        .spawn(move || {
                            let _place = place;
                            let _ = serve(client, policy.as_ref(), &refused);
                        });
                }
            })
            .map_err(|e| error("start the request proxy", e))?;
        Ok(Proxy {
            addr,
            policy,
            stop,
            listener: woken,
        })
    }

    /// Where Chromium sends its requests.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The policy new connections are checked against from now on.
    pub(crate) fn set_policy(&self, policy: NetworkSettings) {
        *self.policy.lock().unwrap_or_else(|e| e.into_inner()) = Some(policy);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        super::isolation::wake(&self.listener);
    }
}

/// One of the [`MAX_CONNECTIONS`] places, given back when dropped.
struct Place(Arc<AtomicUsize>);

impl Place {
    fn take(open: &Arc<AtomicUsize>) -> Option<Place> {
        open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < MAX_CONNECTIONS).then_some(n + 1)
        })
        .ok()
        .map(|_| Place(open.clone()))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One client connection: a CONNECT tunnel or one plain HTTP request.
fn serve(client: TcpStream, policy: Option<&NetworkSettings>, refused: &Seen) -> std::io::Result<()> {
    client.set_read_timeout(Some(IDLE))?;
    client.set_write_timeout(Some(IDLE))?;
    let mut from_client = BufReader::new(client.try_clone()?);
    let Some(head) = read_head(&mut from_client)? else {
        return Ok(());
    };
    let mut parts = head[0].split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return answer(&client, 400, "not an HTTP request");
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let url = format!("https://{target}");
        let Some((host, port)) = authority(target, None) else {
            return answer(&client, 400, "CONNECT needs host:port");
        };
        let upstream = match open(policy, &host, port) {
            Ok(upstream) => upstream,
            Err(reason) => return refuse(&client, refused, url, reason),
        };
        (&client).write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")?;
        return splice(from_client, client, upstream, false);
    }
    // Plain HTTP: the target is an absolute http URL.
    let Some(rest) = target.strip_prefix("http://") else {
        return answer(&client, 400, "only absolute http:// targets and CONNECT are proxied");
    };
    let (authority_part, path) = rest.find(['/', '?']).map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let Some((host, port)) = authority(authority_part, Some(80)) else {
        return answer(&client, 400, "the target has no host");
    };
    let upstream = match open(policy, &host, port) {
        Ok(upstream) => upstream,
        Err(reason) => return refuse(&client, refused, target.to_owned(), reason),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let mut request = format!("{method} {path} {version}\r\n");
    for line in &head[1..] {
        if !hop_by_hop(line) {
            request.push_str(line);
            request.push_str("\r\n");
        }
    }
    request.push_str("Connection: close\r\n\r\n");
    (&upstream).write_all(request.as_bytes())?;
    splice(from_client, client, upstream, true)
}

/// Copies both ways until each side is done; with `rewrite_response`, the response head is
/// read first and sent on with `Connection: close`.
fn splice(
    mut from_client: BufReader<TcpStream>,
    client: TcpStream,
    upstream: TcpStream,
    rewrite_response: bool,
) -> std::io::Result<()> {
    upstream.set_read_timeout(Some(IDLE))?;
    upstream.set_write_timeout(Some(IDLE))?;
    let mut to_upstream = upstream.try_clone()?;
    let outbound = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_upstream);
        let _ = to_upstream.shutdown(Shutdown::Write);
    });
    let mut from_upstream = BufReader::new(upstream.try_clone()?);
    let mut to_client = client.try_clone()?;
    let result = (|| {
        if rewrite_response {
            let Some(head) = read_head(&mut from_upstream)? else {
                return Ok(());
            };
            let mut response = String::new();
            for line in head.iter().filter(|line| !hop_by_hop(line)) {
                response.push_str(line);
                response.push_str("\r\n");
            }
            response.push_str("Connection: close\r\n\r\n");
            to_client.write_all(response.as_bytes())?;
        }
        std::io::copy(&mut from_upstream, &mut to_client).map(drop)
    })();
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = outbound.join();
    result
}

fn open(policy: Option<&NetworkSettings>, host: &str, port: u16) -> Result<TcpStream, String> {
    let policy = policy.ok_or_else(|| "no call is driving the browser".to_owned())?;
    connect_checked(policy, host, port, CONNECT_TIMEOUT)
}

fn refuse(client: &TcpStream, refused: &Seen, url: String, reason: String) -> std::io::Result<()> {
    let body = format!("refused by kyro's network policy: {reason}");
    if let Ok(mut log) = refused.lock() {
        log.push((url, Some(reason)));
    }
    answer(client, 403, &body)
}

fn answer(mut client: &TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    write!(
        client,
        "HTTP/1.1 {status} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        if status == 403 { "Forbidden" } else { "Bad Request" },
        body.len()
    )
}

/// The head's lines, without their CRLFs, or `None` if the peer closed first.
fn read_head(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Vec<String>>> {
    let mut lines = Vec::new();
    let mut limited = reader.take(MAX_HEAD);
    loop {
        let mut line = String::new();
        if limited.read_line(&mut line)? == 0 {
            return if lines.is_empty() {
                Ok(None)
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the head was cut short",
                ))
            };
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            return Ok(Some(lines));
        }
        lines.push(line.to_owned());
    }
}

/// Headers that belong to one connection, not to the request or response.
fn hop_by_hop(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or("").trim();
    ["connection", "keep-alive", "proxy-connection", "proxy-authorization"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// `host:port`, `[v6]:port`, or a bare host with the default port.
fn authority(text: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let text = text.rsplit('@').next()?;
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => default_port?,
            None => return None,
        };
        (host, port)
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (text, default_port?),
        }
    };
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An origin on 127.0.0.1 that answers every connection with a keep-alive response
    /// and counts the connections it saw.
    fn origin() -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let stream = stream.unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if let Ok(Some(head)) = read_head(&mut reader) {
                    log.lock().unwrap().push(head.join("\n"));
                    let _ = (&stream).write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=60\r\n\r\nok",
                    );
                }
            }
        });
        (port, seen)
    }

    fn exchange(proxy: &Proxy, request: &str) -> String {
        let mut stream = TcpStream::connect(proxy.addr()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    }

    fn loopback_allowed() -> NetworkSettings {
        NetworkSettings {
            allow_hosts: vec!["127.0.0.1".into()],
            ..NetworkSettings::default()
        }
    }

    #[test]
    fn connections_past_the_bound_are_answered_503_and_a_freed_place_is_reused() {
        let (port, _) = origin();
        let refused: Seen = Arc::default();
        let proxy = Proxy::start(refused.clone()).unwrap();
        proxy.set_policy(loopback_allowed());
        // Each idle connection holds a place (and its thread) while its head is awaited.
        let mut idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(proxy.addr()).unwrap())
            .collect();
        let get = format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        let answer = exchange(&proxy, &get);
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(
            refused
                .lock()
                .unwrap()
                .iter()
                .any(|(_, r)| r.as_deref().is_some_and(|r| r.contains("limit")))
        );
        drop(idle.pop());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let answer = exchange(&proxy, &get);
            if answer.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{answer}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn nothing_is_connected_before_a_policy_or_against_it() {
        let (port, seen) = origin();
        let refused: Seen = Arc::default();
        let proxy = Proxy::start(refused.clone()).unwrap();
        let get = format!("GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        let connect = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        assert!(exchange(&proxy, &get).starts_with("HTTP/1.1 403"));
        // The default policy: loopback is not public.
        proxy.set_policy(NetworkSettings::default());
        let answer = exchange(&proxy, &get);
        assert!(
            answer.starts_with("HTTP/1.1 403") && answer.contains("not a public address"),
            "{answer}"
        );
        assert!(exchange(&proxy, &connect).starts_with("HTTP/1.1 403"));
        // Denied by name, whatever it resolves to.
        proxy.set_policy(NetworkSettings {
            deny_hosts: vec!["localhost".into()],
            allow_private: true,
            ..NetworkSettings::default()
        });
        let named = format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n");
        assert!(exchange(&proxy, &named).starts_with("HTTP/1.1 403"));
        assert!(seen.lock().unwrap().is_empty(), "the origin was never reached");
        let log = refused.lock().unwrap();
        assert_eq!(log.len(), 4, "{log:?}");
        assert_eq!(log[1].0, format!("http://127.0.0.1:{port}/x"));
        assert_eq!(log[2].0, format!("https://127.0.0.1:{port}"));
    }

    #[test]
    fn allowed_requests_go_through_one_per_connection() {
        let (port, seen) = origin();
        let proxy = Proxy::start(Arc::default()).unwrap();
        proxy.set_policy(loopback_allowed());
        let answer = exchange(
            &proxy,
            &format!(
                "GET http://127.0.0.1:{port}/page?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Connection: keep-alive\r\n\r\n"
            ),
        );
        // The origin's keep-alive is not passed on: the connection ends with the response.
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(
            answer.contains("Connection: close") && !answer.contains("keep-alive"),
            "{answer}"
        );
        assert!(answer.ends_with("ok"));
        let request = seen.lock().unwrap()[0].clone();
        assert!(request.starts_with("GET /page?q=1 HTTP/1.1"), "{request}");
        assert!(
            request.contains("Connection: close") && !request.contains("Proxy-Connection"),
            "{request}"
        );

        // A tunnel carries bytes both ways.
        let mut tunnel = TcpStream::connect(proxy.addr()).unwrap();
        tunnel.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(tunnel, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").unwrap();
        let mut reader = BufReader::new(tunnel.try_clone().unwrap());
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        reader.read_line(&mut String::new()).unwrap();
        write!(tunnel, "GET /tunnelled HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 200 OK"), "{line}");
        assert!(seen.lock().unwrap()[1].starts_with("GET /tunnelled"));
    }

    #[test]
    fn authorities_parse() {
        assert_eq!(authority("example.com:443", None), Some(("example.com".into(), 443)));
        assert_eq!(authority("example.com", Some(80)), Some(("example.com".into(), 80)));
        assert_eq!(authority("[::1]:8080", None), Some(("::1".into(), 8080)));
        assert_eq!(authority("user@host:1", None), Some(("host".into(), 1)));
        assert_eq!(authority("example.com", None), None);
        assert_eq!(authority(":80", None), None);
    }
}
