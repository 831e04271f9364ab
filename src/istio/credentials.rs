//! Gateway credentials as istiod reads them from a Secret (`credentialName`): which keys hold the
//! certificate chain and the private key, where the CA certificate of a `MUTUAL` server is,
//! and istiod's check of a certificate before it sends it to the gateway.
//!
//! Istio's rules: `ExtractCertInfo` (pilot/pkg/credentials/kube/secrets.go) takes `cert`/`key`
//! when both have a value, else `tls.crt`/`tls.key`; `ExtractRoot` takes `cacert`, else
//! `ca.crt`. A server that verifies clients (`MUTUAL`, `OPTIONAL_MUTUAL`) asks SDS for
//! `<credentialName>-cacert`, and `GetCaCert` reads the Secret of that name when it exists, and
//! only when it does not, the credential's own Secret. `ValidateCertificate`
//! (pilot/pkg/xds/sds.go) decodes the first PEM block of a chain or CA certificate and finds it
//! invalid when it is not certificates, or when one of them is expired or not yet valid; istiod
//! only logs that (`invalid certificates`) and sends the certificate all the same. The private
//! key is not checked by either.

use jiff::Timestamp;

use crate::kube::certificate::PemCertificates;
use crate::kube::snapshot::SecretKeys;

/// The keys of a Secret that hold public certificates: the only values ever parsed. Every
/// other value (`key`, `tls.key`, ...) is dropped unread once its emptiness is known.
pub const PUBLIC_KEYS: &[&str] = &["cert", "tls.crt", "cacert", "ca.crt"];

/// The key pairs istiod accepts, in its order: (certificate chain, private key).
const PAIRS: &[(&str, &str)] = &[("cert", "key"), ("tls.crt", "tls.key")];

/// The key of the certificate chain istiod serves from this Secret, when it has a usable pair
/// (both keys with a value).
pub fn chain_key(secret: &SecretKeys) -> Option<&'static str> {
    let has = |k: &str| secret.keys.iter().any(|x| x == k);
    PAIRS
        .iter()
        .find(|(cert, key)| has(cert) && has(key))
        .map(|(cert, _)| *cert)
}

/// The suffix of the Secret istiod reads a server's CA certificate from first
/// (`SdsCaSuffix`).
pub const CA_SECRET_SUFFIX: &str = "-cacert";

/// The name of the Secret istiod looks up first for the CA certificate of a server whose
/// credential is `name` (`ns/name` stays `ns/name-cacert`).
pub fn ca_secret_name(name: &str) -> String {
    format!("{name}{CA_SECRET_SUFFIX}")
}

/// True for the server TLS modes that verify client certificates with a CA certificate from
/// SDS (`MUTUAL`, `OPTIONAL_MUTUAL`).
pub fn verifies_clients(mode: &str) -> bool {
    mode.eq_ignore_ascii_case("MUTUAL") || mode.eq_ignore_ascii_case("OPTIONAL_MUTUAL")
}

/// The key of the CA certificate in a Secret, as `ExtractRoot` takes it: `cacert`, else
/// `ca.crt` (in the Secret `<name>-cacert` when it exists, else in the credential's own:
/// [`CA_SECRET_SUFFIX`]).
pub fn ca_key(secret: &SecretKeys) -> Option<&'static str> {
    ["cacert", "ca.crt"]
        .into_iter()
        .find(|k| secret.keys.iter().any(|x| x == k))
}

/// Why istiod's `ValidateCertificate` refuses a chain at `now`, or `None` when it accepts it.
pub fn refused(chain: &PemCertificates, now: Timestamp) -> Option<String> {
    if let Some(reason) = refused_form(chain) {
        return Some(reason);
    }
    chain
        .blocks
        .first()
        .and_then(|b| b.certificates.as_ref().ok())
        .into_iter()
        .flatten()
        .any(|c| now > c.not_after || now < c.not_before)
        .then(|| "certificate is expired or not yet valid".into())
}

/// The part of `ValidateCertificate` that needs no clock: the first PEM block must be there
/// and hold certificates.
pub fn refused_form(chain: &PemCertificates) -> Option<String> {
    let Some(first) = chain.blocks.first() else {
        return Some("pem decode failed".into());
    };
    first.certificates.as_ref().err().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::certificate::{CertificateFacts, PemBlock};

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn secret(keys: &[&str]) -> SecretKeys {
        SecretKeys {
            keys: keys.iter().map(|k| k.to_string()).collect(),
            ..SecretKeys::default()
        }
    }

    fn chain(not_before: &str, not_after: &str) -> PemCertificates {
        PemCertificates {
            blocks: vec![PemBlock {
                certificates: Ok(vec![CertificateFacts {
                    subject: "CN=a".into(),
                    not_before: at(not_before),
                    not_after: at(not_after),
                    serial: "01".into(),
                }]),
            }],
        }
    }

    #[test]
    fn cert_and_key_come_before_tls_crt_and_tls_key() {
        assert_eq!(
            chain_key(&secret(&["cert", "key", "tls.crt", "tls.key"])),
            Some("cert")
        );
        assert_eq!(chain_key(&secret(&["tls.crt", "tls.key"])), Some("tls.crt"));
        assert_eq!(chain_key(&secret(&["tls.crt", "key"])), None);
        assert_eq!(ca_key(&secret(&["ca.crt", "cacert"])), Some("cacert"));
    }

    #[test]
    fn the_ca_secret_is_named_after_the_credential() {
        assert_eq!(ca_secret_name("partner-cert"), "partner-cert-cacert");
        assert_eq!(ca_secret_name("certs/partner"), "certs/partner-cacert");
        assert!(verifies_clients("MUTUAL") && verifies_clients("OPTIONAL_MUTUAL"));
        assert!(!verifies_clients("SIMPLE") && !verifies_clients("ISTIO_MUTUAL"));
    }

    #[test]
    fn a_chain_is_refused_outside_its_validity() {
        let c = chain("2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z");
        assert_eq!(refused(&c, at("2026-03-01T00:00:00Z")), None);
        assert!(refused(&c, at("2026-06-02T00:00:00Z")).is_some());
        assert!(refused(&c, at("2025-12-31T00:00:00Z")).is_some());
        assert_eq!(
            refused(&PemCertificates::default(), at("2026-03-01T00:00:00Z")),
            Some("pem decode failed".into())
        );
    }
}
