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
    ROOT_KEYS
        .into_iter()
        .find(|k| secret.keys.iter().any(|x| x == k))
}

/// Why `ExtractCertInfo` finds no key pair in a Secret, in Istio's words; `None` when it
/// takes one ([`chain_key`]).
pub fn no_pair(secret: &SecretKeys) -> Option<String> {
    if chain_key(secret).is_some() {
        return None;
    }
    let present = |k: &str| secret.keys.iter().chain(&secret.empty_keys).any(|x| x == k);
    if let Some((cert, key)) = PAIRS.iter().find(|(c, k)| present(c) && present(k)) {
        return Some(format!(
            "found keys {cert:?} and {key:?}, but they were empty"
        ));
    }
    Some(format!(
        "found secret, but didn't have expected keys (cert and key) or (tls.crt and tls.key); found: {}",
        found_keys(secret.keys.iter().chain(&secret.empty_keys))
    ))
}

/// Istio's `truncatedKeysMessage`: the keys sorted, the first three and how many more.
fn found_keys<'k>(keys: impl Iterator<Item = &'k String>) -> String {
    let mut all: Vec<&str> = keys.map(String::as_str).collect();
    all.sort_unstable();
    all.dedup();
    if all.len() < 3 {
        all.join(", ")
    } else {
        format!("{}, and {} more...", all[..3].join(", "), all.len() - 3)
    }
}

/// The keys `ExtractRoot` reads a CA certificate from, in its order.
const ROOT_KEYS: [&str; 2] = ["cacert", "ca.crt"];

/// Why `ExtractRoot` finds no CA certificate in data whose keys with a value are `with_value`
/// and whose empty keys are `empty`, in Istio's words; `None` when it takes one ([`ca_key`]).
fn no_root_in(with_value: &[String], empty: &[String]) -> Option<String> {
    if ROOT_KEYS.iter().any(|k| with_value.iter().any(|x| x == k)) {
        return None;
    }
    if let Some(key) = ROOT_KEYS.iter().find(|k| empty.iter().any(|x| x == *k)) {
        return Some(format!("found key {key:?}, but it was empty"));
    }
    Some(format!(
        "found secret, but didn't have expected keys cacert or ca.crt; found: {}",
        found_keys(with_value.iter().chain(empty))
    ))
}

/// Why istiod's `GetCaCert` (through `ExtractRoot`) gets no CA certificate from this Secret,
/// in Istio's words (`found key "cacert", but it was empty`, `found secret, but didn't have
/// expected keys cacert or ca.crt; found: ...`); `None` when it gets one.
pub fn no_root(secret: &SecretKeys) -> Option<String> {
    no_root_in(&secret.keys, &secret.empty_keys)
}

/// [`no_root`] for a ConfigMap's `data` (`ExtractRootFromString`; `binaryData` is not read):
/// the key it takes, or why it takes none (Istio says "found secret" there too).
pub fn config_map_root(
    data: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<&'static str, String> {
    let (mut with_value, mut empty) = (Vec::new(), Vec::new());
    for (k, v) in data.into_iter().flatten() {
        if v.is_empty() {
            empty.push(k.clone());
        } else {
            with_value.push(k.clone());
        }
    }
    if let Some(why) = no_root_in(&with_value, &empty) {
        return Err(why);
    }
    Ok(ROOT_KEYS
        .into_iter()
        .find(|k| with_value.iter().any(|x| x == k))
        .unwrap_or(ROOT_KEYS[0]))
}

/// True when Go's `x509.CertPool.AppendCertsFromPEM` adds no certificate from this PEM (Istio
/// then says of a `caCertificateRefs` entry "the bundle is malformed"): no `CERTIFICATE` block
/// that holds exactly one certificate that parses.
pub fn bundle_malformed(pem: &PemCertificates) -> bool {
    !pem.blocks
        .iter()
        .any(|b| b.label == "CERTIFICATE" && b.certificates.as_ref().is_ok_and(|c| c.len() == 1))
}

/// Why Go's `tls.X509KeyPair` (which Istio's Gateway API conversion runs on a certificateRef)
/// refuses a chain for its certificate half: no `CERTIFICATE` block, or a first one that does
/// not parse; in Go's words where they do not depend on the key. `None` when the certificate
/// half passes. The key half (its form, and whether it matches) is never judged: the private
/// key is not read.
pub fn key_pair_refused(chain: &PemCertificates) -> Option<String> {
    let Some(first) = chain.blocks.iter().find(|b| b.label == "CERTIFICATE") else {
        let skipped: Vec<&str> = chain.blocks.iter().map(|b| b.label.as_str()).collect();
        return Some(match skipped.as_slice() {
            [] => "tls: failed to find any PEM data in certificate input".into(),
            [one] if one.ends_with("PRIVATE KEY") => "tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched".into(),
            _ => format!(
                "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping PEM blocks of the following types: [{}]",
                skipped.join(" ")
            ),
        });
    };
    first
        .certificates
        .as_ref()
        .err()
        .map(|e| format!("its first certificate cannot be parsed ({e})"))
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
                label: "CERTIFICATE".into(),
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
    fn a_secret_without_a_pair_is_said_in_istios_words() {
        assert_eq!(no_pair(&secret(&["tls.crt", "tls.key"])), None);
        let mut empty = secret(&["ca.crt"]);
        empty.empty_keys = vec!["tls.crt".into(), "tls.key".into()];
        assert_eq!(
            no_pair(&empty).unwrap(),
            "found keys \"tls.crt\" and \"tls.key\", but they were empty"
        );
        assert_eq!(
            no_pair(&secret(&["a", "b"])).unwrap(),
            "found secret, but didn't have expected keys (cert and key) or (tls.crt and tls.key); found: a, b"
        );
        assert!(
            no_pair(&secret(&["d", "c", "b", "a"]))
                .unwrap()
                .ends_with("found: a, b, c, and 1 more...")
        );
    }

    #[test]
    fn a_secret_without_a_ca_certificate_is_said_in_istios_words() {
        assert_eq!(no_root(&secret(&["ca.crt"])), None);
        assert_eq!(no_root(&secret(&["cacert", "tls.crt"])), None);
        let mut empty = secret(&["ca.crt"]);
        empty.empty_keys = vec!["cacert".into()];
        // An empty cacert beside a ca.crt with a value: ExtractRoot takes ca.crt.
        assert_eq!(no_root(&empty), None);
        empty.keys.clear();
        assert_eq!(
            no_root(&empty).unwrap(),
            "found key \"cacert\", but it was empty"
        );
        assert_eq!(
            no_root(&secret(&["foo"])).unwrap(),
            "found secret, but didn't have expected keys cacert or ca.crt; found: foo"
        );
        assert_eq!(
            no_root(&secret(&["tls.key", "tls.crt"])).unwrap(),
            "found secret, but didn't have expected keys cacert or ca.crt; found: tls.crt, tls.key"
        );
        let map = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            config_map_root(Some(&map(&[("ca.crt", "x")]))),
            Ok("ca.crt")
        );
        assert_eq!(
            config_map_root(Some(&map(&[("ca.crt", "x"), ("cacert", "y")]))),
            Ok("cacert")
        );
        assert_eq!(
            config_map_root(Some(&map(&[("ca.crt", "")]))).unwrap_err(),
            "found key \"ca.crt\", but it was empty"
        );
        assert_eq!(
            config_map_root(None).unwrap_err(),
            "found secret, but didn't have expected keys cacert or ca.crt; found: "
        );
    }

    #[test]
    fn a_bundle_needs_one_certificate_go_can_add() {
        let c = chain("2020-01-01T00:00:00Z", "2126-01-01T00:00:00Z");
        assert!(!bundle_malformed(&c));
        assert!(bundle_malformed(&PemCertificates::default()));
        let key = PemCertificates {
            blocks: vec![PemBlock {
                label: "PRIVATE KEY".into(),
                certificates: Err("x".into()),
            }],
        };
        assert!(bundle_malformed(&key));
    }

    #[test]
    fn the_certificate_half_of_a_key_pair() {
        let block = |label: &str| PemBlock {
            label: label.into(),
            certificates: Err("x".into()),
        };
        let of = |blocks: Vec<PemBlock>| key_pair_refused(&PemCertificates { blocks });
        assert_eq!(
            of(vec![]).unwrap(),
            "tls: failed to find any PEM data in certificate input"
        );
        assert!(
            of(vec![block("EC PRIVATE KEY")])
                .unwrap()
                .contains("PEM inputs may have been switched")
        );
        assert!(
            of(vec![block("PUBLIC KEY"), block("X")])
                .unwrap()
                .ends_with("the following types: [PUBLIC KEY X]")
        );
        assert!(
            of(vec![block("CERTIFICATE")])
                .unwrap()
                .starts_with("its first certificate cannot be parsed")
        );
        assert_eq!(
            key_pair_refused(&chain("2020-01-01T00:00:00Z", "2020-02-01T00:00:00Z")),
            None
        );
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
