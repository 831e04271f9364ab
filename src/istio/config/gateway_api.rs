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
        assert_eq!(parents[1].type_, "ResolvedRefs");
        assert!(conditions(&Value::Null).is_empty());
    }

    #[test]
    fn group_of_api_version() {
        assert_eq!(group_of("gateway.networking.k8s.io/v1"), GATEWAY_API_GROUP);
        assert_eq!(group_of("v1"), "");
    }
}
