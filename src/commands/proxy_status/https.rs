//! `proxy-status --istiod-url https://...`: the TLS options of the request (checked by the CLI),
//! turned into a [`TlsClient`] per URL, and a failed handshake turned into one error line that
//! says what to do.
//!
//! The flags use kubectl's vocabulary, prefixed with `istiod-` like every flag about istiod:
//! `--istiod-ca FILE` (kubectl's `--certificate-authority`: the CAs in the file replace the
//! system's trust store), `--istiod-tls-server-name NAME` (kubectl's `--tls-server-name`: the name
//! sent as SNI and expected in the certificate, for a URL whose host is an IP address while
//! istiod's certificate is for `istiod.istio-system.svc`), and
//! `--istiod-insecure-skip-tls-verify` (kubectl's `--insecure-skip-tls-verify`, istioctl's
//! `--insecure`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::probe::tls::{SetupError, TlsClient, TlsFailure, Trust};

/// The TLS options of the command line, with the CA bundle read.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// `--istiod-ca`: the file and its bytes.
    pub ca: Option<(PathBuf, Vec<u8>)>,
    /// `--istiod-tls-server-name`.
    pub server_name: Option<String>,
    /// `--istiod-insecure-skip-tls-verify`.
    pub skip_verify: bool,
}

impl TlsOptions {
    /// Reads the CA bundle. The flags were checked against each other and the URLs by the CLI
    /// (`cli::proxy_status`).
    pub fn read(ca: Option<&Path>, server_name: Option<&str>, skip_verify: bool) -> Result<Self> {
        let ca = match ca {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| Error::CaBundle {
                    path: path.to_path_buf(),
                    why: format!("cannot read it: {e}"),
                })?;
                crate::probe::tls::bundle_certificates(&pem).map_err(|why| Error::CaBundle {
                    path: path.to_path_buf(),
                    why,
                })?;
                Some((path.to_path_buf(), pem))
            }
            None => None,
        };
        Ok(TlsOptions {
            ca,
            server_name: server_name.map(str::to_string),
            skip_verify,
        })
    }

    /// The TLS client for `url`, whose host is `host`.
    pub fn client(&self, url: &str, host: &str) -> Result<TlsClient> {
        let name = self.server_name.as_deref().unwrap_or(host);
        let shown = self.ca.as_ref().map(|(path, _)| path.display().to_string());
        let trust = match (&self.ca, self.skip_verify) {
            (_, true) => Trust::SkipVerify,
            (Some((_, pem)), false) => Trust::Bundle {
                name: shown.as_deref().unwrap_or_default(),
                pem,
            },
            (None, false) => Trust::System,
        };
        TlsClient::new(trust, name).map_err(|e| match e {
            SetupError::Bundle(why) => Error::CaBundle {
                path: self.ca.as_ref().map(|(p, _)| p.clone()).unwrap_or_default(),
                why,
            },
            SetupError::ServerName(_) if self.server_name.is_some() => Error::InvalidValue {
                what: "--istiod-tls-server-name",
                value: name.to_string(),
                why: "not a DNS name or an IP address".to_string(),
            },
            SetupError::ServerName(_) => Error::InvalidValue {
                what: "--istiod-url",
                value: host.to_string(),
                why: "its host is not a DNS name or an IP address".to_string(),
            },
            SetupError::Trust(failure) => self.error(url.to_string(), failure),
        })
    }

    /// What to do about a failed handshake, in the command line's words.
    pub fn hint(&self, failure: &TlsFailure) -> Option<String> {
        let ca = self.ca.as_ref().map(|(path, _)| path.display().to_string());
        Some(match failure {
            TlsFailure::UnknownIssuer { .. } => match ca {
                Some(ca) => format!(
                    "{ca} does not hold the CA that signed istiod's certificate (for Istio's own certificate: its root, the ConfigMap istio-ca-root-cert's root-cert.pem)"
                ),
                None => "give the CA that signed it with --istiod-ca FILE (for Istio's own certificate: the ConfigMap istio-ca-root-cert's root-cert.pem)".to_string(),
            },
            TlsFailure::NameMismatch { .. } => match &self.server_name {
                Some(_) => "give one of those names with --istiod-tls-server-name".to_string(),
                None => "use one of those names in the URL, or give it with --istiod-tls-server-name NAME (istiod's own certificate is for istiod.istio-system.svc)".to_string(),
            },
            TlsFailure::Expired { .. } | TlsFailure::NotYetValid { .. } => {
                "renew the certificate (or check this machine's clock)".to_string()
            }
            TlsFailure::NotTls { .. } => {
                "use http:// for this port (istiod serves its debug endpoints over plain HTTP on 15014)".to_string()
            }
            TlsFailure::HandshakeTimeout { .. } => {
                "is this a TLS port? (--istiod-timeout sets the time allowed)".to_string()
            }
            TlsFailure::Alert { alert } => match alert.as_str() {
                "CertificateRequired" | "HandshakeFailure" => {
                    "the server may want a client certificate (mutual TLS), which mesh-doctor does not send".to_string()
                }
                "NoApplicationProtocol" => "the server does not speak HTTP/1.1 (ALPN)".to_string(),
                "InternalError" => "the server could not complete the handshake: has it a certificate? (istiod's own 15017 without one answers so)".to_string(),
                _ => return None,
            },
            TlsFailure::NoTrustStore(_) => "give istiod's CA with --istiod-ca FILE".to_string(),
            TlsFailure::Closed | TlsFailure::Other(_) => return None,
        })
    }

    /// The error that ends the command when the only istiod asked failed its handshake.
    pub fn error(&self, url: String, failure: TlsFailure) -> Error {
        let hint = self.hint(&failure);
        Error::IstiodTls { url, failure, hint }
    }
}

/// A 404 over https: istiod's own https port (15017) is not where its debug endpoints are.
pub fn not_found_hint(error: &str) -> String {
    if error.starts_with("HTTP 404") {
        format!(
            "{error}; istiod's own https port (15017) serves only its webhooks and /ready, its debug endpoints are plain HTTP on 15014 (put TLS in front of that)"
        )
    } else {
        error.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_ca_bundle_or_a_bad_host_is_an_error() {
        let e = TlsOptions::read(Some(Path::new("/nonexistent/ca.pem")), None, false).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::DATA);
        assert!(
            e.to_string()
                .starts_with("cannot use --istiod-ca /nonexistent/ca.pem: cannot read it: "),
            "{e}"
        );
        let options = TlsOptions::read(None, None, false).unwrap();
        let e = options
            .client("https://bad host!", "bad host!")
            .unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::USAGE);
    }

    #[test]
    fn failures_say_what_to_do() {
        let options = TlsOptions::default();
        let e = options.error(
            "https://127.0.0.1:8443".to_string(),
            TlsFailure::NameMismatch {
                wanted: "127.0.0.1".to_string(),
                presented: vec!["istiod.istio-system.svc".to_string()],
            },
        );
        assert_eq!(
            e.to_string(),
            "istiod https://127.0.0.1:8443: TLS: the certificate is for istiod.istio-system.svc and not for 127.0.0.1; use one of those names in the URL, or give it with --istiod-tls-server-name NAME (istiod's own certificate is for istiod.istio-system.svc)"
        );
        assert_eq!(e.exit_code(), crate::exit::UNAVAILABLE);
    }
}
