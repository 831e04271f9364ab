//! The certificates of Gateway API Gateways (analyzer `gateway-api-certificates`): a listener's
//! `tls.certificateRefs` name Secrets whose certificates istiod serves, exactly as it serves an
//! Istio Gateway's `credentialName` (SDS resource `kubernetes-gateway://<ns>/<name>`).
//!
//! Istio's conversion of a Gateway (pilot/pkg/config/kube/gateway, `buildTLS` and
//! `buildSecretReference`) refuses a reference that is not a core Secret, names a Secret that does
//! not exist, has no key pair (`ExtractCertInfo`) or whose pair `tls.X509KeyPair` refuses, or names
//! a Secret of another namespace no ReferenceGrant allows (in that order). When every reference
//! of a listener is refused, Istio writes the listener's `ResolvedRefs=False` (reason
//! `InvalidCertificateRef`, or `RefNotPermitted`) and `Programmed=False`; when another is taken,
//! it says nothing and drops the refused one, and when the refused one is the first of two, the
//! listener gets no credential at all (Istio names it after the first, which is empty) and the
//! gateway serves its own Istio workload certificate there (seen on the real node). Either is MD0421 here, from the same data on files
//! and live; live, a listener whose status says so for a reason the data does not show (the
//! private key, which is never read) is MD0421 in Istio's words. The certificates Istio takes
//! are judged as an Istio Gateway's (MD0410, MD0411), and so is the CA certificate of a
//! `MUTUAL` or `OPTIONAL_MUTUAL` listener (the option `gateway.istio.io/tls-terminate-mode`):
//! from `<first certificateRef>-cacert` when that Secret exists, else from the first Secret.
//! Istio does not check a certificate's dates when it converts a Gateway, so an expired one is
//! MD0411 alone.

use super::Input;
use super::certificates::{Judge, Part};
use super::gateway_api_client_ca::{ClientCa, client_ca, find_secret};
use crate::findings::messages::{self, MD0421, MD0422, MD0423, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::gateway_api::{
    KubernetesGateway, ListenerTls, SecretObjectReference, TLS_TERMINATE_MODE_OPTION,
    listener_conditions,
};
use crate::istio::config::{GatewayClass, Typed};
use crate::istio::credentials;
use crate::kube::snapshot::{Located, SecretKeys};

/// The codes of the analyzer.
pub const CODES: &[&MessageType] = &[
    messages::MD0410,
    messages::MD0411,
    messages::MD0421,
    messages::MD0422,
    messages::MD0423,
];

/// The listener condition reasons Istio gives a refused certificate reference.
const INVALID_REF: &str = "InvalidCertificateRef";
const NOT_PERMITTED: &str = "RefNotPermitted";

/// Why Istio refuses a reference: the listener condition's reason and Istio's message.
struct Refusal {
    reason: String,
    message: String,
}

fn refusal(reason: &str, message: String) -> Refusal {
    Refusal {
        reason: reason.to_string(),
        message,
    }
}

/// True when a ReferenceGrant in `secret_ns` lets the Gateways of `gateway_ns` use the Secret.
fn granted(input: &Input, gateway_ns: &str, secret_ns: &str, name: &str) -> bool {
    input
        .config
        .reference_grants
        .iter()
        .filter(|g| g.namespace() == secret_ns)
        .any(|g| g.spec.allows_gateway_secret(gateway_ns, name))
}

/// Istio's `buildSecretReference`, then its ReferenceGrant check, for one reference.
fn check<'s>(
    input: &Input<'s>,
    gateway_ns: &str,
    reference: &SecretObjectReference,
) -> Result<&'s Located<SecretKeys>, Refusal> {
    let text = reference.istio_string();
    if !reference.is_secret() {
        return Err(refusal(
            INVALID_REF,
            format!("invalid certificate reference {text}, only secret is allowed"),
        ));
    }
    let ns = reference.namespace_or(gateway_ns);
    let name = reference.name.as_str();
    let Some(secret) = find_secret(input, ns, name) else {
        return Err(refusal(
            INVALID_REF,
            format!("invalid certificate reference {text}, secret {ns}/{name} not found"),
        ));
    };
    if let Some(why) = credentials::no_pair(&secret.object) {
        return Err(refusal(
            INVALID_REF,
            format!("invalid certificate reference {text}, {why}"),
        ));
    }
    let chain =
        credentials::chain_key(&secret.object).and_then(|k| secret.object.certificates.get(k));
    if let Some(why) = chain.and_then(credentials::key_pair_refused) {
        return Err(refusal(
            INVALID_REF,
            format!("invalid certificate reference {text}, the certificate is malformed: {why}"),
        ));
    }
    if ns != gateway_ns && !granted(input, gateway_ns, ns, name) {
        return Err(refusal(
            NOT_PERMITTED,
            format!(
                "certificateRef {name}/{ns} not accessible to a Gateway in namespace {gateway_ns:?} (missing a ReferenceGrant?)"
            ),
        ));
    }
    Ok(secret)
}

fn not_programmed(reason: &str) -> String {
    format!(
        "Istio sets the listener's conditions ResolvedRefs=False (reason {reason}) and Programmed=False (\"Bad TLS configuration\") and serves none of its certificates: the gateway resets the TLS handshakes for the listener."
    )
}

const DROPPED: &str = "Istio takes the listener's other certificate and drops this one without a word (the listener's ResolvedRefs condition stays True): clients that need this certificate (RSA or ECDSA) do not get it.";

/// The first of two references refused, the second taken: Istio's conversion then names the
/// listener's credential after the first, which is empty (`credNames[0]`), so the listener has
/// none of its Secrets and the gateway serves its own Istio workload certificate there.
const FIRST_DROPPED: &str = "Istio leaves the listener's conditions True but, the refused reference being the first, gives the listener no certificate of its Secrets, not even the other one: the gateway serves its own Istio workload certificate (a spiffe:// identity signed by the mesh's CA) for it, which clients do not trust.";

/// True when the Gateway is one istiod serves (its class is Istio's).
fn istios(input: &Input, gateway: &KubernetesGateway) -> bool {
    let classes = input
        .config
        .gateway_classes
        .iter()
        .map(|c| (c.name(), &c.spec as &GatewayClass));
    gateway.is_istios(classes)
}

/// One listener: its refused references (MD0421) and the certificates Istio takes.
struct Listener<'a, 'i, 's> {
    input: &'i Input<'s>,
    gw: &'a Typed<'s, KubernetesGateway>,
    index: usize,
    name: &'a str,
    port: u32,
    tls: ListenerTls,
}

impl Listener<'_, '_, '_> {
    fn at(&self, reference: Option<usize>) -> ResourceRef {
        let path = match reference {
            Some(j) => format!(
                "spec.listeners[{}].tls.certificateRefs[{j}].name",
                self.index
            ),
            None => format!("spec.listeners[{}].tls", self.index),
        };
        ResourceRef::of(self.gw.resource).at_field(self.gw.resource, &path)
    }

    fn refused(&self, refusal: &Refusal, effect: String, at: ResourceRef) -> Finding {
        let gateway = format!("{}/{}", self.gw.namespace(), self.gw.name());
        Finding::new(
            MD0421::message(self.name, gateway, refusal.message.as_str(), effect),
            Some(at),
        )
    }

    /// What Istio's `buildTLS` makes of the references: the findings of those it refuses, and
    /// the certificates it takes, judged.
    fn analyze(&self, refused: &mut Vec<Finding>, judge: Option<&mut Judge>) {
        let refs = &self.tls.certificate_refs;
        if refs.len() > 2 {
            let why = refusal(
                INVALID_REF,
                "TLS mode can only support up to 2 server certificates".into(),
            );
            refused.push(self.refused(&why, not_programmed(INVALID_REF), self.at(None)));
            return;
        }
        let ns = self.gw.namespace();
        let results: Vec<_> = refs.iter().map(|r| check(self.input, ns, r)).collect();
        let taken = results.iter().filter(|r| r.is_ok()).count();
        let errors: Vec<(usize, &Refusal)> = results
            .iter()
            .enumerate()
            .filter_map(|(j, r)| r.as_ref().err().map(|e| (j, e)))
            .collect();
        if errors.is_empty() {
            // Nothing refused that the data shows: the status may say otherwise (the key).
            if self.reported(refused) {
                return;
            }
        } else if taken == 0 {
            // Istio joins the messages; the reason is the first one's.
            let joined = Refusal {
                reason: errors[0].1.reason.clone(),
                message: errors
                    .iter()
                    .map(|(_, e)| e.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            let effect = not_programmed(&joined.reason);
            refused.push(self.refused(&joined, effect, self.at(Some(errors[0].0))));
            return;
        }
        let first_taken = results.first().is_some_and(Result::is_ok);
        for (j, e) in &errors {
            let effect = if first_taken { DROPPED } else { FIRST_DROPPED };
            refused.push(self.refused(e, effect.into(), self.at(Some(*j))));
        }
        if taken == 0 {
            // No certificateRefs at all: Istio looks no further.
            return;
        }
        let gateway = format!("{}/{}", ns, self.gw.name());
        // The client CA (Istio looks at it once a certificate is taken).
        let first = refs.first().filter(|_| first_taken);
        let ca = client_ca(self.input, self.gw, self.port, &self.tls, first);
        match &ca {
            ClientCa::Refused(why) => {
                refused.push(Finding::new(
                    MD0423::message(
                        self.name,
                        gateway.as_str(),
                        why.field.as_str(),
                        why.message.as_str(),
                        why.reason,
                        self.port,
                    ),
                    Some(self.at_path(&why.path)),
                ));
                // The listener is not served: none of its certificates is.
                return;
            }
            ClientCa::Denied { resource, name } => {
                refused.push(Finding::new(
                    MD0422::message(
                        self.server(),
                        gateway.as_str(),
                        format!(
                            "istiod refuses to send the gateway the CA resource {resource}: for a Gateway API listener it allows that resource only in MUTUAL mode (istiod logs \"proxy <gateway pod> attempted to access unauthorized certificates {name}: cross namespace secret reference requires ReferenceGrant\", though the Secret is in the Gateway's namespace)"
                        ),
                        "Name the clients' CA in the Gateway's spec.tls.frontend (default or perPort) validation.caCertificateRefs and keep the option: Istio then sends it and the listener stays OPTIONAL_MUTUAL; or use MUTUAL.",
                    ),
                    Some(self.at(Some(0))),
                ));
            }
            ClientCa::Secret { source, .. } => {
                refused.extend(source.missing(&self.server(), &gateway, &self.at_ca()));
            }
            _ => {}
        }
        // Served: the certificates taken, unless the first was refused (then none is).
        let Some(judge) = judge.filter(|_| first_taken) else {
            return;
        };
        for (j, result) in results.iter().enumerate() {
            if let Ok(secret) = result {
                judge.secret(&gateway, secret, Part::Chain, &self.at(Some(j)));
            }
        }
        match ca {
            ClientCa::Secret {
                source,
                judged: true,
            } if source.missing("", "", &self.at_ca()).is_none() => {
                judge.secret(&gateway, source.secret, Part::Ca, &self.at_ca());
            }
            ClientCa::ConfigMap {
                map,
                key,
                judged: true,
            } => judge.config_map(&gateway, map, key, &self.at_ca()),
            _ => {}
        }
    }

    /// How MD0422 names the listener.
    fn server(&self) -> String {
        format!(
            "Listener {:?} (port {}, {})",
            self.name,
            self.port,
            match self.gw.spec.frontend_validation(self.port) {
                true => "spec.tls.frontend validation".to_string(),
                false => format!(
                    "option {TLS_TERMINATE_MODE_OPTION} {}",
                    self.tls.terminate_mode().unwrap_or("SIMPLE")
                ),
            }
        )
    }

    /// Where the client CA is named: the frontend's caCertificateRefs, else the first
    /// certificateRef.
    fn at_ca(&self) -> ResourceRef {
        match self.gw.spec.frontend_ca(self.port) {
            Some(v) if !v.ca_certificate_refs.is_empty() => self.at_path(&v.path),
            _ => self.at(Some(0)),
        }
    }

    /// A field of the Gateway.
    fn at_path(&self, path: &str) -> ResourceRef {
        ResourceRef::of(self.gw.resource).at_field(self.gw.resource, path)
    }

    /// The listener's status, when Istio wrote a refused reference there that the data does
    /// not show (live: the private key); true when it did (Istio then takes no certificate).
    fn reported(&self, refused: &mut Vec<Finding>) -> bool {
        let before = refused.len();
        for c in listener_conditions(&self.gw.resource.object.status, self.name) {
            // A refused caCertificateRef is MD0423's, from the data.
            let ours = (c.reason == INVALID_REF || c.reason == NOT_PERMITTED)
                && !c.message.starts_with("caCertificateRef ");
            if c.type_ == "ResolvedRefs" && c.status == "False" && ours {
                let why = refusal(&c.reason, c.message.clone());
                let effect = format!(
                    "Istio reports it in the listener's status (ResolvedRefs=False, reason {}) and serves none of the listener's certificates: the gateway resets the TLS handshakes for the listener.",
                    c.reason
                );
                refused.push(self.refused(&why, effect, self.at(None)));
            }
        }
        refused.len() > before
    }
}

/// Analyzer `gateway-api-certificates`.
pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    let mut refused = Vec::new();
    let mut certificates = Vec::new();
    let mut judge = Judge::new(input.snapshot, &mut certificates);
    for gw in &input.config.k8s_gateways {
        if !istios(input, &gw.spec) {
            continue;
        }
        for (index, l) in gw.spec.listeners.iter().enumerate() {
            let Some(tls) = l.tls_config() else { continue };
            if !tls.reads_certificate_refs() {
                continue;
            }
            let listener = Listener {
                input,
                gw,
                index,
                name: &l.name,
                port: l.port,
                tls,
            };
            listener.analyze(&mut refused, judge.as_mut());
        }
    }
    drop(judge);
    out.extend(refused);
    out.extend(certificates);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::kube::snapshot::Snapshot;
    use crate::source::files::{FileOptions, LoadStats, load_text};

    const CERT: &str = include_str!("../../tests/fixtures/certificates/valid-until-2126.crt");

    fn findings(text: &str) -> Vec<Finding> {
        let mut snapshot = Snapshot::default();
        load_text(
            text,
            Arc::from("t.yaml"),
            false,
            &FileOptions::default(),
            &mut snapshot,
            &mut LoadStats::default(),
        )
        .unwrap();
        let input = Input::of(&snapshot);
        let mut out = Vec::new();
        analyze(&input, &mut out);
        out
    }

    fn gateway(status: &str) -> String {
        let cert: String = CERT.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: edge, namespace: edge}}\n\
             spec:\n  gatewayClassName: istio\n  listeners:\n  - name: https\n    port: 443\n    protocol: HTTPS\n\
             \x20   tls:\n      certificateRefs:\n      - {{name: c}}\n{status}---\n\
             apiVersion: v1\nkind: Secret\nmetadata: {{name: c, namespace: edge}}\nstringData:\n  tls.crt: |\n{cert}  tls.key: not a key\n"
        )
    }

    #[test]
    fn a_refusal_only_the_status_shows_is_said_in_istios_words() {
        let message = "invalid certificate reference /Secret/c., the certificate is malformed: tls: failed to find any PEM data in key input";
        let found = findings(&gateway(&format!(
            "status:\n  listeners:\n  - name: https\n    conditions:\n    - {{type: ResolvedRefs, status: \"False\", reason: InvalidCertificateRef, message: \"{message}\"}}\n"
        )));
        assert_eq!(found.len(), 1, "{found:?}");
        let text = &found[0].message;
        assert!(
            text.contains(message)
                && text.contains("Istio reports it in the listener's status (ResolvedRefs=False, reason InvalidCertificateRef)"),
            "{text}"
        );
        // Without that status, the same data is accepted.
        assert!(findings(&gateway("")).is_empty());
    }
}
