//! Certificates that will fail, before they do (MD0410, MD0411): a Gateway's certificate chain
//! and CA certificate (the public keys of the Secrets its `credentialName` names: the
//! credential's own, and for a server that verifies clients `<credentialName>-cacert` when it
//! exists) and the mesh's
//! root certificate (the public ConfigMap `istio-ca-root-cert`, key `root-cert.pem`; the CA's
//! `cacerts` Secret is never read), judged against the time the snapshot was read: a Warning
//! within 30 days of the end of a certificate's validity, an Error after it.

use std::collections::HashSet;

use jiff::{SignedDuration, Timestamp};

use super::Input;
use super::gateway::{ca_secret, credential_secret, workload_namespace};
use crate::findings::messages::{self, MD0410, MD0411, MD0422, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::constants::{ISTIO_NAMESPACE, ROOT_CERT_CONFIG_MAP};
use crate::istio::credentials;
use crate::kube::certificate::{self, CertificateFacts};
use crate::kube::snapshot::{Located, Object, SecretKeys, Snapshot};

/// The codes of `gateway-certificates`.
pub const CODES: &[&MessageType] = &[messages::MD0410, messages::MD0411, messages::MD0422];

/// The codes of `mesh-root-certificate`.
pub const ROOT_CODES: &[&MessageType] = &[messages::MD0410, messages::MD0411];

/// How long before its end a certificate is said to expire soon.
pub const WARN_BEFORE: SignedDuration = SignedDuration::from_hours(30 * 24);

/// The ConfigMap key of the mesh's root certificate(s).
const ROOT_CERT_KEY: &str = "root-cert.pem";

/// How a certificate stands at a time.
enum Standing {
    Expired,
    ExpiresIn(SignedDuration),
}

fn standing(cert: &CertificateFacts, now: Timestamp) -> Option<Standing> {
    if now > cert.not_after {
        return Some(Standing::Expired);
    }
    let left = now.duration_until(cert.not_after);
    (left <= WARN_BEFORE).then_some(Standing::ExpiresIn(left))
}

/// `in 12 days`, `in 1 day`, `in less than a day`.
fn time_left(left: SignedDuration) -> String {
    match left.as_hours() / 24 {
        0 => "in less than a day".into(),
        1 => "in 1 day".into(),
        n => format!("in {n} days"),
    }
}

/// What a finding says of one certificate: where it is, what fails once it has expired, and
/// what to do.
struct Place<'a> {
    location: String,
    fails: &'a str,
    fix: &'a str,
}

fn finding(
    cert: &CertificateFacts,
    now: Timestamp,
    place: &Place,
    resource: ResourceRef,
) -> Option<Finding> {
    let date = certificate::date(cert.not_after);
    let message = match standing(cert, now)? {
        Standing::Expired => MD0411::message(
            cert.subject.as_str(),
            place.location.as_str(),
            date,
            place.fails,
            place.fix,
        ),
        Standing::ExpiresIn(left) => MD0410::message(
            cert.subject.as_str(),
            place.location.as_str(),
            date,
            time_left(left),
            place.fails,
            place.fix,
        ),
    };
    Some(Finding::new(message, Some(resource)))
}

const CHAIN_FAILS: &str = "its clients refuse the Gateway's TLS handshake (curl: \"SSL certificate problem: certificate has expired\"; istiod still sends it and logs \"invalid certificates\")";
const CHAIN_FIX: &str =
    "Put a renewed certificate into the Secret (the gateway picks it up without a restart).";
const CA_FAILS: &str = "the Gateway refuses the client certificates of its MUTUAL servers (the handshake ends with the TLS alert \"certificate expired\")";
const CA_FIX: &str = "Put a renewed CA certificate into the Secret.";
const CA_FIX_MAP: &str = "Put a renewed CA certificate into the ConfigMap.";
const ROOT_FAILS: &str = "sidecars, gateways and ztunnel refuse the mesh's workload certificates, which chain to it: mTLS between workloads fails (503, Envoy response flag UF, \"CERTIFICATE_VERIFY_FAILED\")";
const ROOT_FIX: &str = "Rotate the mesh's root CA (a plugged-in CA: cacerts with a new root, trusted beside the old one while workloads move over; istiod's self-signed CA: Istio's root transition guide).";

/// Where istiod reads the CA certificate of a server that verifies clients: the Secret
/// `GetCaCert` takes (`<name>-cacert` when it exists, else `<name>`), and the SDS resource it
/// logs.
pub struct CaSource<'s> {
    pub secret: &'s Located<SecretKeys>,
    /// The name of the `-cacert` Secret, when `secret` is not that one (it does not exist).
    pub fallback_from: Option<String>,
    /// The SDS resource name (`kubernetes://<credentialName>-cacert`,
    /// `kubernetes-gateway://<ns>/<name>-cacert`).
    pub resource: String,
    /// What the Secret without the suffix is to the server ("the credential's own Secret").
    pub named: &'static str,
}

/// [`CaSource::named`] of an Istio Gateway's server or a listener's `certificateRefs`.
pub const CREDENTIAL: &str = "the credential's own Secret";

impl CaSource<'_> {
    /// MD0422 for `server` of `gateway` when istiod finds no CA certificate in the Secret, or
    /// one that is no PEM certificate (istiod sends it, the gateway's Envoy rejects it).
    pub fn missing(&self, server: &str, gateway: &str, at: &ResourceRef) -> Option<Finding> {
        let ns = self.secret.object.namespace().unwrap_or("");
        let name = self.secret.object.name();
        let found = match credentials::no_root(&self.secret.object) {
            Some(why) => format!(
                "Istio finds none there: {why} (istiod logs \"failed to fetch ca certificate for {}: {why}\")",
                self.resource
            ),
            None => {
                let key = credentials::ca_key(&self.secret.object)?;
                let pem = self.secret.object.certificates.get(key)?;
                if !credentials::bundle_malformed(pem) {
                    return None;
                }
                let log = match pem.blocks.is_empty() {
                    true => format!(
                        "istiod logs \"invalid certificates: {ns}/{name} \"{}\": pem decode failed\" and ",
                        self.resource
                    ),
                    false => String::new(),
                };
                format!(
                    "its {key} holds no PEM certificate: istiod sends it all the same ({log}the gateway rejects it: \"Failed to load trusted CA certificates\")"
                )
            }
        };
        let (read, fix) = match &self.fallback_from {
            None => (
                format!(
                    "istiod reads it from Secret {ns}/{name}, which exists (so {} is not looked at), and {found}",
                    self.named
                ),
                format!(
                    "Put the clients' CA certificate (PEM) under the key cacert (or ca.crt) of Secret {ns}/{name}, or delete that Secret if {} holds it under ca.crt.",
                    self.named
                ),
            ),
            Some(cacert) => (
                format!(
                    "there is no Secret {ns}/{cacert}, so istiod reads it from the credential's own Secret {ns}/{name}, and {found}"
                ),
                format!(
                    "Put the clients' CA certificate (PEM) under the key ca.crt of Secret {ns}/{name}, or under cacert in a Secret {ns}/{cacert}."
                ),
            ),
        };
        Some(Finding::new(
            MD0422::message(server, gateway, read, fix),
            Some(at.clone()),
        ))
    }
}

/// The certificate findings of Gateways' credentials, each said once per Gateway, place and
/// certificate (two servers naming one Secret give one finding).
pub struct Judge<'o> {
    now: Timestamp,
    said: HashSet<(String, String, String, String)>,
    out: &'o mut Vec<Finding>,
}

/// What is judged in a credential: its certificate chain, or the CA certificate a server that
/// verifies clients checks them with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    Chain,
    Ca,
}

impl<'o> Judge<'o> {
    /// `None` when the snapshot has no time to judge against.
    pub fn new(snapshot: &Snapshot, out: &'o mut Vec<Finding>) -> Option<Self> {
        Some(Judge {
            now: snapshot.read_at?,
            said: HashSet::new(),
            out,
        })
    }

    /// The certificates of one part of a Secret, the credential of `gateway` (`ns/name`), said
    /// at `at`: the chain of the key pair istiod takes, or the CA certificate.
    pub fn secret(
        &mut self,
        gateway: &str,
        secret: &Located<SecretKeys>,
        part: Part,
        at: &ResourceRef,
    ) {
        let (key, fails, fix) = match part {
            Part::Chain => (
                credentials::chain_key(&secret.object),
                CHAIN_FAILS,
                CHAIN_FIX,
            ),
            Part::Ca => (credentials::ca_key(&secret.object), CA_FAILS, CA_FIX),
        };
        let Some(key) = key else { return };
        let Some(pem) = secret.object.certificates.get(key) else {
            return;
        };
        let location = format!(
            "{key} of Secret {}/{}, the credential of Gateway {gateway},",
            secret.object.namespace().unwrap_or(""),
            secret.object.name()
        );
        self.pem(gateway, pem, location, fails, fix, at);
    }

    /// The CA certificates of key `key` of a ConfigMap a Gateway API Gateway verifies clients
    /// with (`spec.tls.frontend`).
    pub fn config_map(
        &mut self,
        gateway: &str,
        map: &Located<k8s_openapi::api::core::v1::ConfigMap>,
        key: &str,
        at: &ResourceRef,
    ) {
        let text = map.object.data.as_ref().and_then(|d| d.get(key));
        let pem = certificate::read_pem(text.map_or(&[][..], |t| t.as_bytes()));
        let location = format!(
            "{key} of ConfigMap {}/{}, the client CA of Gateway {gateway},",
            map.object.namespace().unwrap_or(""),
            map.object.name()
        );
        self.pem(gateway, &pem, location, CA_FAILS, CA_FIX_MAP, at);
    }

    fn pem(
        &mut self,
        gateway: &str,
        pem: &crate::kube::certificate::PemCertificates,
        location: String,
        fails: &str,
        fix: &str,
        at: &ResourceRef,
    ) {
        let place = Place {
            location,
            fails,
            fix,
        };
        for cert in pem.all() {
            let first = self.said.insert((
                gateway.to_string(),
                place.location.clone(),
                cert.serial.clone(),
                cert.subject.clone(),
            ));
            if first {
                self.out.extend(finding(cert, self.now, &place, at.clone()));
            }
        }
    }
}

/// Analyzer `gateway-certificates`: the chains and CA certificates of Istio Gateways'
/// credentials (a server that verifies clients reads its CA certificate from the Secret
/// `<credentialName>-cacert` when it exists, else from the credential's own).
pub fn gateways(input: &Input, out: &mut Vec<Finding>) {
    let mut certificates = Vec::new();
    let mut missing = Vec::new();
    let mut judge = Judge::new(input.snapshot, &mut certificates);
    for gw in &input.config.gateways {
        let Some(gw_ns) = workload_namespace(input, gw) else {
            continue;
        };
        let gateway = format!("{}/{}", gw.namespace(), gw.name());
        for (i, server) in gw.spec.servers.iter().enumerate() {
            let Some(tls) = &server.tls else { continue };
            if tls.credential_name.is_empty() {
                continue;
            }
            let path = format!("spec.servers[{i}].tls.credentialName");
            let at = ResourceRef::of(gw.resource).at_field(gw.resource, &path);
            if let Some(secret) = credential_secret(input, gw_ns, &tls.credential_name)
                && let Some(judge) = judge.as_mut()
            {
                judge.secret(&gateway, secret, Part::Chain, &at);
            }
            if !credentials::verifies_clients(&tls.mode) {
                continue;
            }
            let Some(secret) = ca_secret(input, gw_ns, &tls.credential_name) else {
                continue;
            };
            // `GetCaCert`: the credential's own Secret only when `-cacert` does not exist.
            let cacert = credentials::ca_secret_name(&tls.credential_name);
            let cacert_name = cacert.rsplit('/').next().unwrap_or(&cacert);
            let source = CaSource {
                secret,
                fallback_from: (secret.object.name() != cacert_name)
                    .then(|| cacert_name.to_string()),
                resource: format!("kubernetes://{cacert}"),
                named: CREDENTIAL,
            };
            let server_name = format!(
                "Server {i} (port {}, tls.mode {}, credentialName {})",
                server.port.as_ref().map_or(0, |p| p.number),
                tls.mode,
                tls.credential_name
            );
            match source.missing(&server_name, &gateway, &at) {
                Some(f) => missing.push(f),
                None => {
                    if let Some(judge) = judge.as_mut() {
                        judge.secret(&gateway, secret, Part::Ca, &at);
                    }
                }
            }
        }
    }
    drop(judge);
    out.extend(missing);
    out.extend(certificates);
}

/// Analyzer `mesh-root-certificate`: the root certificate(s) in `istio-ca-root-cert`, said once
/// per certificate however many namespaces hold a copy (on `istio-system`'s when it is read).
pub fn mesh_root(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let Some(now) = snapshot.read_at else {
        return;
    };
    let mut maps: Vec<_> = snapshot
        .config_maps
        .iter()
        .filter(|cm| cm.object.name() == ROOT_CERT_CONFIG_MAP)
        .collect();
    maps.sort_by_key(|cm| cm.object.namespace() != Some(ISTIO_NAMESPACE));
    let mut said: HashSet<(String, String)> = HashSet::new();
    for cm in maps {
        let Some(text) = cm.object.data.as_ref().and_then(|d| d.get(ROOT_CERT_KEY)) else {
            continue;
        };
        let place = Place {
            location: format!(
                "{ROOT_CERT_KEY} of ConfigMap {}/{ROOT_CERT_CONFIG_MAP}, the mesh's root,",
                cm.object.namespace().unwrap_or("")
            ),
            fails: ROOT_FAILS,
            fix: ROOT_FIX,
        };
        for cert in certificate::read_pem(text.as_bytes()).all() {
            if !said.insert((cert.subject.clone(), cert.serial.clone())) {
                continue;
            }
            let reference = ResourceRef::of(cm);
            // The key's line (its name has a dot, so not a field path).
            let line = cm
                .origin
                .lines
                .as_ref()
                .and_then(|t| t.key("data")?.key(ROOT_CERT_KEY))
                .map(|t| t.line);
            let at = ResourceRef {
                line: line.or(reference.line),
                ..reference
            };
            out.extend(finding(cert, now, &place, at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(not_after: &str) -> CertificateFacts {
        CertificateFacts {
            subject: "CN=shop.example.com".into(),
            not_before: "2020-01-01T00:00:00Z".parse().unwrap(),
            not_after: not_after.parse().unwrap(),
            serial: "01".into(),
        }
    }

    #[test]
    fn thirty_days_is_soon_and_thirty_one_is_not() {
        let now: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        assert!(standing(&cert("2026-12-31T00:00:00Z"), now).is_some());
        assert!(standing(&cert("2027-01-01T00:00:00Z"), now).is_none());
        assert!(matches!(
            standing(&cert("2026-11-30T23:59:59Z"), now),
            Some(Standing::Expired)
        ));
        assert_eq!(
            time_left(SignedDuration::from_hours(23)),
            "in less than a day"
        );
        assert_eq!(time_left(SignedDuration::from_hours(49)), "in 2 days");
    }
}
