//! Gateway credentials as istiod reads them from a Secret (`credentialName`): which keys hold the
//! certificate chain and the private key, where the CA certificate of a `MUTUAL` server is,
//! and istiod's check of a certificate before it sends it to the gateway.
//!
//! Istio's rules: `ExtractCertInfo` (pilot/pkg/credentials/kube/secrets.go) takes `cert`/`key`
//! when both have a value, else `tls.crt`/`tls.key`; `extractRoot` takes `cacert`, else
//! `ca.crt`; `ValidateCertificate` (pilot/pkg/xds/sds.go) decodes the first PEM block of the
//! chain and refuses it when it is not certificates, or when one of them is expired or not yet
//! valid. The private key is not checked by either.

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

/// The key of the CA certificate a `MUTUAL` server verifies clients with, from the same
/// Secret (istiod first looks for a Secret `<name>-cacert`, which is not read here).
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
