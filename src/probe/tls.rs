//! TLS in front of the transport's HTTP/1 connection, for istiod behind an `https://` URL.
//!
//! The same rustls (ring provider) that kube's client uses, with the same default trust: the
//! platform verifier (on Linux the system's trust store: `$SSL_CERT_FILE`, `$SSL_CERT_DIR`,
//! `/etc/ssl/certs`). A PEM CA bundle replaces it, as kubectl's `--certificate-authority` does;
//! "skip verify" accepts any certificate (still checking the handshake's signatures). SNI and
//! the name checked are the URL's host, or the override; ALPN offers http/1.1 only.
//!
//! A failed handshake is sorted into a [`TlsFailure`] a user can act on: not trusted (unknown
//! issuer), name mismatch (with the names the certificate has), expired, not TLS at all (with the
//! plain HTTP answer's first line), closed, or anything else rustls says.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

pub use crate::error::TlsFailure;

/// Which certificates are trusted.
#[derive(Clone, Copy, Debug)]
pub enum Trust<'a> {
    /// The system's trust store, as kube's client reads it (rustls' platform verifier).
    System,
    /// Only the CA certificates of a PEM bundle; `name` is how messages call it (its path).
    Bundle { name: &'a str, pem: &'a [u8] },
    /// Any certificate: no chain, name or validity check. Insecure.
    SkipVerify,
}

/// Why the TLS client cannot be set up (before any connection).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// The bundle is not PEM, holds no certificate, or a certificate rustls cannot use.
    #[error("{0}")]
    Bundle(String),
    /// The name to send and check is neither a DNS name nor an IP address.
    #[error("{0:?} is not a DNS name or an IP address")]
    ServerName(String),
    /// The trust store could not be loaded.
    #[error("{0}")]
    Trust(TlsFailure),
}

/// A TLS client for one server name: the rustls configuration and what messages say it trusts.
#[derive(Clone, Debug)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    trusted: String,
}

/// The crypto provider kube's client uses too (ring): no second implementation in the binary.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM bundle: every `CERTIFICATE` block, other blocks (a key) ignored.
pub fn bundle_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let mut certs = Vec::new();
    for item in CertificateDer::pem_slice_iter(pem) {
        certs.push(item.map_err(|e| format!("not PEM: {e}"))?);
    }
    if certs.is_empty() {
        return Err(
            "no certificate in it (a PEM file with -----BEGIN CERTIFICATE----- blocks is expected)"
                .to_string(),
        );
    }
    Ok(certs)
}

impl TlsClient {
    /// A client that checks certificates against `trust` for `server_name` (a DNS name or an IP
    /// address: the URL's host, or the override).
    pub fn new(trust: Trust<'_>, server_name: &str) -> Result<Self, SetupError> {
        let server_name = ServerName::try_from(server_name.to_string())
            .map_err(|_| SetupError::ServerName(server_name.to_string()))?;
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| SetupError::Trust(TlsFailure::Other(e.to_string())))?;
        let (config, trusted) = match trust {
            Trust::System => {
                use rustls_platform_verifier::BuilderVerifierExt;
                let config = builder
                    .with_platform_verifier()
                    .map_err(|e| SetupError::Trust(TlsFailure::NoTrustStore(e.to_string())))?
                    .with_no_client_auth();
                (config, "a CA of the system's trust store".to_string())
            }
            Trust::Bundle { name, pem } => {
                let mut roots = RootCertStore::empty();
                for cert in bundle_certificates(pem).map_err(SetupError::Bundle)? {
                    roots.add(cert).map_err(|e| {
                        SetupError::Bundle(format!("a certificate rustls cannot use: {e}"))
                    })?;
                }
                let verifier =
                    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .map_err(|e| SetupError::Bundle(e.to_string()))?;
                let config = builder.with_webpki_verifier(verifier).with_no_client_auth();
                (config, format!("a CA of {name}"))
            }
            Trust::SkipVerify => {
                let config = builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                    .with_no_client_auth();
                (config, "anything (verification skipped)".to_string())
            }
        };
        let mut config = config;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsClient {
            config: Arc::new(config),
            server_name,
            trusted,
        })
    }

    /// The name sent as SNI and checked in the certificate.
    pub fn server_name(&self) -> String {
        self.server_name.to_str().into_owned()
    }

    /// The TLS handshake over an open connection. No timeout here: the caller's request
    /// timeout covers it (and says "handshake" when it ends there).
    pub async fn handshake<S>(&self, io: S) -> Result<TlsStream<FirstBytes<S>>, TlsFailure>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let first = Arc::new(Mutex::new(Vec::new()));
        let io = FirstBytes {
            inner: io,
            seen: first.clone(),
            full: false,
        };
        TlsConnector::from(self.config.clone())
            .connect(self.server_name.clone(), io)
            .await
            .map_err(|e| classify(&e, &first, &self.trusted, &self.server_name()))
    }
}

/// Sorts a failed handshake (tokio-rustls gives an `io::Error`, with rustls' error inside).
fn classify(
    error: &std::io::Error,
    first: &Mutex<Vec<u8>>,
    trusted: &str,
    wanted: &str,
) -> TlsFailure {
    let seen = first.lock().map(|b| b.clone()).unwrap_or_default();
    let inner = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(cert)) => {
            classify_certificate(cert, trusted, wanted)
        }
        Some(rustls::Error::InvalidMessage(_)) if !looks_like_tls(&seen) => TlsFailure::NotTls {
            answer: plain_http_line(&seen),
        },
        Some(rustls::Error::AlertReceived(alert)) => TlsFailure::Alert {
            alert: format!("{alert:?}"),
        },
        Some(other) => TlsFailure::Other(other.to_string()),
        None if error.kind() == std::io::ErrorKind::UnexpectedEof
            || error.kind() == std::io::ErrorKind::ConnectionReset =>
        {
            if seen.is_empty() || looks_like_tls(&seen) {
                TlsFailure::Closed
            } else {
                TlsFailure::NotTls {
                    answer: plain_http_line(&seen),
                }
            }
        }
        None => TlsFailure::Other(crate::source::cluster::flatten(error)),
    }
}

fn classify_certificate(error: &CertificateError, trusted: &str, wanted: &str) -> TlsFailure {
    let time = |t: &UnixTime| {
        jiff::Timestamp::from_second(i64::try_from(t.as_secs()).unwrap_or(i64::MAX))
            .map(|ts| ts.to_string())
            .unwrap_or_else(|_| format!("{}s after 1970", t.as_secs()))
    };
    match error {
        CertificateError::UnknownIssuer => TlsFailure::UnknownIssuer {
            trust: trusted.to_string(),
        },
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => TlsFailure::NameMismatch {
            wanted: expected.to_str().into_owned(),
            presented: presented.iter().map(|n| presented_name(n)).collect(),
        },
        CertificateError::NotValidForName => TlsFailure::NameMismatch {
            wanted: wanted.to_string(),
            presented: Vec::new(),
        },
        CertificateError::ExpiredContext {
            time: now,
            not_after,
        } => TlsFailure::Expired {
            not_after: time(not_after),
            now: time(now),
        },
        CertificateError::NotValidYetContext {
            time: now,
            not_before,
        } => TlsFailure::NotYetValid {
            not_before: time(not_before),
            now: time(now),
        },
        other => TlsFailure::Other(format!("the certificate is not accepted: {other:?}")),
    }
}

/// A name of the certificate as webpki lists it (`DnsName("istiod.istio-system.svc")`,
/// `IpAddress(10.0.0.1)`), as a user writes it.
fn presented_name(listed: &str) -> String {
    let unquote = |s: &str| s.trim_matches('"').to_string();
    if let Some(inner) = listed
        .strip_prefix("DnsName(")
        .and_then(|s| s.strip_suffix(')'))
    {
        unquote(inner)
    } else if let Some(inner) = listed
        .strip_prefix("IpAddress(")
        .and_then(|s| s.strip_suffix(')'))
    {
        inner.to_string()
    } else if let Some(inner) = listed
        .strip_prefix("UniformResourceIdentifier(")
        .and_then(|s| s.strip_suffix(')'))
    {
        format!("URI {}", unquote(inner))
    } else {
        listed.to_string()
    }
}

/// Whether the first bytes are a TLS record (content type 20..=24, major version 3).
fn looks_like_tls(seen: &[u8]) -> bool {
    matches!(seen, [20..=24, 3, ..])
}

/// The first line of a plain HTTP answer (`HTTP/1.1 400 Bad Request`), if that is what it is.
fn plain_http_line(seen: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(seen);
    text.starts_with("HTTP/")
        .then(|| text.lines().next().unwrap_or_default().trim().to_string())
}

/// How many of the server's first bytes are kept for a "not TLS" message.
const FIRST_BYTES: usize = 64;

/// A stream that keeps a copy of the first bytes it reads (so that a failed handshake can say
/// what the server sent instead of TLS).
pub struct FirstBytes<S> {
    inner: S,
    seen: Arc<Mutex<Vec<u8>>>,
    /// The copy is complete: later reads (a large body) pass straight through.
    full: bool,
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstBytes<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if !self.full {
            let full = match self.seen.lock() {
                Ok(mut seen) => {
                    let new = &buf.filled()[before..];
                    let room = FIRST_BYTES.saturating_sub(seen.len());
                    seen.extend_from_slice(&new[..new.len().min(room)]);
                    seen.len() >= FIRST_BYTES
                }
                Err(_) => true,
            };
            self.full = full;
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstBytes<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The verifier of "skip verify": accepts any certificate, but still checks that the server
/// holds its key (the handshake's signatures), so the connection is at least not garbled.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_that_are_not_pem_or_empty_say_so() {
        assert!(
            bundle_certificates(b"hello")
                .unwrap_err()
                .starts_with("no certificate in it")
        );
        let key_only =
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
        assert!(bundle_certificates(key_only).is_err());
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        assert!(
            bundle_certificates(broken)
                .unwrap_err()
                .starts_with("not PEM")
        );
    }

    #[test]
    fn bad_server_names_are_refused() {
        let error = TlsClient::new(Trust::SkipVerify, "not a name!").unwrap_err();
        assert_eq!(
            error.to_string(),
            "\"not a name!\" is not a DNS name or an IP address"
        );
        let client = TlsClient::new(Trust::SkipVerify, "127.0.0.1").unwrap();
        assert_eq!(client.server_name(), "127.0.0.1");
    }

    #[test]
    fn names_are_shown_as_written() {
        assert_eq!(
            presented_name("DnsName(\"istiod.istio-system.svc\")"),
            "istiod.istio-system.svc"
        );
        assert_eq!(presented_name("IpAddress(10.0.0.1)"), "10.0.0.1");
        assert_eq!(
            presented_name(
                "UniformResourceIdentifier(\"spiffe://cluster.local/ns/istio-system/sa/istiod\")"
            ),
            "URI spiffe://cluster.local/ns/istio-system/sa/istiod"
        );
        assert_eq!(presented_name("DirectoryName"), "DirectoryName");
    }

    #[test]
    fn plain_http_is_told_from_tls() {
        assert!(looks_like_tls(&[22, 3, 3, 0, 10]));
        assert!(!looks_like_tls(b"HTTP/1.1 400 Bad Request\r\n"));
        assert_eq!(
            plain_http_line(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain"),
            Some("HTTP/1.1 400 Bad Request".to_string())
        );
        assert_eq!(plain_http_line(b"SSH-2.0-OpenSSH_9.6\r\n"), None);
    }
}
