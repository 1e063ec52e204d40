//! Requests that only reach what the policy allows: http(s) only, hosts checked by name,
//! every resolved address checked (no loopback, private, link-local or other non-public
//! address unless allowed), redirects followed by hand and each hop checked again.

use crate::Failure;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};

use crate::settings::NetworkSettings;
use kyro_core::receipt::ObservedEffect;
use kyro_core::{ToolContext, ToolError};

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// A response, its body cut at the cap.
pub(crate) struct Fetched {
    pub url: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub truncated: bool,
}

fn refused(url: &str, reason: impl Into<String>) -> ToolError {
    Failure::UrlRefused {
        url: url.to_owned(),
        reason: reason.into(),
    }
    .into()
}

/// Whether an address is globally reachable. The ranges are those of std's
/// `IpAddr::is_global` (unstable, so mirrored here from the IANA special-purpose
/// registries it follows), plus multicast; an IPv6 address that carries an IPv4 one
/// (mapped, compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4
/// address it reaches.
fn public(ip: IpAddr) -> bool {
    match plain(ip) {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1])) // shared address space
                || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
                || o[0] >= 240) // reserved
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64
                || (s[0] == 0x100 && s[1] == 0 && s[2] == 0 && s[3] == 0) // discard only
                || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments, Teredo
                || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
                || (s[0] & 0xfff0) == 0x3ff0 // documentation (3fff::/20)
                || s[0] == 0x5f00) // segment routing
        }
    }
}

/// The IPv4 address an IPv6 address reaches, when it carries one: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4
/// (`2002:aabb:ccdd::`).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match v6.segments() {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(v4(hi, lo)),
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 || lo > 1 => Some(v4(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        _ => None,
    }
}

/// An address as the policy compares it: an IPv6 address that carries an IPv4 one as
/// that IPv4 address.
fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether two addresses reach the same place: equal, or one unspecified (`0.0.0.0` and
/// `::` connect to this machine) and the other loopback.
fn same_place(a: IpAddr, b: IpAddr) -> bool {
    a == b || (a.is_unspecified() && (b.is_loopback() || b.is_unspecified())) || (b.is_unspecified() && a.is_loopback())
}

/// The addresses `deny_hosts` stands for: each entry as an address literal, or resolved.
fn denied_addresses(policy: &NetworkSettings) -> Vec<IpAddr> {
    policy
        .deny_hosts
        .iter()
        .flat_map(|entry| {
            let entry = entry.trim_start_matches('[').trim_end_matches(']');
            match entry.parse::<IpAddr>() {
                Ok(ip) => vec![plain(ip)],
                Err(_) => (entry, 0)
                    .to_socket_addrs()
                    .map(|addrs| addrs.map(|a| plain(a.ip())).collect())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Why `ip`, an address of `host`, is refused by `deny_hosts`, if it is: compared as
/// addresses, not spellings (`127.1`, `2130706433`, `[::ffff:127.0.0.1]`, `0.0.0.0` and
/// `[0:0:0:0:0:0:0:1]` are all this machine when `127.0.0.1` or `localhost` is denied).
fn denied_by_address(denied: &[IpAddr], host: &str, ip: IpAddr) -> Option<String> {
    let ip = plain(ip);
    denied
        .iter()
        .any(|d| same_place(*d, ip))
        .then(|| format!("`{host}` resolves to {ip}, which the policy denies"))
}

/// Why the policy refuses `host` judged by its spelling alone, without a lookup: for names
/// an untrusted file supplies (a storage state), which kyro must not resolve (a lookup is a
/// beacon to the name's server, and one that never answers holds the browser). Denied or
/// not allowed by name; an address literal that is denied or not public (unless the policy
/// allows it); a numeric spelling that is no plain address (`2130706433`, `0x7f.1`). A
/// name that resolves to a private address passes here: every request to it is still
/// checked with its lookup.
#[cfg_attr(not(feature = "browser"), allow(dead_code))]
pub(crate) fn name_refusal(policy: &NetworkSettings, host: &str) -> Option<String> {
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    if policy.denies(host) {
        return Some(format!("host `{host}` is not allowed by the policy"));
    }
    let check_private = !policy.allow_private && !policy.allows_explicitly(host);
    let last = host.rsplit('.').next().unwrap_or_default();
    let numeric = !last.is_empty() && last.chars().all(|c| c.is_ascii_hexdigit() || c == 'x' || c == 'X');
    let ip = match host.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) if host.contains(':') || numeric && last.starts_with(|c: char| c.is_ascii_digit()) => {
            return Some(format!("`{host}` is a numeric spelling that is no plain address"));
        }
        Err(_) => return None,
    };
    if let Some(reason) = denied_by_address(&denied_addresses(policy), host, ip) {
        return Some(reason);
    }
    (check_private && !public(ip)).then(|| format!("`{host}` is {ip}, which is not a public address"))
}

/// Checks a URL against the scope's network policy; returns it parsed.
pub(crate) fn check(cx: &ToolContext, url: &str) -> Result<ureq::http::Uri, ToolError> {
    check_with(&*cx.scope().settings::<NetworkSettings>()?, url)
}

/// Checks a URL against a network policy; returns it parsed.
pub(crate) fn check_with(policy: &NetworkSettings, url: &str) -> Result<ureq::http::Uri, ToolError> {
    let uri: ureq::http::Uri = url.parse().map_err(|e| refused(url, format!("not a URL ({e})")))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(refused(url, "only http and https URLs are fetched")),
    }
    let host = uri.host().ok_or_else(|| refused(url, "the URL has no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if policy.denies(host) {
        return Err(refused(url, format!("host `{host}` is not allowed by the policy")));
    }
    let check_private = !policy.allow_private && !policy.allows_explicitly(host);
    if check_private || !policy.deny_hosts.is_empty() {
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
        let addrs = (host, port).to_socket_addrs().map_err(|e| Failure::Unreachable {
            service: host.to_owned(),
            message: e.to_string(),
        })?;
        let denied = denied_addresses(policy);
        for addr in addrs {
            if let Some(reason) = denied_by_address(&denied, host, addr.ip()) {
                return Err(refused(url, reason));
            }
            if check_private && !public(addr.ip()) {
                return Err(refused(
                    url,
                    format!("`{host}` resolves to {}, which is not a public address", addr.ip()),
                ));
            }
        }
    }
    Ok(uri)
}

/// Connects to `host:port` as the policy allows: the name checked, then every address of
/// one lookup checked and the connection made to those same addresses (no second lookup a
/// rebinding DNS answer could change). The error says why, for the one refused.
#[cfg_attr(not(feature = "browser"), allow(dead_code))]
pub(crate) fn connect_checked(
    policy: &NetworkSettings,
    host: &str,
    port: u16,
    timeout: std::time::Duration,
) -> Result<std::net::TcpStream, String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if policy.denies(host) {
        return Err(format!("host `{host}` is not allowed by the policy"));
    }
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("`{host}` does not resolve: {e}"))?
        .collect();
    let denied = denied_addresses(policy);
    if let Some(reason) = addrs.iter().find_map(|a| denied_by_address(&denied, host, a.ip())) {
        return Err(reason);
    }
    if !policy.allow_private
        && !policy.allows_explicitly(host)
        && let Some(addr) = addrs.iter().find(|a| !public(a.ip()))
    {
        return Err(format!(
            "`{host}` resolves to {}, which is not a public address",
            addr.ip()
        ));
    }
    let mut last = format!("`{host}` has no address");
    for addr in addrs {
        match std::net::TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

/// The resolver the connection uses: the addresses it connects to are the ones checked
/// here, in the same lookup, so a DNS answer that changes after [`check`] (rebinding)
/// cannot slip a private address in.
#[derive(Debug)]
struct CheckedResolver {
    policy: NetworkSettings,
    /// `deny_hosts` as addresses, looked up once per request rather than once per hop.
    denied: Vec<IpAddr>,
    inner: ureq::unversioned::resolver::DefaultResolver,
}

impl CheckedResolver {
    fn new(policy: NetworkSettings) -> CheckedResolver {
        CheckedResolver {
            denied: denied_addresses(&policy),
            policy,
            inner: ureq::unversioned::resolver::DefaultResolver::default(),
        }
    }
}

impl ureq::unversioned::resolver::Resolver for CheckedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if let Some(reason) = addrs.iter().find_map(|a| denied_by_address(&self.denied, host, a.ip())) {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                reason,
            )));
        }
        if self.policy.allow_private || self.policy.allows_explicitly(host) {
            return Ok(addrs);
        }
        if let Some(addr) = addrs.iter().find(|a| !public(a.ip())) {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "`{host}` resolved to {} when connecting, which is not a public address",
                    addr.ip()
                ),
            )));
        }
        Ok(addrs)
    }
}

/// An agent whose every connection goes only to addresses `policy` allows: each lookup's
/// answers are checked as they are connected to (no second lookup a rebinding DNS answer
/// could change). Check each URL with [`check_with`] before sending it.
pub(crate) fn checked_agent(policy: NetworkSettings, config: ureq::config::Config) -> ureq::Agent {
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        CheckedResolver::new(policy),
    )
}

/// A transport error of a checked agent: the policy's refusal as `url_refused`, anything
/// else as `unreachable` (of `service`).
pub(crate) fn transport_error(url: &str, service: &str, error: ureq::Error) -> ToolError {
    match error {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => refused(url, io.to_string()),
        e => Failure::Unreachable {
            service: service.to_owned(),
            message: e.to_string(),
        }
        .into(),
    }
}

fn resolve(base: &ureq::http::Uri, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_owned();
    }
    let authority = format!(
        "{}://{}",
        base.scheme_str().unwrap_or("http"),
        base.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    if location.starts_with('/') {
        return format!("{authority}{location}");
    }
    let path = base.path();
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    format!("{authority}{dir}{location}")
}

/// Sends one request, following up to five redirects (each checked), reading at most
/// `max_bytes` of the body.
pub(crate) fn send(
    cx: &ToolContext,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    max_bytes: u64,
    timeout: std::time::Duration,
) -> Result<Fetched, ToolError> {
    let request = Outgoing {
        method,
        url,
        headers,
        body,
        timeout,
        record_query: true,
    };
    exchange(cx, request, |url, status, headers, reader| {
        let headers = headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let mut bytes = Vec::new();
        reader
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Unreachable {
                service: url.to_owned(),
                message: e.to_string(),
            })?;
        let truncated = bytes.len() as u64 > max_bytes;
        bytes.truncate(max_bytes as usize);
        Ok(Fetched {
            url: url.to_owned(),
            status,
            headers,
            body: bytes,
            truncated,
        })
    })
}

/// [`send`] of a GET handing the body to `read` as a stream (with the final URL and status)
/// rather than reading it into memory. `read` bounds what it reads. The receipt records each
/// address without its query (a signed address's credential).
pub(crate) fn send_streaming<T>(
    cx: &ToolContext,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    timeout: std::time::Duration,
    read: impl FnOnce(&str, u16, &mut dyn Read) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    let request = Outgoing {
        method,
        url,
        headers,
        body: None,
        timeout,
        record_query: false,
    };
    exchange(cx, request, |url, status, _, reader| read(url, status, reader))
}

/// A request as [`exchange`] sends it.
struct Outgoing<'a> {
    method: &'a str,
    url: &'a str,
    headers: &'a [(String, String)],
    body: Option<&'a str>,
    timeout: std::time::Duration,
    /// Whether the receipt records each address's query.
    record_query: bool,
}

/// The one request loop: every hop checked (the URL, then each address at connection
/// time), redirects followed by hand (up to five; a 303, or a 301/302 answering a POST,
/// becomes a GET without its body), the policy's refusal as `url_refused`, each hop in the
/// receipt; the final answer handed to `read` with its headers and a reader of its body.
fn exchange<T>(
    cx: &ToolContext,
    request: Outgoing<'_>,
    read: impl FnOnce(&str, u16, &ureq::http::HeaderMap, &mut dyn Read) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    // The request ends just after the call's time limit (so the limit, not the client,
    // decides the outcome: `timed_out`), and a stalled server never outlives the call.
    let timeout = cx.stop().remaining().map_or(request.timeout, |left| {
        (left + crate::settings::PAST_THE_LIMIT).min(request.timeout)
    });
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .build();
    let agent = checked_agent(
        NetworkSettings::clone(&*cx.scope().settings::<NetworkSettings>()?),
        config,
    );
    let mut url = request.url.to_owned();
    let mut method = request.method.to_owned();
    let mut body = request.body.map(str::to_owned);
    for _ in 0..=MAX_REDIRECTS {
        cx.stop().check()?;
        let uri = check(cx, &url)?;
        let mut builder = ureq::http::Request::builder().method(method.as_str()).uri(&uri);
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        let sent = builder
            .body(body.clone().unwrap_or_default())
            .map_err(|e| refused(&url, e.to_string()))?;
        let mut response = agent.run(sent).map_err(|e| transport_error(&url, &url, e))?;
        let status = response.status().as_u16();
        let recorded = match request.record_query {
            true => url.clone(),
            // A signed address's query is a credential.
            false => url.split(['?', '#']).next().unwrap_or_default().to_owned(),
        };
        cx.effects().push(ObservedEffect::Request {
            url: recorded,
            status: Some(status),
        });
        if (300..400).contains(&status)
            && let Some(location) = response.headers().get("location").and_then(|v| v.to_str().ok())
        {
            url = resolve(&uri, location);
            if status == 303 || ((status == 301 || status == 302) && method == "POST") {
                method = "GET".into();
                body = None;
            }
            continue;
        }
        let headers = response.headers().clone();
        let mut reader = response.body_mut().as_reader();
        return read(&url, status, &headers, &mut reader);
    }
    Err(refused(&url, format!("more than {MAX_REDIRECTS} redirects")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::unversioned::resolver::Resolver;

    fn resolve_with(policy: NetworkSettings, url: &str) -> Result<usize, ureq::Error> {
        let resolver = CheckedResolver::new(policy);
        let config = ureq::config::Config::default();
        let timeout = ureq::unversioned::transport::NextTimeout::default();
        resolver
            .resolve(&url.parse().unwrap(), &config, timeout)
            .map(|addrs| addrs.len())
    }

    /// The check at connection time stands on its own: whatever `check` saw earlier, the
    /// lookup the connection uses refuses non-public answers.
    #[test]
    fn the_connection_lookup_refuses_private_answers() {
        for url in [
            "http://localhost:1/",
            "http://127.0.0.1:1/",
            "http://[::1]:1/",
            "http://10.1.2.3:1/",
        ] {
            match resolve_with(NetworkSettings::default(), url) {
                Err(ureq::Error::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        let allowed = NetworkSettings {
            allow_hosts: vec!["localhost".into()],
            ..NetworkSettings::default()
        };
        assert!(resolve_with(allowed, "http://localhost:1/").is_ok());
        let private = NetworkSettings {
            allow_private: true,
            ..NetworkSettings::default()
        };
        assert!(resolve_with(private, "http://127.0.0.1:1/").is_ok());
    }

    /// With private addresses allowed and this machine denied by three spellings, no
    /// other spelling of it gets through: addresses are compared, not strings.
    #[test]
    fn every_special_purpose_range_is_private_whatever_its_spelling() {
        let policy = NetworkSettings::default();
        for url in [
            "http://[64:ff9b::7f00:1]/",   // NAT64 of 127.0.0.1
            "http://[64:ff9b::a00:1]/",    // NAT64 of 10.0.0.1
            "http://[2002:7f00:1::]/",     // 6to4 of 127.0.0.1
            "http://[2002:a9fe:a9fe::1]/", // 6to4 of 169.254.169.254
            "http://[::7f00:1]/",          // IPv4-compatible 127.0.0.1
            "http://[64:ff9b:1::1]/",
            "http://[2001::1]/", // Teredo
            "http://[2001:db8::1]/",
            "http://[3fff::1]/",
            "http://[fec0::1]/",
            "http://[100::1]/",
            "http://[5f00::1]/",
            "http://198.18.0.1/",
            "http://198.19.255.255/",
            "http://240.0.0.1/",
            "http://192.0.0.8/",
            "http://192.0.2.1/",
            "http://203.0.113.7/",
        ] {
            assert!(
                check_with(&policy, url).is_err_and(|e| matches!(Failure::of(&e), Some(Failure::UrlRefused { .. }))),
                "{url} got through"
            );
        }
        // The same forms around public addresses stay public.
        for url in [
            "http://[64:ff9b::808:808]/",
            "http://[2002:808:808::1]/",
            "http://198.20.0.1/",
            "http://[2606:4700::1111]/",
        ] {
            assert!(check_with(&policy, url).is_ok(), "{url} was refused");
        }
    }

    #[test]
    fn deny_hosts_compares_resolved_addresses_not_spellings() {
        let policy = NetworkSettings {
            allow_private: true,
            deny_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            ..NetworkSettings::default()
        };
        for url in [
            "http://127.1/",
            "http://2130706433/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http://[0:0:0:0:0:0:0:1]/",
            "http://LOCALHOST/",
        ] {
            assert!(
                check_with(&policy, url).is_err_and(|e| matches!(Failure::of(&e), Some(Failure::UrlRefused { .. }))),
                "{url} got through"
            );
            assert!(resolve_with(policy.clone(), url).is_err(), "{url} at connection time");
        }
        assert!(
            check_with(&policy, "http://10.0.0.1/").is_ok(),
            "other private addresses stay allowed"
        );
    }
}
