//! The CA certificate a Gateway API listener verifies its clients with, as Istio finds it
//! (pilot/pkg/config/kube/gateway/conversion.go `buildTLS` and `buildCaCertificateReference`,
//! pilot/pkg/model/gateway.go's SDS grants, pilot/pkg/xds/sds.go):
//!
//! - `spec.tls.frontend` (the `perPort` entry of the listener's port, else `default`) with
//!   `validation.caCertificateRefs`: Istio takes the first of them, refuses more than one, and
//!   refuses a reference that is not a core ConfigMap or Secret, is not found, has no `cacert` or
//!   `ca.crt` with a value, holds no certificate Go's `AppendCertsFromPEM` adds, or is in
//!   another namespace without a ReferenceGrant (for `<name>-cacert`, the SDS resource's name);
//!   the listener is then `Accepted=False` and not served. Accepted, it makes the listener
//!   `MUTUAL` (`OPTIONAL_MUTUAL` accepting any client certificate for `AllowInsecureFallback`,
//!   unless the option says `MUTUAL` or `OPTIONAL_MUTUAL`). istiod then sends a ConfigMap's
//!   own `cacert`/`ca.crt`, and for a Secret `GetCaCert` of `<name>-cacert`: the Secret of that
//!   name when it exists, the referenced one only when it does not (seen on the real node).
//! - Without it, the option `gateway.istio.io/tls-terminate-mode`: `MUTUAL` reads the CA from
//!   `<first certificateRef>-cacert`, else that Secret; `OPTIONAL_MUTUAL` gets no CA at all:
//!   istiod grants a Gateway API gateway the `-cacert` SDS resource of its credential only for
//!   `MUTUAL` servers, and refuses it otherwise ("attempted to access unauthorized
//!   certificates"), so the gateway resets every handshake (seen on the real node).

use super::Input;
use super::certificates::{CREDENTIAL, CaSource};
use crate::istio::config::gateway_api::{KubernetesGateway, ListenerTls, SecretObjectReference};
use crate::istio::config::{ReferenceGrant, Typed};
use crate::istio::credentials;
use crate::kube::certificate::{self, PemCertificates};
use crate::kube::kind::Kind;
use crate::kube::snapshot::{Located, Object, SecretKeys};
use k8s_openapi::api::core::v1::ConfigMap;

/// Why Istio refuses a `caCertificateRefs` entry: the listener's `ResolvedRefs` reason, its
/// message, and the field.
pub struct CaRefusal {
    pub field: String,
    pub path: String,
    pub reason: &'static str,
    pub message: String,
}

/// Where a listener's client CA certificate comes from, or why it has none.
pub enum ClientCa<'s> {
    /// The listener does not verify clients.
    None,
    /// Not judged: the ConfigMaps it names could not be read.
    Unknown,
    /// Istio refuses the `caCertificateRefs` entry (MD0423).
    Refused(CaRefusal),
    /// `OPTIONAL_MUTUAL` by the option: istiod does not send the CA resource (MD0422).
    Denied { resource: String, name: String },
    /// From a Secret, as `GetCaCert` takes it; `judged` false when the listener accepts any
    /// client certificate (`AllowInsecureFallback`: the CA's dates refuse nobody).
    Secret { source: CaSource<'s>, judged: bool },
    /// From a ConfigMap's key.
    ConfigMap {
        map: &'s Located<ConfigMap>,
        key: &'static str,
        judged: bool,
    },
}

/// The Secret `ns/name` of the snapshot (only the public keys a Gateway names are kept).
pub(super) fn find_secret<'s>(
    input: &Input<'s>,
    ns: &str,
    name: &str,
) -> Option<&'s Located<SecretKeys>> {
    input
        .snapshot
        .secrets
        .iter()
        .find(|s| s.object.namespace().unwrap_or("") == ns && s.object.name() == name)
}

/// The ConfigMap `ns/name`, with the PEM of the key `ExtractRootFromString` takes, or Istio's
/// reason for taking none.
pub fn config_map_root<'s>(
    input: &Input<'s>,
    ns: &str,
    name: &str,
) -> Option<(&'s Located<ConfigMap>, Result<&'static str, String>)> {
    let map = input
        .snapshot
        .config_maps
        .iter()
        .find(|c| c.object.namespace().unwrap_or("") == ns && c.object.name() == name)?;
    Some((map, credentials::config_map_root(map.object.data.as_ref())))
}

/// The PEM of a ConfigMap's key.
fn config_map_pem(map: &ConfigMap, key: &str) -> PemCertificates {
    let text = map.data.as_ref().and_then(|d| d.get(key));
    certificate::read_pem(text.map_or(&[][..], |t| t.as_bytes()))
}

/// The `-cacert` SDS resource of a Secret of `ns`, and the Secret `GetCaCert` reads for it:
/// `<name>-cacert` when it exists, else `name`.
fn secret_source<'s>(
    input: &Input<'s>,
    ns: &str,
    name: &str,
    named: &'static str,
) -> Option<CaSource<'s>> {
    let cacert = credentials::ca_secret_name(name);
    let resource = format!("kubernetes-gateway://{ns}/{cacert}");
    if let Some(secret) = find_secret(input, ns, &cacert) {
        return Some(CaSource {
            secret,
            fallback_from: None,
            resource,
            named,
        });
    }
    Some(CaSource {
        secret: find_secret(input, ns, name)?,
        fallback_from: Some(cacert),
        resource,
        named,
    })
}

fn granted(grants: &[Typed<ReferenceGrant>], from: &str, ns: &str, kind: &str, name: &str) -> bool {
    grants
        .iter()
        .filter(|g| g.namespace() == ns)
        .any(|g| g.spec.allows_gateway(from, kind, name))
}

/// The client CA of a terminating listener on `port` whose certificateRefs Istio takes (at
/// least one; `first` is the first reference when Istio takes it).
pub fn client_ca<'s>(
    input: &Input<'s>,
    gw: &Typed<'s, KubernetesGateway>,
    port: u32,
    tls: &ListenerTls,
    first: Option<&SecretObjectReference>,
) -> ClientCa<'s> {
    let gw_ns = gw.namespace();
    let option = tls.terminate_mode().unwrap_or("SIMPLE");
    let Some(validation) = gw
        .spec
        .frontend_ca(port)
        .filter(|v| !v.ca_certificate_refs.is_empty())
    else {
        let Some(first) = first else {
            return ClientCa::None;
        };
        let ns = first.namespace_or(gw_ns);
        return match option {
            "MUTUAL" => match secret_source(input, ns, &first.name, CREDENTIAL) {
                Some(source) => ClientCa::Secret {
                    source,
                    judged: true,
                },
                None => ClientCa::None,
            },
            "OPTIONAL_MUTUAL" => ClientCa::Denied {
                resource: format!(
                    "kubernetes-gateway://{ns}/{}",
                    credentials::ca_secret_name(&first.name)
                ),
                name: credentials::ca_secret_name(&first.name),
            },
            _ => ClientCa::None,
        };
    };
    let refuse = |reason: &'static str, message: String| {
        ClientCa::Refused(CaRefusal {
            field: validation.field.clone(),
            path: validation.path.clone(),
            reason,
            message,
        })
    };
    const INVALID: &str = "InvalidCACertificateRef";
    if validation.ca_certificate_refs.len() > 1 {
        return refuse(INVALID, "only one caCertificateRef is supported".into());
    }
    let r = &validation.ca_certificate_refs[0];
    let text = r.istio_string();
    let ns = r.namespace_or(gw_ns);
    let name = r.name.as_str();
    let invalid = |why: String| {
        refuse(
            INVALID,
            format!("invalid CA certificate reference {text}, {why}"),
        )
    };
    let kind = match r.core_kind() {
        Some(kind) => kind,
        None => {
            return refuse(
                "InvalidCACertificateKind",
                format!(
                    "invalid CA certificate reference {text}, only secret and configmap are allowed"
                ),
            );
        }
    };
    let malformed = || invalid("the bundle is malformed".into());
    if kind == "ConfigMap" {
        if input.snapshot.unavailable.contains_key(&Kind::ConfigMaps) {
            return ClientCa::Unknown;
        }
        let Some((map, root)) = config_map_root(input, ns, name) else {
            return invalid(format!("configmap {ns}/{name} not found"));
        };
        let key = match root {
            Ok(key) => key,
            Err(why) => return invalid(why),
        };
        if credentials::bundle_malformed(&config_map_pem(&map.object, key)) {
            return malformed();
        }
    } else {
        let Some(secret) = find_secret(input, ns, name) else {
            return invalid(format!("secret {ns}/{name} not found"));
        };
        if let Some(why) = credentials::no_root(&secret.object) {
            return invalid(why);
        }
        let pem =
            credentials::ca_key(&secret.object).and_then(|k| secret.object.certificates.get(k));
        if pem.is_some_and(credentials::bundle_malformed) {
            return malformed();
        }
    }
    // The grant is checked for the SDS resource's name, `<name>-cacert`.
    let grants = &input.config.reference_grants;
    if ns != gw_ns && !granted(grants, gw_ns, ns, kind, &credentials::ca_secret_name(name)) {
        return refuse(
            "RefNotPermitted",
            format!(
                "caCertificateRef {ns}/{name} not accessible to a Gateway in namespace {gw_ns:?} (missing a ReferenceGrant?)"
            ),
        );
    }
    let judged = !validation.insecure_fallback() || matches!(option, "MUTUAL" | "OPTIONAL_MUTUAL");
    if kind == "ConfigMap" {
        let Some((map, Ok(key))) = config_map_root(input, ns, name) else {
            return ClientCa::Unknown;
        };
        return ClientCa::ConfigMap { map, key, judged };
    }
    match secret_source(input, ns, name, "the Secret caCertificateRefs names") {
        Some(source) => ClientCa::Secret { source, judged },
        None => ClientCa::Unknown,
    }
}
