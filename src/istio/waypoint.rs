//! Waypoints and what ztunnel enforces. A pod, its namespace or a Service asks for a waypoint
//! with the label `istio.io/use-waypoint: NAME` (the object's own label before its namespace's;
//! `none` opts out; `istio.io/use-waypoint-namespace` names the waypoint's namespace when it
//! is not the object's). The waypoint is a Gateway API Gateway of class `istio-waypoint`, which
//! istiod's gateway controller turns into a Deployment of Envoy proxies whose pods carry
//! `gateway.networking.k8s.io/gateway-name: NAME`. It carries traffic once it exists, is
//! `Programmed` and has a ready pod.
//!
//! ztunnel enforces AuthorizationPolicies that select workloads (`selector`, or none: the
//! namespace or the mesh) at L4 only. As istiod converts them for ztunnel: a policy with
//! `targetRefs` is not for ztunnel at all (a waypoint enforces it); a `CUSTOM` or `AUDIT`
//! action is not supported; HTTP attributes (operation `hosts`, `methods`, `paths` and their
//! `not` forms, source `requestPrincipals` and `remoteIpBlocks` and their `not` forms, and
//! any `when` key but `source.ip`, `source.namespace`, `source.principal`, `destination.ip`,
//! `destination.port`) cannot be seen: in an ALLOW policy the rules with them are left out, a
//! DENY policy is enforced without them; both are more restrictive than written.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::istio::config::gateway_api::{self, KubernetesGateway};
use crate::istio::config::security::AuthorizationPolicy;

/// The label that names the waypoint an object's traffic goes through.
pub const USE_WAYPOINT_LABEL: &str = "istio.io/use-waypoint";
/// The label that names the namespace of that waypoint, when it is not the object's own.
pub const USE_WAYPOINT_NAMESPACE_LABEL: &str = "istio.io/use-waypoint-namespace";
/// The GatewayClass of waypoints.
pub const WAYPOINT_CLASS: &str = "istio-waypoint";
/// The label the gateway controller puts on the pods of a Gateway's deployment.
pub const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";
/// The `when` keys ztunnel can evaluate.
const L4_WHEN_KEYS: &[&str] = &[
    "source.ip",
    "source.namespace",
    "source.principal",
    "destination.ip",
    "destination.port",
];

/// A waypoint an object asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaypointRef {
    pub namespace: String,
    pub name: String,
    /// Which label asked for it: `pod label istio.io/use-waypoint=wp`.
    pub by: String,
}

impl WaypointRef {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What the labels of an object and of its namespace say about its waypoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Use {
    Waypoint(WaypointRef),
    /// `istio.io/use-waypoint: none` on the object: no waypoint, whatever its namespace says.
    OptedOut,
    Unset,
}

/// The waypoint of an object (`what`: `pod`, `service`) in `namespace`, from its own labels,
/// else its namespace's.
pub fn waypoint_use(
    own: Option<&BTreeMap<String, String>>,
    what: &str,
    namespace_labels: Option<&BTreeMap<String, String>>,
    namespace: &str,
) -> Use {
    let pick = |labels: Option<&BTreeMap<String, String>>, who: &str| {
        let labels = labels?;
        let name = labels.get(USE_WAYPOINT_LABEL)?;
        if name == "none" {
            return Some(Use::OptedOut);
        }
        let ns = labels
            .get(USE_WAYPOINT_NAMESPACE_LABEL)
            .filter(|n| !n.is_empty())
            .map_or(namespace, String::as_str);
        Some(Use::Waypoint(WaypointRef {
            namespace: ns.to_string(),
            name: name.clone(),
            by: format!("{who} label {USE_WAYPOINT_LABEL}={name}"),
        }))
    };
    pick(own, what)
        .or_else(|| pick(namespace_labels, "namespace"))
        .unwrap_or(Use::Unset)
}

/// The label on a waypoint Gateway that says which traffic it takes.
pub const WAYPOINT_FOR_LABEL: &str = "istio.io/waypoint-for";

/// Which traffic a waypoint takes, from its Gateway's labels: `service` (the default),
/// `workload`, `all` or `none`.
pub fn traffic_for(labels: Option<&BTreeMap<String, String>>) -> &str {
    labels
        .and_then(|l| l.get(WAYPOINT_FOR_LABEL))
        .map_or("service", String::as_str)
}

/// Why a waypoint that takes `traffic` does not take the traffic of a Service
/// (`for_service`) or of a workload, or `None` when it does.
pub fn traffic_mismatch(traffic: &str, for_service: bool) -> Option<String> {
    let takes = match traffic {
        "all" => true,
        "service" => for_service,
        "workload" => !for_service,
        _ => false,
    };
    if takes {
        return None;
    }
    let (what, fix) = if for_service {
        ("a Service's traffic", "service or all")
    } else {
        ("a workload's own traffic", "workload or all")
    };
    Some(format!(
        "takes {traffic} traffic ({WAYPOINT_FOR_LABEL}: {traffic}), not {what} (set {WAYPOINT_FOR_LABEL}: {fix} on the Gateway)"
    ))
}

/// What is known of a waypoint: its Gateway (with its status), and its pods when they were read.
pub struct Observed<'a> {
    /// The Gateway API Gateway of that name, if any.
    pub gateway: Option<(&'a KubernetesGateway, &'a Value)>,
    /// The readiness of its pods; `None` when pods and statuses were not read (files).
    pub pods_ready: Option<Vec<bool>>,
}

/// Why a waypoint carries no traffic, or `None` when it does (or, from files, may).
pub fn problem(waypoint: &WaypointRef, observed: &Observed) -> Option<String> {
    let full = waypoint.full_name();
    let Some((gateway, status)) = observed.gateway else {
        return Some(format!(
            "no Gateway {full} exists (create it with: istioctl waypoint apply -n {} --name {})",
            waypoint.namespace, waypoint.name
        ));
    };
    if gateway.gateway_class_name != WAYPOINT_CLASS {
        return Some(format!(
            "Gateway {full} has gatewayClassName {:?}, not {WAYPOINT_CLASS}: it is not a waypoint",
            gateway.gateway_class_name
        ));
    }
    let pods = observed.pods_ready.as_ref()?;
    gateway_state(
        status,
        pods,
        &waypoint.name,
        "istiod's gateway controller has not taken it (is istiod running, with ambient mode?)",
    )
    .map(|why| format!("Gateway {full} {why}"))
}

/// Why a Gateway API Gateway `name` that exists, read live, carries no traffic: its controller's
/// conditions (`Accepted=False`, `Programmed` not `True`, or none: `no_programmed` says why)
/// and the readiness of its pods (`gateway.networking.k8s.io/gateway-name=NAME`). The text
/// follows "Gateway NS/NAME": `is not Programmed (Invalid: no addresses)`. `None` when it is
/// Programmed and has a ready pod.
pub fn gateway_state(
    status: &Value,
    pods: &[bool],
    name: &str,
    no_programmed: &str,
) -> Option<String> {
    let conditions = gateway_api::conditions(status);
    if let Some(c) = conditions
        .iter()
        .find(|c| c.type_ == "Accepted" && c.status == "False")
    {
        return Some(format!(
            "is not Accepted ({}: {})",
            c.reason,
            c.message.trim()
        ));
    }
    match conditions.iter().find(|c| c.type_ == "Programmed") {
        Some(c) if c.status == "True" => {}
        Some(c) => {
            return Some(format!(
                "is not Programmed ({}: {})",
                c.reason,
                c.message.trim()
            ));
        }
        None => return Some(format!("has no Programmed condition: {no_programmed}")),
    }
    if !pods.iter().any(|ready| *ready) {
        let counted = if pods.is_empty() {
            "no pod".to_string()
        } else {
            format!("{} pod(s), none ready", pods.len())
        };
        return Some(format!("has {counted} ({GATEWAY_NAME_LABEL}={name})"));
    }
    None
}

/// How the policy reaches workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyScope {
    /// `targetRef`/`targetRefs`: enforced by the waypoint (or gateway) it targets.
    Targeted,
    /// `selector`, or none (namespace, or mesh in the root namespace): enforced by ztunnel for
    /// ambient workloads.
    Workloads,
}

pub fn policy_scope(policy: &AuthorizationPolicy) -> PolicyScope {
    if policy.target_ref.is_some() || !policy.target_refs.is_empty() {
        PolicyScope::Targeted
    } else {
        PolicyScope::Workloads
    }
}

/// The kinds besides AuthorizationPolicy that only a proxy applies, with what ztunnel (which
/// carries an ambient workload's traffic at L4) does not do of them, and what is lost when no
/// waypoint applies one attached to a Service: (kind, ztunnel does not ..., so ...).
pub const PROXY_ONLY_KINDS: &[(&str, &str, &str)] = &[
    (
        "RequestAuthentication",
        "validate JWTs",
        "nothing validates the JWTs of requests to it",
    ),
    (
        "Telemetry",
        "apply Telemetry (HTTP metrics, access logs, tracing)",
        "its telemetry is not produced",
    ),
    (
        "WasmPlugin",
        "run Wasm plugins",
        "its Wasm plugin never runs",
    ),
];

/// What is lost when no waypoint applies a route for a Service (VirtualService HTTP routes,
/// HTTPRoute, GRPCRoute).
pub const ROUTES_LOST: &str =
    "requests from ambient clients do not take its routes (only clients with a sidecar apply them)";

/// The Service a mesh host names, as a VirtualService in `namespace` writes it: `name`,
/// `name.ns`, `name.ns.svc` or `name.ns.svc.<domain>`; `None` for other hosts (wildcards,
/// external names).
pub fn service_of_host<'h>(host: &'h str, namespace: &'h str) -> Option<(&'h str, &'h str)> {
    if host.contains('*') {
        return None;
    }
    let parts: Vec<&str> = host.split('.').collect();
    match parts.as_slice() {
        [name] => Some((namespace, name)),
        [name, ns] => Some((ns, name)),
        [name, ns, "svc", ..] => Some((ns, name)),
        _ => None,
    }
}

/// What ztunnel cannot enforce of a policy that selects workloads: `None` when it enforces it
/// as written (or the policy has targetRefs, which are not for ztunnel).
pub fn ztunnel_gap(policy: &AuthorizationPolicy) -> Option<String> {
    if policy_scope(policy) == PolicyScope::Targeted {
        return None;
    }
    let action = if policy.action.is_empty() {
        "ALLOW"
    } else {
        policy.action.as_str()
    };
    if matches!(action, "CUSTOM" | "AUDIT") {
        return Some(format!(
            "ztunnel does not support the {action} action, so the policy is not enforced at all"
        ));
    }
    let found = http_attributes(policy);
    if found.is_empty() {
        return None;
    }
    let effect = if action == "DENY" {
        "this DENY policy is enforced without its HTTP conditions, so it denies more than written"
    } else {
        "the rules of this ALLOW policy that use them never match, so it allows less than written"
    };
    Some(format!(
        "ztunnel does not see HTTP attributes (found: {}): {effect}",
        found.join(", ")
    ))
}

/// The HTTP attributes a policy's rules use, sorted, each once.
pub fn http_attributes(policy: &AuthorizationPolicy) -> Vec<String> {
    let mut found = std::collections::BTreeSet::new();
    for rule in policy.rules.iter() {
        for op in rule.to.iter().filter_map(|t| t.operation.as_ref()) {
            for (name, v) in [
                ("hosts", &op.hosts),
                ("notHosts", &op.not_hosts),
                ("methods", &op.methods),
                ("notMethods", &op.not_methods),
                ("paths", &op.paths),
                ("notPaths", &op.not_paths),
            ] {
                if !v.is_empty() {
                    found.insert(name.to_string());
                }
            }
        }
        for s in rule.from.iter().filter_map(|f| f.source.as_ref()) {
            for (name, v) in [
                ("requestPrincipals", &s.request_principals),
                ("notRequestPrincipals", &s.not_request_principals),
                ("remoteIpBlocks", &s.remote_ip_blocks),
                ("notRemoteIpBlocks", &s.not_remote_ip_blocks),
            ] {
                if !v.is_empty() {
                    found.insert(name.to_string());
                }
            }
        }
        for when in rule.when.iter() {
            if !L4_WHEN_KEYS.contains(&when.key.as_str()) {
                found.insert(when.key.clone());
            }
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: &[(&str, &str)]) -> BTreeMap<String, String> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_objects_label_wins_over_its_namespace_and_none_opts_out() {
        let ns = labels(&[(USE_WAYPOINT_LABEL, "ns-wp")]);
        let own = labels(&[
            (USE_WAYPOINT_LABEL, "wp"),
            (USE_WAYPOINT_NAMESPACE_LABEL, "infra"),
        ]);
        assert_eq!(
            waypoint_use(Some(&own), "pod", Some(&ns), "amb"),
            Use::Waypoint(WaypointRef {
                namespace: "infra".into(),
                name: "wp".into(),
                by: "pod label istio.io/use-waypoint=wp".into()
            })
        );
        let Use::Waypoint(w) = waypoint_use(None, "service", Some(&ns), "amb") else {
            panic!()
        };
        assert_eq!(w.full_name(), "amb/ns-wp");
        assert_eq!(w.by, "namespace label istio.io/use-waypoint=ns-wp");
        let none = labels(&[(USE_WAYPOINT_LABEL, "none")]);
        assert_eq!(
            waypoint_use(Some(&none), "pod", Some(&ns), "amb"),
            Use::OptedOut
        );
        assert_eq!(waypoint_use(None, "pod", None, "amb"), Use::Unset);
    }

    fn wp() -> WaypointRef {
        WaypointRef {
            namespace: "amb".into(),
            name: "waypoint".into(),
            by: "namespace label istio.io/use-waypoint=waypoint".into(),
        }
    }

    #[test]
    fn a_waypoint_is_usable_when_it_exists_is_programmed_and_has_a_ready_pod() {
        let gw = KubernetesGateway {
            gateway_class_name: WAYPOINT_CLASS.into(),
            listeners: vec![],
            tls: None,
        };
        let programmed = json!({"conditions": [{"type": "Programmed", "status": "True", "reason": "Programmed"}]});
        let ok = Observed {
            gateway: Some((&gw, &programmed)),
            pods_ready: Some(vec![false, true]),
        };
        assert_eq!(problem(&wp(), &ok), None);
        let missing = Observed {
            gateway: None,
            pods_ready: Some(vec![]),
        };
        assert_eq!(
            problem(&wp(), &missing).unwrap(),
            "no Gateway amb/waypoint exists (create it with: istioctl waypoint apply -n amb --name waypoint)"
        );
        let none_ready = Observed {
            gateway: Some((&gw, &programmed)),
            pods_ready: Some(vec![false]),
        };
        assert_eq!(
            problem(&wp(), &none_ready).unwrap(),
            "Gateway amb/waypoint has 1 pod(s), none ready (gateway.networking.k8s.io/gateway-name=waypoint)"
        );
        let pending = json!({"conditions": [{"type": "Programmed", "status": "False", "reason": "Invalid", "message": "no addresses "}]});
        let not_programmed = Observed {
            gateway: Some((&gw, &pending)),
            pods_ready: Some(vec![true]),
        };
        assert_eq!(
            problem(&wp(), &not_programmed).unwrap(),
            "Gateway amb/waypoint is not Programmed (Invalid: no addresses)"
        );
        // As istiod wrote it on the real node for a parametersRef to a missing ConfigMap.
        let refused = json!({"conditions": [
            {"type": "Accepted", "status": "False", "reason": "InvalidParameters", "message": "parametersRef ConfigMap wp1/no-such-params does not exist"},
            {"type": "Programmed", "status": "False", "reason": "AddressNotUsable", "message": "Failed to assign to any requested addresses"}]});
        let not_accepted = Observed {
            gateway: Some((&gw, &refused)),
            pods_ready: Some(vec![]),
        };
        assert_eq!(
            problem(&wp(), &not_accepted).unwrap(),
            "Gateway amb/waypoint is not Accepted (InvalidParameters: parametersRef ConfigMap wp1/no-such-params does not exist)"
        );
        let other = KubernetesGateway {
            gateway_class_name: "istio".into(),
            listeners: vec![],
            tls: None,
        };
        let wrong = Observed {
            gateway: Some((&other, &programmed)),
            pods_ready: None,
        };
        assert!(
            problem(&wp(), &wrong)
                .unwrap()
                .contains("not istio-waypoint")
        );
        // From files (no status, no pods read), an existing waypoint Gateway is not judged.
        let files = Observed {
            gateway: Some((&gw, &Value::Null)),
            pods_ready: None,
        };
        assert_eq!(problem(&wp(), &files), None);
    }

    #[test]
    fn which_traffic_a_waypoint_takes() {
        assert_eq!(traffic_for(None), "service");
        assert_eq!(traffic_mismatch("service", true), None);
        assert_eq!(traffic_mismatch("all", false), None);
        assert_eq!(
            traffic_mismatch("service", false).unwrap(),
            "takes service traffic (istio.io/waypoint-for: service), not a workload's own traffic (set istio.io/waypoint-for: workload or all on the Gateway)"
        );
        assert!(traffic_mismatch("none", true).is_some());
    }

    fn policy(v: Value) -> AuthorizationPolicy {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_service_a_host_names() {
        assert_eq!(
            service_of_host("reviews", "shop"),
            Some(("shop", "reviews"))
        );
        assert_eq!(
            service_of_host("reviews.web", "shop"),
            Some(("web", "reviews"))
        );
        assert_eq!(
            service_of_host("reviews.web.svc.cluster.local", "shop"),
            Some(("web", "reviews"))
        );
        assert_eq!(service_of_host("*.web.svc.cluster.local", "shop"), None);
        assert_eq!(service_of_host("api.example.com", "shop"), None);
    }

    #[test]
    fn what_ztunnel_cannot_enforce() {
        let l4 = policy(json!({"selector": {"matchLabels": {"app": "a"}}, "rules": [
            {"from": [{"source": {"principals": ["cluster.local/ns/a/sa/b"]}}],
             "to": [{"operation": {"ports": ["80"]}}], "when": [{"key": "source.ip", "values": ["1.2.3.4"]}]}]}));
        assert_eq!(ztunnel_gap(&l4), None);
        let l7 = policy(json!({"rules": [
            {"to": [{"operation": {"methods": ["GET"], "paths": ["/x"]}}]},
            {"from": [{"source": {"requestPrincipals": ["*"]}}], "when": [{"key": "request.headers[x]", "values": ["1"]}]}]}));
        assert_eq!(
            ztunnel_gap(&l7).unwrap(),
            "ztunnel does not see HTTP attributes (found: methods, paths, request.headers[x], requestPrincipals): the rules of this ALLOW policy that use them never match, so it allows less than written"
        );
        let deny = policy(
            json!({"action": "DENY", "rules": [{"to": [{"operation": {"notPaths": ["/h"]}}]}]}),
        );
        assert!(
            ztunnel_gap(&deny)
                .unwrap()
                .contains("denies more than written")
        );
        let custom = policy(json!({"action": "CUSTOM", "provider": {"name": "x"}, "rules": [{}]}));
        assert!(ztunnel_gap(&custom).unwrap().contains("CUSTOM action"));
        let targeted = policy(json!({"targetRefs": [{"kind": "Service", "name": "s"}],
            "rules": [{"to": [{"operation": {"methods": ["GET"]}}]}]}));
        assert_eq!(policy_scope(&targeted), PolicyScope::Targeted);
        assert_eq!(ztunnel_gap(&targeted), None);
    }
}
