//! mesh-doctor's policy coherence: PeerAuthentications and AuthorizationPolicies that are each
//! valid but do not do what they say, workload by workload and port by port.
//!
//! - MD0405: a `portLevelMtls` entry for a port none of the selected workloads listens on (the
//!   Service port instead of the `targetPort`): no effect. (Without a selector `portLevelMtls`
//!   is Istio's schema error, IST0106, and the API server's CEL rule refuses it.)
//! - MD0406, MD0407: an ALLOW (MD0406) or DENY (MD0407) policy whose rules match only callers
//!   with a peer identity, on a sidecar workload port whose effective PeerAuthentication mode is
//!   PERMISSIVE or DISABLE. Plaintext callers carry no identity: the ALLOW refuses them (403),
//!   the DENY never matches them (a bypass).
//! - MD0408, MD0409: an ALLOW policy without rules that is the only ALLOW policy of a workload
//!   (a deny-all): Info, or Warning when a VirtualService or a Gateway API route sends traffic
//!   to a Service of that workload. The recommended pattern (a deny-all with ALLOW policies on
//!   top) is not reported.
//!
//! Ambient workloads are left out of MD0406/MD0407 (ztunnel carries their identity); pods
//! without a sidecar enforce no policy, and gateways' listeners are not decided by
//! PeerAuthentication: both are left out of all of them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Input;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::authorization::{action, applying, identity_gate, rule_covers_port};
use crate::istio::config::{AuthorizationPolicy, Typed};
use crate::istio::dataplane::{Backend, Dataplane, backend_ports, is_gateway, root_namespace};
use crate::istio::mtls::{ServerDecision, ServerMode, server_mode, unused_port_levels};
use crate::istio::routing::route_to_service;

fn ports_text(ports: &BTreeSet<u32>) -> String {
    if ports.is_empty() {
        return "no declared port".into();
    }
    let list: Vec<String> = ports.iter().map(u32::to_string).collect();
    format!(
        "port{} {}",
        if list.len() > 1 { "s" } else { "" },
        list.join(", ")
    )
}

/// `mode STRICT on port 8080, set by PeerAuthentication shop/default`.
fn decision_text(decision: &ServerDecision<'_, '_>, port: Option<u32>) -> String {
    let on = port.map_or_else(String::new, |p| format!(" on port {p}"));
    let by = match decision.policy {
        Some(p) if decision.port_level => format!(
            "set by the portLevelMtls of PeerAuthentication {}/{}",
            p.namespace(),
            p.name()
        ),
        Some(p) => format!("set by PeerAuthentication {}/{}", p.namespace(), p.name()),
        None => "Istio's default, as no PeerAuthentication sets one".into(),
    };
    format!("mode {}{on}, {by}", decision.mode.as_str())
}

/// MD0405.
pub fn port_levels(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let root = root_namespace(snapshot);
    for pa in &input.config.peer_authentications {
        for entry in unused_port_levels(input.backends(), &input.config.services, pa) {
            let listing: Vec<String> = entry
                .backends
                .iter()
                .map(|(b, ports)| format!("{}: {}", b.what, ports_text(ports)))
                .collect();
            let hint = entry
                .service_port
                .as_ref()
                .map_or_else(String::new, |(svc, target)| {
                    format!(
                        "; {} is the port of Service {svc}, which sends to targetPort {target}",
                        entry.port
                    )
                });
            let (backend, ports) = &entry.backends[0];
            let port = entry
                .service_port
                .as_ref()
                .map(|(_, t)| *t)
                .or_else(|| ports.iter().next().copied());
            let decision = server_mode(
                &input.config,
                root,
                backend.namespace,
                backend.labels,
                port.unwrap_or(0),
            );
            out.push(Finding::new(
                messages::MD0405::message(
                    format!("{}/{}", pa.namespace(), pa.name()),
                    entry.mode.clone(),
                    entry.port,
                    entry.port,
                    listing.join("; "),
                    hint,
                    decision_text(&decision, port),
                ),
                Some(ResourceRef::of(pa.resource)),
            ));
        }
    }
}

/// The ports to judge a backend on: its known ports, or (none known) its workload-wide mode.
fn judged_ports(input: &Input, backend: &Backend<'_>) -> Vec<Option<u32>> {
    let ports = backend_ports(&input.config.services, backend).all();
    if ports.is_empty() {
        vec![None]
    } else {
        ports.into_iter().map(Some).collect()
    }
}

/// True when a plaintext request to `port` can match one of the ALLOW rules of `policies`.
fn plaintext_allowed(policies: &[&Typed<'_, AuthorizationPolicy>], port: Option<u32>) -> bool {
    policies
        .iter()
        .filter(|p| action(&p.spec) == "ALLOW")
        .flat_map(|p| &p.spec.rules)
        .any(|rule| {
            port.is_none_or(|port| rule_covers_port(rule, port)) && identity_gate(rule).is_empty()
        })
}

/// MD0406 and MD0407.
pub fn identity_policies(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let config = &input.config;
    let root = root_namespace(snapshot);
    let mut reported = BTreeSet::new();
    for backend in input
        .backends()
        .all()
        .iter()
        .filter(|b| b.dataplane == Dataplane::Sidecar && !is_gateway(b.labels, b.spec))
    {
        let policies = applying(config, root, backend.namespace, backend.labels);
        if policies.is_empty() {
            continue;
        }
        let ports = judged_ports(input, backend);
        for policy in &policies {
            let deny = match action(&policy.spec) {
                "ALLOW" => false,
                "DENY" => true,
                _ => continue,
            };
            let key = (policy.namespace().to_string(), policy.name().to_string());
            if reported.contains(&key) {
                continue;
            }
            let mut open: Vec<(Option<u32>, ServerDecision<'_, '_>)> = Vec::new();
            let mut fields: Vec<&'static str> = Vec::new();
            for port in &ports {
                let decision = server_mode(
                    config,
                    root,
                    backend.namespace,
                    backend.labels,
                    port.unwrap_or(0),
                );
                if decision.mode == ServerMode::Strict {
                    continue;
                }
                let gated: Vec<&'static str> = policy
                    .spec
                    .rules
                    .iter()
                    .filter(|r| port.is_none_or(|p| rule_covers_port(r, p)))
                    .flat_map(identity_gate)
                    .collect();
                if gated.is_empty() || (!deny && plaintext_allowed(&policies, *port)) {
                    continue;
                }
                for f in gated {
                    if !fields.contains(&f) {
                        fields.push(f);
                    }
                }
                open.push((*port, decision));
            }
            let Some((_, first)) = open.first() else {
                continue;
            };
            reported.insert(key);
            let disable = first.mode == ServerMode::Disable;
            let accepts = if disable {
                "only plaintext"
            } else {
                "plaintext"
            };
            let who = if disable {
                "every caller (the port does not terminate Istio's mTLS, so no request there carries an identity)"
            } else {
                "a caller without a sidecar (or from outside the mesh)"
            };
            let known: Vec<String> = open
                .iter()
                .filter_map(|(p, _)| p.map(|p| p.to_string()))
                .collect();
            let on = match known.len() {
                0 => "its ports".to_string(),
                1 => format!("port {}", known[0]),
                _ => format!("ports {}", known.join(", ")),
            };
            // MD0406 and MD0407 take the same arguments.
            let name = format!("{}/{}", policy.namespace(), policy.name());
            let fields = fields.join(", ");
            let workload = backend.what.clone();
            let mode = decision_text(first, None);
            let message = if deny {
                messages::MD0407::message(name, fields, workload, accepts, on, mode, who)
            } else {
                messages::MD0406::message(name, fields, workload, accepts, on, mode, who)
            };
            out.push(Finding::new(
                message,
                Some(ResourceRef::of(policy.resource)),
            ));
        }
    }
}

/// The workloads (or, with none, the pods) of a list, as files and live both hold them.
fn backends_text(backends: &[(String, bool)]) -> String {
    let workloads: Vec<&str> = backends
        .iter()
        .filter(|(_, w)| *w)
        .map(|(n, _)| n.as_str())
        .collect();
    if workloads.is_empty() {
        backends
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        workloads.join(", ")
    }
}

/// A deny-all policy: the backends it leaves with nothing allowed (name, is a workload), and a
/// (route, Service, backend) that sends traffic to one of them.
type DenyAll<'c, 'a> = (
    &'c Typed<'a, AuthorizationPolicy>,
    Vec<(String, bool)>,
    Option<(String, String, String)>,
);

/// MD0408 and MD0409.
pub fn allow_nothing(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let config = &input.config;
    let root = root_namespace(snapshot);
    let mut found: BTreeMap<(String, String), DenyAll<'_, '_>> = BTreeMap::new();
    // Service (`ns/name`) -> the route object that sends traffic to it, looked up once.
    let mut routes: HashMap<String, Option<String>> = HashMap::new();
    for backend in input
        .backends()
        .all()
        .iter()
        .filter(|b| matches!(b.dataplane, Dataplane::Sidecar | Dataplane::Ambient))
        .filter(|b| !is_gateway(b.labels, b.spec))
    {
        let policies = applying(config, root, backend.namespace, backend.labels);
        let allows: Vec<_> = policies
            .iter()
            .filter(|p| action(&p.spec) == "ALLOW")
            .collect();
        if allows.iter().any(|p| !p.spec.rules.is_empty()) {
            continue;
        }
        let Some(policy) = allows.first() else {
            continue;
        };
        let entry = found
            .entry((policy.namespace().to_string(), policy.name().to_string()))
            .or_insert_with(|| (**policy, Vec::new(), None));
        entry
            .1
            .push((backend.what.clone(), backend.replicas.is_some()));
        if entry.2.is_none() {
            let ports = backend_ports(&config.services, backend);
            let mut services: Vec<&str> =
                ports.services.iter().map(|s| s.service.as_str()).collect();
            services.dedup();
            for svc in services {
                let route = routes.entry(svc.to_string()).or_insert_with(|| {
                    let (ns, name) = svc.split_once('/').unwrap_or(("", svc));
                    route_to_service(config, ns, name)
                });
                if let Some(route) = route.clone() {
                    entry.2 = Some((route, format!("Service {svc}"), backend.what.clone()));
                    break;
                }
            }
        }
    }
    for (_, (policy, backends, routed)) in found {
        let name = format!("{}/{}", policy.namespace(), policy.name());
        let finding = match routed {
            Some((route, service, backend)) => Finding::new(
                messages::MD0409::message(name, backend, route, service),
                Some(ResourceRef::of(policy.resource)),
            ),
            None => Finding::new(
                messages::MD0408::message(name, backends_text(&backends)),
                Some(ResourceRef::of(policy.resource)),
            ),
        };
        out.push(finding);
    }
}
