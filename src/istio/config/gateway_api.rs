//! The Kubernetes Gateway API kinds (`gateway.networking.k8s.io`): GatewayClass, Gateway,
//! HTTPRoute, GRPCRoute, TCPRoute, TLSRoute and ReferenceGrant, read as Istio reads them.
//!
//! They are config kinds like Istio's own (custom resources, discovered live, skipped quietly
//! when the CRD is absent, typed once in [`super::Config`]) so they live beside Istio's kinds.
//! A Gateway API `Gateway` has the kind name of Istio's `networking.istio.io` Gateway: every
//! place that looks at a kind looks at its group too ([`is_gateway_api`]).
//!
//! Only the fields an analyzer reads are typed; a route's rules and a listener's TLS stay
//! untyped so that a newer Gateway API version never stops the analysis. Status conditions are
//! read from the object's `status` ([`conditions`]).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::kube::snapshot::ConfigObject;

/// The Gateway API group.
pub const GATEWAY_API_GROUP: &str = crate::kube::kind::GATEWAY_API;

// The versions read (`v1`; `v1beta1` for ReferenceGrant and the GA kinds' older versions;
// `v1alpha2` for TCPRoute and TLSRoute before `v1`) and the kinds are rows of the kind table
// (`crate::kube::kind`), as `gatewayclasses.gateway.networking.k8s.io` and so on, so that a
// Gateway API `Gateway` is never taken for Istio's `gateways`.

/// The label Istio puts on the pods of the gateway it deploys for a Gateway API Gateway.
pub const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";

/// The annotation a Gateway API CRD carries with the release it came from.
pub const BUNDLE_VERSION_ANNOTATION: &str = "gateway.networking.k8s.io/bundle-version";

/// The group of an `apiVersion` (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// True when the object is of the Gateway API group.
pub fn is_gateway_api(object: &ConfigObject) -> bool {
    group_of(&object.api_version) == GATEWAY_API_GROUP
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GatewayClass {
    pub controller_name: String,
}

/// A Gateway API `Gateway` (Istio calls the kind `KubernetesGateway`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubernetesGateway {
    pub gateway_class_name: String,
    pub listeners: Vec<Listener>,
    /// `spec.tls` (frontend client validation, backend client certificate), untyped.
    pub tls: Option<Value>,
}

/// The GatewayClasses istiod serves with Envoy and SDS, by controller (`istio.io/...`):
/// managed and unmanaged gateways, waypoints, east-west gateways.
pub const ISTIO_CONTROLLERS: &[&str] = &[
    "istio.io/gateway-controller",
    "istio.io/unmanaged-gateway",
    "istio.io/mesh-controller",
    "istio.io/eastwest-controller",
];

/// Istio's built-in GatewayClasses (`istio`, `istio-remote`, `istio-waypoint`,
/// `istio-east-west`), which need no GatewayClass object in the input.
pub const ISTIO_CLASSES: &[&str] = &["istio", "istio-remote", "istio-waypoint", "istio-east-west"];

impl KubernetesGateway {
    /// True when the Gateway's class is one of istiod's: a GatewayClass of that name with one
    /// of [`ISTIO_CONTROLLERS`], or, when none is in `classes`, a built-in class name.
    pub fn is_istios<'c>(
        &self,
        mut classes: impl Iterator<Item = (&'c str, &'c GatewayClass)>,
    ) -> bool {
        match classes.find(|(name, _)| *name == self.gateway_class_name) {
            Some((_, class)) => ISTIO_CONTROLLERS.contains(&class.controller_name.as_str()),
            None => ISTIO_CLASSES.contains(&self.gateway_class_name.as_str()),
        }
    }

    /// True when `spec.tls.frontend` gives the listeners of `port` CA certificates to verify
    /// clients with (`perPort` for the port, else `default`): Istio then takes those, not
    /// `<certificate>-cacert`.
    pub fn frontend_validation(&self, port: u32) -> bool {
        self.frontend_ca(port)
            .is_some_and(|v| !v.ca_certificate_refs.is_empty())
    }

    /// The client validation `spec.tls.frontend` gives the listeners of `port`, as Istio's
    /// `resolveGatewayTLS` picks it: the `perPort` entry of the port when there is one (even
    /// without `validation`: then none), else `default`. `None` when there is none, or when it
    /// does not fit the type (the schema checks say why).
    pub fn frontend_ca(&self, port: u32) -> Option<FrontendValidation> {
        let frontend = self.tls.as_ref()?.get("frontend")?;
        let per_port = frontend
            .get("perPort")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .find(|(_, p)| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)));
        let (tls, field, path) = match per_port {
            Some((i, p)) => (
                p.get("tls")?,
                format!("spec.tls.frontend.perPort[port {port}].tls"),
                format!("spec.tls.frontend.perPort[{i}].tls"),
            ),
            None => {
                let field = "spec.tls.frontend.default".to_string();
                (frontend.get("default")?, field.clone(), field)
            }
        };
        let mut validation = FrontendValidation::deserialize(tls.get("validation")?).ok()?;
        validation.field = format!("{field}.validation.caCertificateRefs");
        validation.path = format!("{path}.validation.caCertificateRefs");
        Some(validation)
    }
}

/// `spec.tls.frontend...validation` of a Gateway: the CA certificates a listener verifies its
/// clients with (Gateway API v1.4 and later; Istio reads the first of `caCertificateRefs`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct FrontendValidation {
    pub ca_certificate_refs: Vec<ObjectReference>,
    /// `AllowValidOnly` (the default) or `AllowInsecureFallback`.
    pub mode: Option<String>,
    /// Where it was found (`spec.tls.frontend.default.validation.caCertificateRefs`), for the
    /// messages.
    #[serde(skip)]
    pub field: String,
    /// The same as a field path (`perPort[2]`), for the line.
    #[serde(skip)]
    pub path: String,
}

impl FrontendValidation {
    /// True for `AllowInsecureFallback`: Istio makes the server `OPTIONAL_MUTUAL` and accepts
    /// client certificates it cannot verify.
    pub fn insecure_fallback(&self) -> bool {
        self.mode.as_deref() == Some("AllowInsecureFallback")
    }
}

/// A Gateway API `ObjectReference` (a `caCertificateRefs` entry): `group` and `kind` are
/// required by the CRD, so no default applies.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectReference {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl ObjectReference {
    /// The namespace of the object: its own, else the Gateway's.
    pub fn namespace_or<'a>(&'a self, gateway_namespace: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(gateway_namespace)
    }
    /// Istio's `objectReferenceString`: `group/kind/name.namespace`.
    pub fn istio_string(&self) -> String {
        format!(
            "{}/{}/{}.{}",
            self.group,
            self.kind,
            self.name,
            self.namespace.as_deref().unwrap_or("")
        )
    }
    /// The core kind it names as Istio normalizes it (`ConfigMap` or `Secret` of the group
    /// `""`), `None` for any other.
    pub fn core_kind(&self) -> Option<&'static str> {
        if !self.group.is_empty() {
            return None;
        }
        match self.kind.as_str() {
            "ConfigMap" => Some("ConfigMap"),
            "Secret" => Some("Secret"),
            _ => None,
        }
    }
}

/// A listener's `tls`, as Istio reads it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ListenerTls {
    /// `Terminate` (the default) or `Passthrough`.
    pub mode: Option<String>,
    pub certificate_refs: Vec<SecretObjectReference>,
    pub options: BTreeMap<String, String>,
}

/// The option Istio reads a terminating listener's TLS mode from (`MUTUAL`,
/// `OPTIONAL_MUTUAL`, `ISTIO_SIMPLE`, `ISTIO_MUTUAL`).
pub const TLS_TERMINATE_MODE_OPTION: &str = "gateway.istio.io/tls-terminate-mode";

/// A `certificateRefs` entry. The CRD defaults `group` to `""` (core) and `kind` to `Secret`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SecretObjectReference {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
}

impl SecretObjectReference {
    pub fn group(&self) -> &str {
        self.group.as_deref().unwrap_or("")
    }
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("Secret")
    }
    /// True for a Secret of the core group (the empty group: Istio takes no `core` for it).
    pub fn is_secret(&self) -> bool {
        self.group().is_empty() && self.kind() == "Secret"
    }
    /// The namespace of the Secret: its own, else the Gateway's.
    pub fn namespace_or<'a>(&'a self, gateway_namespace: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(gateway_namespace)
    }
    /// Istio's `secretObjectReferenceString`: `group/kind/name.namespace`, the defaults applied
    /// as the API server applies them.
    pub fn istio_string(&self) -> String {
        format!(
            "{}/{}/{}.{}",
            self.group(),
            self.kind(),
            self.name,
            self.namespace.as_deref().unwrap_or("")
        )
    }
}

impl ListenerTls {
    /// The TLS mode istiod gives the server of a terminating listener: `MUTUAL`,
    /// `OPTIONAL_MUTUAL`, `ISTIO_SIMPLE` or `ISTIO_MUTUAL` from the option, else `SIMPLE`;
    /// `None` for any other listener mode (`Passthrough`).
    pub fn terminate_mode(&self) -> Option<&str> {
        if self.mode.as_deref().unwrap_or("Terminate") != "Terminate" {
            return None;
        }
        Some(
            match self
                .options
                .get(TLS_TERMINATE_MODE_OPTION)
                .map(String::as_str)
            {
                Some(m @ ("MUTUAL" | "OPTIONAL_MUTUAL" | "ISTIO_SIMPLE" | "ISTIO_MUTUAL")) => m,
                _ => "SIMPLE",
            },
        )
    }

    /// True when istiod reads the `certificateRefs` (a terminating listener that does not
    /// use the gateway's own Istio certificate, `ISTIO_SIMPLE` or `ISTIO_MUTUAL`).
    pub fn reads_certificate_refs(&self) -> bool {
        matches!(
            self.terminate_mode(),
            Some("SIMPLE" | "MUTUAL" | "OPTIONAL_MUTUAL")
        )
    }
}

impl Listener {
    /// The listener's `tls`, typed; `None` without one, or when it does not fit the type (the
    /// schema checks say why).
    pub fn tls_config(&self) -> Option<ListenerTls> {
        ListenerTls::deserialize(self.tls.as_ref()?).ok()
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Listener {
    pub name: String,
    pub hostname: Option<String>,
    pub port: u32,
    pub protocol: String,
    pub tls: Option<Value>,
    pub allowed_routes: Option<Value>,
}

/// HTTPRoute, GRPCRoute, TCPRoute and TLSRoute: the parents they attach to and their hosts.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Route {
    pub parent_refs: Vec<ParentReference>,
    pub hostnames: Vec<String>,
    pub rules: Vec<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ParentReference {
    pub group: Option<String>,
    pub kind: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<u32>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ReferenceGrant {
    pub from: Vec<Value>,
    pub to: Vec<Value>,
}

impl ReferenceGrant {
    /// True when this grant (in the Secret's namespace) lets Gateways of `from_namespace` refer
    /// to the Secret `name` (Istio's `SecretAllowed`: a `from` of kind Gateway of the Gateway
    /// API group and that namespace, a `to` of kind Secret of the core group, with that name or
    /// none).
    pub fn allows_gateway_secret(&self, from_namespace: &str, name: &str) -> bool {
        self.allows_gateway(from_namespace, "Secret", name)
    }

    /// [`Self::allows_gateway_secret`] for an object of the core `kind` (`Secret`,
    /// `ConfigMap`).
    pub fn allows_gateway(&self, from_namespace: &str, kind: &str, name: &str) -> bool {
        fn field<'v>(v: &'v Value, key: &str) -> &'v str {
            v.get(key).and_then(Value::as_str).unwrap_or("")
        }
        let from = self.from.iter().any(|f| {
            field(f, "group") == GATEWAY_API_GROUP
                && field(f, "kind") == "Gateway"
                && field(f, "namespace") == from_namespace
        });
        let to = self.to.iter().any(|t| {
            field(t, "group").is_empty()
                && field(t, "kind") == kind
                && t.get("name")
                    .and_then(Value::as_str)
                    .is_none_or(|n| n == name)
        });
        from && to
    }
}

/// One status condition (`metav1.Condition`, or Istio's `IstioCondition`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// The conditions of `status.conditions`; an entry that is not a condition is left out.
pub fn conditions(status: &Value) -> Vec<Condition> {
    read_conditions(status.get("conditions"))
}

/// The conditions of the listener `name` in a Gateway's `status.listeners[]`.
pub fn listener_conditions(status: &Value, name: &str) -> Vec<Condition> {
    status
        .get("listeners")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|l| l.get("name").and_then(Value::as_str) == Some(name))
        .flat_map(|l| read_conditions(l.get("conditions")))
        .collect()
}

/// The conditions of every parent of a route's `status.parents[]`, in order.
pub fn parent_conditions(status: &Value) -> Vec<Condition> {
    status
        .get("parents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|p| read_conditions(p.get("conditions")))
        .collect()
}

fn read_conditions(list: Option<&Value>) -> Vec<Condition> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| Condition::deserialize(c).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_conditions_of_gateways_and_route_parents() {
        let status = serde_json::json!({
            "conditions": [{"type": "Programmed", "status": "False", "reason": "R", "message": "M"}, 5],
            "parents": [
                {"conditions": [{"type": "Accepted", "status": "False"}]},
                {"conditions": [{"type": "ResolvedRefs", "status": "True"}]}
            ]
        });
        let own = conditions(&status);
        assert_eq!(own.len(), 1);
        assert_eq!(own[0].type_, "Programmed");
        let parents = parent_conditions(&status);
        assert_eq!(parents.len(), 2);
        let gateway = serde_json::json!({"listeners": [
            {"name": "a", "conditions": [{"type": "ResolvedRefs", "status": "False", "reason": "InvalidCertificateRef"}]},
            {"name": "b", "conditions": []}
        ]});
        assert_eq!(
            listener_conditions(&gateway, "a")[0].reason,
            "InvalidCertificateRef"
        );
        assert!(listener_conditions(&gateway, "b").is_empty());
        assert_eq!(parents[1].type_, "ResolvedRefs");
        assert!(conditions(&Value::Null).is_empty());
    }

    #[test]
    fn listener_tls_and_its_references_with_the_crd_defaults() {
        let listener: Listener = serde_json::from_value(serde_json::json!({
            "name": "https", "port": 443, "protocol": "HTTPS",
            "tls": {"certificateRefs": [{"name": "a"}, {"kind": "ConfigMap", "name": "b", "namespace": "x"}],
                    "options": {"gateway.istio.io/tls-terminate-mode": "MUTUAL"}}
        }))
        .unwrap();
        let tls = listener.tls_config().unwrap();
        assert_eq!(tls.certificate_refs[0].istio_string(), "/Secret/a.");
        assert!(tls.certificate_refs[0].is_secret());
        assert_eq!(tls.certificate_refs[1].istio_string(), "/ConfigMap/b.x");
        assert!(!tls.certificate_refs[1].is_secret());
        assert_eq!(tls.certificate_refs[1].namespace_or("shop"), "x");
        assert_eq!(tls.options[TLS_TERMINATE_MODE_OPTION], "MUTUAL");
        assert_eq!(tls.terminate_mode(), Some("MUTUAL"));
        assert!(tls.reads_certificate_refs());
        let passthrough = ListenerTls {
            mode: Some("Passthrough".into()),
            ..ListenerTls::default()
        };
        assert_eq!(passthrough.terminate_mode(), None);
        let builtin = ListenerTls {
            options: [(
                TLS_TERMINATE_MODE_OPTION.to_string(),
                "ISTIO_SIMPLE".to_string(),
            )]
            .into(),
            ..ListenerTls::default()
        };
        assert!(!builtin.reads_certificate_refs());
        assert_eq!(ListenerTls::default().terminate_mode(), Some("SIMPLE"));
    }

    #[test]
    fn a_grant_allows_the_secrets_it_names_to_gateways_of_its_from_namespace() {
        let grant: ReferenceGrant = serde_json::from_value(serde_json::json!({
            "from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "edge"}],
            "to": [{"group": "", "kind": "Secret", "name": "shop-cert"}]
        }))
        .unwrap();
        assert!(grant.allows_gateway_secret("edge", "shop-cert"));
        assert!(!grant.allows_gateway_secret("edge", "other"));
        assert!(!grant.allows_gateway_secret("shop", "shop-cert"));
        let any: ReferenceGrant = serde_json::from_value(serde_json::json!({
            "from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "edge"},
                     {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "edge"}],
            "to": [{"group": "", "kind": "Secret"}]
        }))
        .unwrap();
        assert!(any.allows_gateway_secret("edge", "anything"));
    }

    #[test]
    fn istios_classes_and_frontend_validation() {
        let gw = |class: &str| KubernetesGateway {
            gateway_class_name: class.into(),
            ..KubernetesGateway::default()
        };
        let none = std::iter::empty();
        assert!(gw("istio").is_istios(none));
        assert!(!gw("envoy").is_istios(std::iter::empty()));
        let class = GatewayClass {
            controller_name: "istio.io/gateway-controller".into(),
        };
        assert!(gw("mine").is_istios([("mine", &class)].into_iter()));
        let other = GatewayClass {
            controller_name: "example.com/gateway".into(),
        };
        assert!(!gw("istio").is_istios([("istio", &other)].into_iter()));
        let tls = KubernetesGateway {
            tls: Some(serde_json::json!({"frontend": {
                "default": {"validation": {"caCertificateRefs": [{"kind": "ConfigMap", "name": "ca"}]}},
                "perPort": [{"port": 8443, "tls": {}}]
            }})),
            ..KubernetesGateway::default()
        };
        assert!(tls.frontend_validation(443));
        assert!(!tls.frontend_validation(8443));
        assert!(!gw("istio").frontend_validation(443));
        let ca = tls.frontend_ca(443).unwrap();
        assert_eq!(
            ca.field,
            "spec.tls.frontend.default.validation.caCertificateRefs"
        );
        assert_eq!(ca.ca_certificate_refs[0].istio_string(), "/ConfigMap/ca.");
        assert_eq!(ca.ca_certificate_refs[0].core_kind(), Some("ConfigMap"));
        assert!(!ca.insecure_fallback());
        assert!(tls.frontend_ca(8443).is_none());
    }

    #[test]
    fn group_of_api_version() {
        assert_eq!(group_of("gateway.networking.k8s.io/v1"), GATEWAY_API_GROUP);
        assert_eq!(group_of("v1"), "");
    }
}
