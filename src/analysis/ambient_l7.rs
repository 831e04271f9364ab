//! Ambient mode beyond AuthorizationPolicy (analyzer `ambient-l7`, files and live): the kinds
//! only a proxy applies. A RequestAuthentication, Telemetry or WasmPlugin whose `selector`
//! matches ambient workloads (which have no proxy: ztunnel carries their traffic at L4) is
//! applied by nothing (MD0412). One attached with `targetRefs` to a Service of an ambient
//! namespace, a VirtualService with HTTP routes for such a Service, and an HTTPRoute or
//! GRPCRoute whose parent is such a Service are applied only by the Service's waypoint: when it
//! has no usable one, MD0413 (ambient clients skip them; sidecar clients still apply routes).
//! It also runs [`gateway_targets`] (a policy attached to a Gateway that applies nothing:
//! MD0115) and [`ambient_wide`] (a namespace-wide one in an ambient namespace no proxy
//! applies: MD0420).

use super::ambient::{AmbientWorkload, Reads, ambient_workloads, service_without_waypoint};
use super::{Input, ambient_wide, gateway_targets};
use crate::findings::messages::{self, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{Labels, PolicyTargetRef};
use crate::istio::waypoint::{PROXY_ONLY_KINDS, ROUTES_LOST, service_of_host};
use crate::kube::selector::labels_match;
use crate::kube::snapshot::{ConfigObject, Located, Object};

/// The codes of this analyzer.
pub const CODES: &[&MessageType] = &[
    messages::MD0115,
    messages::MD0412,
    messages::MD0413,
    messages::MD0420,
];

/// One object of a proxy-only kind, reduced to how it attaches.
struct Attached<'a> {
    resource: &'a Located<ConfigObject>,
    /// The `selector`'s labels, when it has a non-empty one.
    selector: Option<&'a Labels>,
    target_refs: Vec<&'a PolicyTargetRef>,
}

pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let reads = Reads::of(snapshot);
    let workloads = ambient_workloads(input);
    let c = &input.config;
    let mut attached: Vec<(&str, Attached)> = Vec::new();
    for r in &c.request_authentications {
        attached.push((
            "RequestAuthentication",
            Attached {
                resource: r.resource,
                selector: Some(&r.spec.selector.match_labels),
                target_refs: r
                    .spec
                    .target_refs
                    .iter()
                    .chain(&r.spec.target_ref)
                    .collect(),
            },
        ));
    }
    for t in &c.telemetries {
        attached.push((
            "Telemetry",
            Attached {
                resource: t.resource,
                selector: t.spec.selector.as_ref().map(|s| &s.match_labels),
                target_refs: t
                    .spec
                    .target_refs
                    .iter()
                    .chain(&t.spec.target_ref)
                    .collect(),
            },
        ));
    }
    for w in &c.wasm_plugins {
        attached.push((
            "WasmPlugin",
            Attached {
                resource: w.resource,
                selector: w.spec.selector.as_ref().map(|s| &s.match_labels),
                target_refs: w
                    .spec
                    .target_refs
                    .iter()
                    .chain(&w.spec.target_ref)
                    .collect(),
            },
        ));
    }
    for (kind, a) in &attached {
        let skips = lost(kind, 1);
        let ns = a.resource.object.namespace().unwrap_or("");
        let name = format!("{ns}/{}", a.resource.object.name());
        if !a.target_refs.is_empty() {
            if !reads.gateways {
                continue;
            }
            for r in a.target_refs.iter().filter(|r| r.kind == "Service") {
                let target_ns = if r.namespace.is_empty() {
                    ns
                } else {
                    r.namespace.as_str()
                };
                if let Some(why) = service_without_waypoint(input, &reads, target_ns, &r.name) {
                    out.push(without_waypoint(
                        kind,
                        &name,
                        a.resource,
                        &format!("{target_ns}/{}", r.name),
                        &why,
                        lost(kind, 2),
                    ));
                }
            }
            continue;
        }
        let Some(selector) = a.selector.filter(|s| !s.is_empty()) else {
            continue;
        };
        let selected: Vec<String> = workloads
            .iter()
            .filter(|w: &&AmbientWorkload| w.namespace == ns && labels_match(selector, w.labels))
            .map(|w| w.name.clone())
            .collect();
        if selected.is_empty() {
            continue;
        }
        out.push(Finding::new(
            messages::MD0412::message(
                kind.to_string(),
                name,
                crate::formats::text::join_names(&selected),
                skips,
            ),
            Some(ResourceRef::of(a.resource)),
        ));
    }
    gateway_targets::analyze(input, &reads, out);
    ambient_wide::analyze(input, &reads, &workloads, out);
    if !reads.gateways {
        return;
    }
    routes(input, &reads, out);
}

/// What ztunnel does not do of a kind (`part` 1), or what is lost without a waypoint (2).
fn lost(kind: &str, part: usize) -> &'static str {
    PROXY_ONLY_KINDS
        .iter()
        .find(|(k, ..)| *k == kind)
        .map_or("", |(_, skips, lost)| if part == 1 { skips } else { lost })
}

fn without_waypoint(
    kind: &str,
    name: &str,
    resource: &Located<ConfigObject>,
    service: &str,
    why: &str,
    lost: &str,
) -> Finding {
    Finding::new(
        messages::MD0413::message(
            kind.to_string(),
            name.to_string(),
            service.to_string(),
            why.to_string(),
            lost.to_string(),
        ),
        Some(ResourceRef::of(resource)),
    )
}

/// MD0413 for routes: VirtualServices with HTTP routes bound to the mesh, HTTPRoutes and
/// GRPCRoutes with a Service parent.
fn routes(input: &Input, reads: &Reads, out: &mut Vec<Finding>) {
    let c = &input.config;
    for vs in &c.virtual_services {
        let mesh = vs.spec.gateways.is_empty() || vs.spec.gateways.iter().any(|g| g == "mesh");
        if !mesh || vs.spec.http.is_empty() {
            continue;
        }
        let ns = vs.namespace();
        let name = format!("{ns}/{}", vs.name());
        let mut seen = Vec::new();
        for host in &vs.spec.hosts {
            let Some((sns, sname)) = service_of_host(host, ns) else {
                continue;
            };
            let service = format!("{sns}/{sname}");
            if seen.contains(&service) {
                continue;
            }
            if let Some(why) = service_without_waypoint(input, reads, sns, sname) {
                out.push(without_waypoint(
                    "VirtualService",
                    &name,
                    vs.resource,
                    &service,
                    &why,
                    ROUTES_LOST,
                ));
            }
            seen.push(service);
        }
    }
    for (kind, list) in [("HTTPRoute", &c.http_routes), ("GRPCRoute", &c.grpc_routes)] {
        for route in list {
            let ns = route.namespace();
            let name = format!("{ns}/{}", route.name());
            for parent in &route.spec.parent_refs {
                let core = parent
                    .group
                    .as_deref()
                    .is_none_or(|g| g.is_empty() || g == "core");
                if parent.kind.as_deref() != Some("Service") || !core {
                    continue;
                }
                let pns = parent.namespace.as_deref().unwrap_or(ns);
                if let Some(why) = service_without_waypoint(input, reads, pns, &parent.name) {
                    out.push(without_waypoint(
                        kind,
                        &name,
                        route.resource,
                        &format!("{pns}/{}", parent.name),
                        &why,
                        ROUTES_LOST,
                    ));
                }
            }
        }
    }
}
