//! TLS to PostgreSQL: what the URL's `sslmode` and `sslrootcert` come to for its hosts,
//! and the connector tokio-postgres runs the handshake with (rustls, ring's provider, as
//! the HTTP client has), whose refusals say why.
//!
//! The modes are libpq's, with two choices of kyro's:
//! - Without `sslmode`, hosts on loopback or a Unix socket are reached in plaintext, as
//!   before kyro spoke TLS (TLS there hides nothing from anyone who could read it), and
//!   other hosts as libpq's default `prefer` says, with a warning at start: `prefer`
//!   falls back to plaintext and checks no certificate, so it keeps out only a listener,
//!   never an impostor. A store of grants and receipts reached over a network wants
//!   `sslmode=verify-full`.
//! - The CA is named, never guessed: `verify-ca` and `verify-full` need `sslrootcert`
//!   (kyro does not read `~/.postgresql/root.crt`), and `sslrootcert` without `sslmode` is
//!   refused rather than read as a mode. `sslrootcert=system` (the Mozilla roots kyro is
//!   built with) means `verify-full`, as in libpq 16: any public CA signs some name.
//!
//! As in libpq, `require` and `prefer` given an `sslrootcert` check the chain too, and
//! `sslmode` means nothing over a Unix socket.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use deadpool_postgres::{Manager, ManagerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::Socket;
use tokio_postgres::config::Host;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

use super::pg_url::{RootCert, SslMode, TlsAsked, TlsSettingError};

/// How a store's connections are made, decided from its URL before any is.
pub(super) struct PgTls {
    mode: SslMode,
    connector: Option<Connector>,
    /// Hosts reached with `prefer` that are not on this machine.
    exposed: Vec<String>,
    /// Whether the URL said `sslmode`.
    said: bool,
}

impl PgTls {
    /// What `asked` comes to for the hosts of `config`; the CA file is read now.
    pub(super) fn new(asked: TlsAsked, config: &tokio_postgres::Config) -> Result<PgTls, TlsSettingError> {
        let hosts = endpoints(config);
        let all_local = hosts.iter().all(|h| h.local);
        let said = asked.mode.is_some();
        let mode = match (asked.mode, &asked.root) {
            (None, Some(RootCert::System)) => SslMode::VerifyFull,
            (Some(mode), Some(RootCert::System)) if mode != SslMode::VerifyFull && mode != SslMode::Disable => {
                return Err(TlsSettingError::WeakSystem(mode));
            }
            (None, Some(RootCert::File(_))) => return Err(TlsSettingError::RootWithoutMode),
            (Some(mode), _) => mode,
            (None, None) if all_local => SslMode::Disable,
            (None, None) => SslMode::Prefer,
        };
        if mode.verifies() && asked.root.is_none() {
            return Err(TlsSettingError::NoRoot(mode));
        }
        // libpq ignores sslmode over a Unix socket: PostgreSQL speaks no TLS there.
        if mode == SslMode::Disable || (!hosts.is_empty() && hosts.iter().all(|h| h.unix)) {
            return Ok(PgTls {
                mode: SslMode::Disable,
                connector: None,
                exposed: Vec::new(),
                said,
            });
        }
        let roots = asked.root.as_ref().map(roots).transpose()?;
        let connector = Connector::new(mode, asked.root, roots)?;
        let exposed = match mode {
            SslMode::Prefer => hosts.into_iter().filter(|h| !h.local).map(|h| h.name).collect(),
            _ => Vec::new(),
        };
        Ok(PgTls {
            mode,
            connector: Some(connector),
            exposed,
            said,
        })
    }

    /// The mode tokio-postgres negotiates with: whether to ask for TLS, and whether to
    /// go on without it.
    pub(super) fn ssl_mode(&self) -> tokio_postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        }
    }

    /// The pool's connection manager, with TLS as decided.
    pub(super) fn manager(&self, config: tokio_postgres::Config, manager: ManagerConfig) -> Manager {
        match &self.connector {
            Some(connector) => Manager::from_config(config, connector.clone(), manager),
            None => Manager::from_config(config, tokio_postgres::NoTls, manager),
        }
    }

    /// How connections are made, for the line naming the store at start.
    pub(super) fn describe(&self) -> &'static str {
        match self.mode {
            SslMode::Disable => "plaintext",
            SslMode::Prefer => "TLS when the server offers it (sslmode=prefer)",
            SslMode::Require => "TLS (sslmode=require)",
            SslMode::VerifyCa => "TLS (sslmode=verify-ca)",
            SslMode::VerifyFull => "TLS (sslmode=verify-full)",
        }
    }

    /// What an operator should hear at start: hosts off this machine reached with
    /// `prefer`, which falls back to plaintext and checks no certificate.
    pub(super) fn warning(&self) -> Option<String> {
        if self.exposed.is_empty() {
            return None;
        }
        let why = match self.said {
            true => "sslmode=prefer",
            false => "no sslmode, so libpq's default, prefer",
        };
        Some(format!(
            "{} is reached with {why}: TLS only when the server offers it, and the server's certificate is not checked; add sslmode=verify-full&sslrootcert=CA.pem to the URL",
            self.exposed.join(", ")
        ))
    }
}

/// A host of the URL: its name, and whether it is on this machine.
struct Endpoint {
    name: String,
    local: bool,
    unix: bool,
}

/// The URL's hosts, as tokio-postgres will reach them (a `hostaddr` is the address, its
/// `host` the name the certificate must hold).
fn endpoints(config: &tokio_postgres::Config) -> Vec<Endpoint> {
    let (hosts, addresses) = (config.get_hosts(), config.get_hostaddrs());
    (0..hosts.len().max(addresses.len()))
        .map(|i| {
            let address = addresses.get(i);
            match hosts.get(i) {
                #[cfg(unix)]
                Some(Host::Unix(path)) => Endpoint {
                    name: path.display().to_string(),
                    local: true,
                    unix: address.is_none(),
                },
                Some(Host::Tcp(name)) => Endpoint {
                    name: name.clone(),
                    local: match address {
                        Some(address) => address.is_loopback(),
                        None => is_loopback_name(name),
                    },
                    unix: false,
                },
                None => Endpoint {
                    name: address.map(|a| a.to_string()).unwrap_or_default(),
                    local: address.is_some_and(|a| a.is_loopback()),
                    unix: false,
                },
            }
        })
        .collect()
}

fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The CA certificates of `sslrootcert`.
fn roots(root: &RootCert) -> Result<Arc<RootCertStore>, TlsSettingError> {
    let path = match root {
        RootCert::System => {
            return Ok(Arc::new(RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            }));
        }
        RootCert::File(path) => path,
    };
    let refused = |reason: String| TlsSettingError::Root {
        path: path.clone(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| refused(format!("cannot be read: {e}")))?;
    let mut store = RootCertStore::empty();
    for (i, cert) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        let cert = cert.map_err(|e| refused(format!("certificate {} is not PEM: {e}", i + 1)))?;
        store
            .add(cert)
            .map_err(|e| refused(format!("certificate {} is not a CA certificate: {e}", i + 1)))?;
    }
    if store.is_empty() {
        return Err(refused(
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_owned(),
        ));
    }
    Ok(Arc::new(store))
}

/// Checks the server's certificate as the mode says: against `roots` when there are
/// any, and its names too under `verify-full`; the handshake's signatures always.
#[derive(Debug)]
struct Verifier {
    roots: Option<Arc<RootCertStore>>,
    names: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, self.algorithms.all)?;
            if self.names {
                verify_server_name(&cert, server_name)?;
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Makes the TLS session of each new connection of the pool.
#[derive(Clone)]
pub(super) struct Connector {
    config: Arc<ClientConfig>,
    mode: SslMode,
    /// `sslrootcert` as the URL said it, for refusals.
    root: Option<RootCert>,
}

impl Connector {
    fn new(
        mode: SslMode,
        root: Option<RootCert>,
        roots: Option<Arc<RootCertStore>>,
    ) -> Result<Connector, TlsSettingError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Verifier {
            names: mode == SslMode::VerifyFull,
            roots,
            algorithms: provider.signature_verification_algorithms,
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsSettingError::Provider)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Connector {
            config: Arc::new(config),
            mode,
            root,
        })
    }

    /// Why a handshake with `host` failed, said for an operator.
    fn refusal(&self, host: &str, e: io::Error) -> HandshakeError {
        let root = match &self.root {
            Some(RootCert::File(path)) => format!("`{path}`"),
            Some(RootCert::System) => "system".to_owned(),
            None => String::new(),
        };
        let certificate = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .and_then(|e| match e {
                rustls::Error::InvalidCertificate(why) => Some(why.clone()),
                _ => None,
            });
        match certificate {
            Some(CertificateError::UnknownIssuer) => HandshakeError::UnknownIssuer { mode: self.mode, root },
            Some(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }) => {
                HandshakeError::WrongName {
                    host: host.to_owned(),
                    cause: e,
                }
            }
            Some(_) => HandshakeError::Certificate {
                mode: self.mode,
                root,
                cause: e,
            },
            None => HandshakeError::Failed {
                host: host.to_owned(),
                cause: e,
            },
        }
    }
}

/// Why the TLS handshake with the server did not give a session.
#[derive(Debug, thiserror::Error)]
pub(super) enum HandshakeError {
    /// The certificate chains to no CA of `sslrootcert`.
    #[error(
        "the server's certificate does not verify (sslmode={mode}): it is not signed by a CA of sslrootcert {root}"
    )]
    UnknownIssuer { mode: SslMode, root: String },
    /// The certificate is not for the host the URL names.
    #[error("the server's certificate does not verify (sslmode=verify-full): it is not valid for the host `{host}`")]
    WrongName {
        host: String,
        #[source]
        cause: io::Error,
    },
    /// The certificate is refused for another reason (expired, not for a server, ...).
    #[error("the server's certificate does not verify (sslmode={mode}, sslrootcert {root})")]
    Certificate {
        mode: SslMode,
        root: String,
        #[source]
        cause: io::Error,
    },
    /// The handshake itself failed (an alert, a protocol or version mismatch).
    #[error("the TLS handshake with `{host}` failed")]
    Failed {
        host: String,
        #[source]
        cause: io::Error,
    },
    /// The host cannot be a TLS server name.
    #[error("`{0}` is not a host name or address a certificate can be checked against")]
    BadHost(String),
}

impl MakeTlsConnect<Socket> for Connector {
    type Stream = PgTlsStream;
    type TlsConnect = Handshake;
    type Error = HandshakeError;

    fn make_tls_connect(&mut self, host: &str) -> Result<Handshake, HandshakeError> {
        Ok(Handshake {
            connector: self.clone(),
            host: host.to_owned(),
        })
    }
}

/// One connection's handshake, with the host its certificate must name.
pub(super) struct Handshake {
    connector: Connector,
    host: String,
}

impl TlsConnect<Socket> for Handshake {
    type Stream = PgTlsStream;
    type Error = HandshakeError;
    type Future = Pin<Box<dyn Future<Output = Result<PgTlsStream, HandshakeError>> + Send>>;

    fn connect(self, socket: Socket) -> Self::Future {
        Box::pin(async move {
            let name =
                ServerName::try_from(self.host.clone()).map_err(|_| HandshakeError::BadHost(self.host.clone()))?;
            tokio_rustls::TlsConnector::from(self.connector.config.clone())
                .connect(name, socket)
                .await
                .map(PgTlsStream)
                .map_err(|e| self.connector.refusal(&self.host, e))
        })
    }
}

/// A connection inside its TLS session.
pub(super) struct PgTlsStream(tokio_rustls::client::TlsStream<Socket>);

impl tokio_postgres::tls::TlsStream for PgTlsStream {
    /// No `tls-server-end-point` binding: `channel_binding=require` is refused by
    /// tokio-postgres; `verify-full` is what keeps an impostor out.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for PgTlsStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for PgTlsStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::pg_url::split_tls;

    fn decided(url: &str) -> Result<PgTls, TlsSettingError> {
        let (rest, asked) = split_tls(url)?;
        PgTls::new(asked, &rest.parse().unwrap())
    }

    #[test]
    fn without_sslmode_loopback_is_plaintext_and_other_hosts_prefer_with_a_warning() {
        for local in [
            "postgres://kyro@127.0.0.1:5432/kyro",
            "postgres://kyro@localhost/kyro",
            "postgres://kyro@[::1]/kyro",
            "host=/run/postgresql dbname=kyro",
            "postgres://kyro@db.example/kyro?hostaddr=127.0.0.1",
        ] {
            let tls = decided(local).unwrap();
            assert_eq!(tls.mode, SslMode::Disable, "{local}");
            assert!(tls.warning().is_none(), "{local}");
        }
        let remote = decided("postgres://kyro@db.internal/kyro").unwrap();
        assert_eq!(remote.mode, SslMode::Prefer);
        let warning = remote.warning().unwrap();
        assert!(
            warning.contains("db.internal") && warning.contains("sslmode=verify-full"),
            "{warning}"
        );
        let mixed = decided("postgres://kyro@127.0.0.1,10.0.0.2/kyro").unwrap();
        assert!(mixed.warning().unwrap().starts_with("10.0.0.2 is reached"));
        assert!(
            decided("postgres://kyro@db.internal/kyro?sslmode=prefer")
                .unwrap()
                .warning()
                .is_some()
        );
        assert!(
            decided("postgres://kyro@db.internal/kyro?sslmode=require")
                .unwrap()
                .warning()
                .is_none()
        );
    }

    #[test]
    fn verifying_needs_a_named_ca_and_a_named_ca_needs_a_mode() {
        for mode in ["verify-ca", "verify-full"] {
            let refused = decided(&format!("postgres://kyro@db/kyro?sslmode={mode}"))
                .err()
                .unwrap();
            assert!(refused.to_string().contains("needs sslrootcert="), "{refused}");
        }
        let refused = decided("postgres://kyro@db/kyro?sslrootcert=/etc/ca.pem")
            .err()
            .unwrap();
        assert_eq!(refused, TlsSettingError::RootWithoutMode);
        // `system` trusts every public CA: only with the host name checked.
        let system = decided("postgres://kyro@db/kyro?sslrootcert=system").unwrap();
        assert_eq!(system.mode, SslMode::VerifyFull);
        // A verifying mode never lets tokio-postgres go on in plaintext.
        assert_eq!(system.ssl_mode(), tokio_postgres::config::SslMode::Require);
        let refused = decided("postgres://kyro@db/kyro?sslmode=require&sslrootcert=system")
            .err()
            .unwrap();
        assert_eq!(refused, TlsSettingError::WeakSystem(SslMode::Require));
    }

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_refused_before_connecting() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        for (file, said) in [(&missing, "cannot be read"), (&empty, "holds no PEM certificate")] {
            let url = format!(
                "postgres://kyro@db/kyro?sslmode=verify-full&sslrootcert={}",
                file.display()
            );
            let refused = decided(&url).err().unwrap().to_string();
            assert!(
                refused.contains(said) && refused.contains(&file.display().to_string()),
                "{refused}"
            );
        }
        // Over a Unix socket TLS is not spoken, and the file is not read.
        let url = format!(
            "host=/run/postgresql sslmode=verify-full sslrootcert={}",
            missing.display()
        );
        assert_eq!(decided(&url).unwrap().mode, SslMode::Disable);
    }
}
