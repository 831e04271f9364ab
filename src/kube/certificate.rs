//! X.509 certificates in PEM, as Secrets (`tls.crt`, `ca.crt`) and ConfigMaps (Istio's
//! `root-cert.pem`) hold them: what each PEM block holds, reduced to the facts the checks need
//! (subject, validity, serial). Pure: no clock (the checks compare with a time they are given).
//!
//! Read as Go reads them, since Istio does: a PEM block is found after any leading text
//! (`pem.Decode`) and its bytes are one or more DER certificates one after the other
//! (`x509.ParseCertificates`). A block labelled as a private key is never decoded.

use jiff::Timestamp;
use x509_parser::pem::Pem;
use x509_parser::prelude::{FromDer, X509Certificate};

/// One certificate, reduced to what is checked and said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateFacts {
    /// The subject as OpenSSL prints it (`CN=example.com, O=Example`).
    pub subject: String,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
    /// The serial number in hex (`01:a2:...`), to tell two certificates with one subject apart.
    pub serial: String,
}

/// One PEM block: its label (`CERTIFICATE`, ...) and its certificates, or why its bytes are not
/// certificates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PemBlock {
    pub label: String,
    pub certificates: Result<Vec<CertificateFacts>, String>,
}

/// A PEM value (a Secret's `tls.crt`, a ConfigMap's `root-cert.pem`): its blocks, in order.
/// No block at all is what Go's `pem.Decode` calls a failure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PemCertificates {
    pub blocks: Vec<PemBlock>,
}

impl PemCertificates {
    /// Every certificate of every block that could be read.
    pub fn all(&self) -> impl Iterator<Item = &CertificateFacts> {
        self.blocks
            .iter()
            .filter_map(|b| b.certificates.as_ref().ok())
            .flatten()
    }
}

/// The blocks of a PEM value. A block whose label names a private key is recorded as not a
/// certificate without decoding it.
pub fn read_pem(data: &[u8]) -> PemCertificates {
    let mut blocks = Vec::new();
    for pem in Pem::iter_from_buffer(data) {
        let Ok(pem) = pem else {
            // Go's decoder stops at the first block it cannot read (or at the end).
            break;
        };
        let certificates = if pem.label.contains("PRIVATE KEY") {
            Err(format!("a {} block, not a certificate", pem.label))
        } else {
            parse_certificates(&pem.contents)
        };
        blocks.push(PemBlock {
            label: pem.label,
            certificates,
        });
    }
    PemCertificates { blocks }
}

/// DER certificates one after the other, as Go's `x509.ParseCertificates`.
fn parse_certificates(mut der: &[u8]) -> Result<Vec<CertificateFacts>, String> {
    let mut out = Vec::new();
    while !der.is_empty() {
        let (rest, cert) =
            X509Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        out.push(facts(&cert)?);
        der = rest;
    }
    Ok(out)
}

fn facts(cert: &X509Certificate<'_>) -> Result<CertificateFacts, String> {
    let validity = cert.validity();
    let time = |t: i64| {
        Timestamp::from_second(t).map_err(|e| format!("a validity time out of range: {e}"))
    };
    Ok(CertificateFacts {
        subject: cert.subject().to_string(),
        not_before: time(validity.not_before.timestamp())?,
        not_after: time(validity.not_after.timestamp())?,
        serial: cert.raw_serial_as_string(),
    })
}

/// A day as the messages write it, in UTC: `2026-12-20 10:00 UTC`.
pub fn date(at: Timestamp) -> String {
    at.strftime("%Y-%m-%d %H:%M UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    // A self-signed certificate made with
    // `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=unit.test
    //  -days 36500 -keyout /dev/null`, valid from 2026-12-02 to 2126-11-08.
    const CERT: &str = include_str!("../../tests/fixtures/certificates/valid-until-2126.crt");

    #[test]
    fn reads_a_certificate_after_leading_text() {
        let text = format!("a comment\n{CERT}");
        let pem = read_pem(text.as_bytes());
        assert_eq!(pem.blocks.len(), 1);
        let cert = &pem.blocks[0].certificates.as_ref().unwrap()[0];
        assert_eq!(cert.subject, "CN=unit.test");
        assert!(date(cert.not_after).starts_with("2126-"), "{cert:?}");
    }

    #[test]
    fn text_that_is_not_pem_has_no_block() {
        assert!(read_pem(b"hush hush hush\n").blocks.is_empty());
    }

    #[test]
    fn a_private_key_block_is_not_decoded() {
        let text = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n";
        let pem = read_pem(text.as_bytes());
        assert_eq!(
            pem.blocks[0].certificates,
            Err("a PRIVATE KEY block, not a certificate".to_string())
        );
    }

    #[test]
    fn a_block_of_other_bytes_is_not_a_certificate() {
        let text = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
        let pem = read_pem(text.as_bytes());
        assert!(pem.blocks[0].certificates.is_err());
    }
}
