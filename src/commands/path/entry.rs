//! The hops from the cluster on for a ServiceEntry host: Istio's cluster `outbound|PORT||HOST`
//! when the entry declares the port, the DestinationRule that applies, the endpoints as the
//! entry's `resolution` makes them (DNS: Envoy resolves the host when it connects; STATIC: the
//! listed endpoints or the workloads a `workloadSelector` picks; NONE: the address the client
//! connected to), what the client sends (the rule's TLS; auto mTLS only reaches endpoints with a
//! sidecar, which an external host is not), the AuthorizationPolicies of selected workloads, and
//! the client's egress NetworkPolicies. An external host's own TLS and DNS are not checked.

use k8s_openapi::api::networking::v1::NetworkPolicy;

use super::model::{Expected, Hop, Scene, Status, not_reached};
use super::network::ServerPeer;
use crate::envoy::upstream_tls::UpstreamTls;
use crate::istio::config::{ServiceEntry, Typed};
use crate::istio::dataplane::{Dataplane, selected_backends};
use crate::istio::mtls::{client_tls, destination_rule};
use crate::kube::netpol::{Allow, ports_allow};
use crate::kube::snapshot::Object;

fn later(hops: &mut Vec<Hop>, from: usize) {
    for name in [
        "cluster",
        "endpoints",
        "transport",
        "destination",
        "network",
    ]
    .iter()
    .skip(from)
    {
        hops.push(not_reached(name));
    }
}

/// The hops for `host:port` (with `subset`) served by ServiceEntry `se`.
pub fn hops(
    scene: &Scene<'_, '_>,
    se: &Typed<'_, ServiceEntry>,
    host: &str,
    port: u32,
    subset: &str,
) -> (Vec<Hop>, Expected) {
    let q = scene.question;
    let sidecar = q.client.dataplane == Dataplane::Sidecar;
    let mut hops = Vec::new();
    let name = format!("ServiceEntry {}/{}", se.namespace(), se.name());
    let external = se.spec.location != "MESH_INTERNAL";
    let resolution = if se.spec.resolution.is_empty() {
        "NONE"
    } else {
        se.spec.resolution.as_str()
    };
    if !se.spec.ports.iter().any(|p| p.number == port) {
        hops.push(
            Hop::new("cluster", Status::Fail, format!("{name} does not declare port {port}: the sidecar has no cluster outbound|{port}||{host}"))
                .symptom("503 Service Unavailable from the client's sidecar (response flag NC: no cluster), or the connection goes to the PassthroughCluster")
                .fix(format!("add port {port} to {name}, or send to one of its ports")),
        );
        later(&mut hops, 1);
        return (hops, Expected::default());
    }
    let merged = sidecar
        .then(|| destination_rule(scene.config, scene.root, q.client.rule_client(), host))
        .flatten();
    if !subset.is_empty() && merged.as_ref().and_then(|m| m.subset(subset)).is_none() {
        hops.push(
            Hop::new("cluster", Status::Fail, format!("no DestinationRule for {host} visible to the client defines subset {subset}: the sidecar has no cluster outbound|{port}|{subset}|{host}"))
                .symptom("503 Service Unavailable from the client's sidecar (response flag NC: no cluster)")
                .fix(format!("add subset {subset} to the DestinationRule for {host}, or route to a subset it has")),
        );
        later(&mut hops, 1);
        return (hops, Expected::default());
    }
    hops.push(Hop::new(
        "cluster",
        Status::Pass,
        format!(
            "outbound|{port}|{subset}|{host}, {name} ({}, resolution {resolution}), {}",
            if external {
                "MESH_EXTERNAL"
            } else {
                "MESH_INTERNAL"
            },
            merged
                .as_ref()
                .map_or("no DestinationRule".to_string(), |m| format!(
                    "DestinationRule {}",
                    m.names()
                ))
        ),
    ));

    // Endpoints.
    let selected = se.spec.workload_selector.as_ref().map(|w| {
        selected_backends(scene.snapshot, se.namespace(), Some(&w.labels))
            .into_iter()
            .filter(|b| b.replicas.is_none() || !q.live)
            .collect::<Vec<_>>()
    });
    let listed = se
        .resource
        .object
        .spec
        .get("endpoints")
        .and_then(|e| e.as_array())
        .map_or(0, Vec::len);
    let endpoints = match (resolution, &selected) {
        (_, Some(backends)) if backends.is_empty() && listed == 0 => Hop::new(
            "endpoints",
            Status::Fail,
            format!(
                "the workloadSelector of {name} selects no {} in {}",
                if q.live { "pod" } else { "workload" },
                se.namespace()
            ),
        )
        .symptom("503 Service Unavailable, body \"no healthy upstream\" (response flag UH)")
        .fix("start workloads with the selector's labels, or correct the selector"),
        (_, Some(backends)) => Hop::new(
            "endpoints",
            Status::Pass,
            format!(
                "{} workload(s) selected by {name}{}",
                backends.len(),
                if listed > 0 {
                    format!(", {listed} listed endpoint(s)")
                } else {
                    String::new()
                }
            ),
        ),
        ("STATIC", None) if listed == 0 => Hop::new(
            "endpoints",
            Status::Fail,
            format!("{name} has resolution STATIC and no endpoints"),
        )
        .symptom("503 Service Unavailable, body \"no healthy upstream\" (response flag UH)")
        .fix("list the endpoints' addresses in the ServiceEntry, or use resolution DNS"),
        ("STATIC", None) => Hop::new(
            "endpoints",
            Status::Pass,
            format!("{listed} endpoint(s) listed in {name}"),
        ),
        ("DNS" | "DNS_ROUND_ROBIN", None) => Hop::new(
            "endpoints",
            Status::Pass,
            format!(
                "Envoy resolves {} by DNS when it connects (resolution {resolution}); mesh-doctor does not resolve it",
                if listed > 0 {
                    "the listed endpoints"
                } else {
                    host
                }
            ),
        ),
        _ => Hop::new(
            "endpoints",
            Status::Pass,
            "resolution NONE: the connection goes to the address the client connected to (the original destination)",
        ),
    };
    let failed = endpoints.status == Status::Fail;
    hops.push(endpoints);
    if failed {
        later(&mut hops, 2);
        return (hops, Expected::default());
    }

    // Transport: what the client sends.
    let tls =
        sidecar.then(|| client_tls(scene.config, scene.root, q.client.rule_client(), host, port));
    let mode = tls.as_ref().and_then(|t| t.mode.clone());
    let from = tls
        .as_ref()
        .and_then(|t| t.rule)
        .map(|r| format!("DestinationRule {}/{}", r.namespace(), r.name()));
    let transport = match (sidecar, mode.as_deref()) {
        (false, _) => Hop::new("transport", Status::Pass, "plaintext from the client (no sidecar): whatever the application itself sends"),
        (true, Some("ISTIO_MUTUAL")) if external => Hop::new(
            "transport",
            Status::Fail,
            format!("the client sends Istio's mTLS ({}) to {host}, outside the mesh: no sidecar there terminates it", from.clone().unwrap_or_default()),
        )
        .symptom("503 Service Unavailable, \"upstream connect error or disconnect/reset before headers\" (a TLS handshake error)")
        .fix("use tls.mode SIMPLE (TLS origination) or none for an external host"),
        (true, Some(m)) => Hop::new(
            "transport",
            Status::Pass,
            format!("tls.mode {m} ({}){}", from.clone().unwrap_or_default(), if external { "; the external server's certificate is not checked by mesh-doctor" } else { "" }),
        ),
        (true, None) => Hop::new(
            "transport",
            Status::Pass,
            if external {
                "no DestinationRule TLS: the sidecar sends what the application sends (auto mTLS reaches only endpoints with a sidecar)".to_string()
            } else {
                "auto mTLS: Istio's mTLS to the selected workloads with a sidecar, plaintext to the others".to_string()
            },
        ),
    };
    let failed = transport.status == Status::Fail;
    hops.push(transport);
    if failed {
        later(&mut hops, 3);
        return (
            hops,
            expected_client(sidecar, external, port, subset, host, mode.as_deref()),
        );
    }

    // Destination.
    let destination = match &selected {
        Some(backends) if !backends.is_empty() => {
            let policies: Vec<String> = backends
                .iter()
                .filter(|b| b.dataplane == Dataplane::Sidecar)
                .flat_map(|b| {
                    crate::istio::authorization::applying(
                        scene.config,
                        scene.root,
                        b.namespace,
                        b.labels,
                    )
                })
                .map(|p| format!("{}/{}", p.namespace(), p.name()))
                .collect();
            if policies.is_empty() {
                Hop::new(
                    "destination",
                    Status::Pass,
                    "no AuthorizationPolicy selects the workloads of the entry",
                )
            } else {
                Hop::new(
                    "destination",
                    Status::Unknown,
                    format!(
                        "AuthorizationPolicy {} select(s) the workloads of {name}: requests to ServiceEntry hosts are not evaluated against them yet",
                        policies.join(", ")
                    ),
                )
            }
        }
        _ => Hop::new(
            "destination",
            Status::Pass,
            if external {
                format!(
                    "{host} is outside the mesh: no AuthorizationPolicy of the mesh applies to it (an egress gateway's would)"
                )
            } else {
                format!("{name} selects no workload of the mesh: no AuthorizationPolicy applies")
            },
        ),
    };
    let failed = destination.status == Status::Unknown;
    hops.push(destination);
    if failed {
        later(&mut hops, 5);
        return (
            hops,
            expected_client(sidecar, external, port, subset, host, mode.as_deref()),
        );
    }
    let network = match &selected {
        Some(backends) if !backends.is_empty() => {
            let peers: Vec<ServerPeer<'_>> = backends
                .iter()
                .map(|b| ServerPeer {
                    what: &b.what,
                    namespace: b.namespace,
                    labels: b.labels,
                    ips: &[],
                    port: Some(port),
                })
                .collect();
            super::network::network(scene, &peers, port)
        }
        _ => egress(scene, port),
    };
    hops.push(network);
    (
        hops,
        expected_client(sidecar, external, port, subset, host, mode.as_deref()),
    )
}

/// What the client's Envoy holds for the entry's cluster: the rule's TLS, else auto mTLS for a
/// MESH_INTERNAL entry and plaintext for an external one (Istio builds no `tlsMode-istio` match
/// for MESH_EXTERNAL clusters, as read off the test node's sidecars).
fn expected_client(
    sidecar: bool,
    external: bool,
    port: u32,
    subset: &str,
    host: &str,
    mode: Option<&str>,
) -> Expected {
    let tls = match mode {
        None if external => UpstreamTls::Plaintext,
        _ => UpstreamTls::of_mode(mode),
    };
    Expected {
        client: sidecar.then(|| (format!("outbound|{port}|{subset}|{host}"), tls)),
        server: None,
    }
}

/// The client's egress NetworkPolicies towards an address outside the cluster's pods: a rule
/// without `to` lets it through, `ipBlock` peers may (the host's addresses are not resolved),
/// pod and namespace selectors never do.
fn egress(scene: &Scene<'_, '_>, port: u32) -> Hop {
    let c = &scene.question.client;
    let egress: Vec<&NetworkPolicy> = scene
        .snapshot
        .network_policies
        .iter()
        .map(|p| &p.object)
        .filter(|p| p.namespace() == Some(c.namespace))
        .filter(|p| {
            let spec = p.spec.as_ref();
            let listed = spec.and_then(|s| s.policy_types.as_ref());
            let is_egress = match listed {
                Some(t) => t.iter().any(|t| t == "Egress"),
                None => spec.is_some_and(|s| s.egress.is_some()),
            };
            is_egress
                && crate::kube::selector::matches(
                    spec.and_then(|s| s.pod_selector.as_ref()),
                    c.labels,
                )
        })
        .collect();
    if egress.is_empty() {
        return Hop::new(
            "network",
            Status::Pass,
            "no NetworkPolicy restricts the client's egress",
        );
    }
    let port = i32::try_from(port).unwrap_or(0);
    let allow = egress
        .iter()
        .flat_map(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.egress.as_ref())
                .into_iter()
                .flatten()
        })
        .map(|r| {
            let to = match r.to.as_deref() {
                None | Some([]) => Allow::Yes,
                Some(peers) if peers.iter().any(|p| p.ip_block.is_some()) => Allow::Maybe,
                Some(_) => Allow::No,
            };
            to.and(ports_allow(r.ports.as_deref(), port, "TCP"))
        })
        .max()
        .unwrap_or(Allow::No);
    let names: Vec<String> = egress
        .iter()
        .map(|p| format!("{}/{}", c.namespace, p.name()))
        .collect();
    match allow {
        Allow::Yes => Hop::new("network", Status::Pass, format!("the client's egress NetworkPolicies ({}) allow port {port} to any destination", names.join(", "))),
        Allow::Maybe => Hop::new("network", Status::Unknown, format!("the client's egress NetworkPolicies ({}) allow port {port} only to ipBlocks; whether the host's addresses are inside is not known (mesh-doctor does not resolve DNS)", names.join(", "))),
        Allow::No => Hop::new("network", Status::Fail, format!("the client's egress NetworkPolicies ({}) allow no traffic outside the cluster's pods on port {port}", names.join(", ")))
            .symptom("the connection times out (the packets are dropped): 503 UF, \"upstream connect error\" after the connect timeout")
            .fix("add an egress rule with an ipBlock for the host's addresses, or route through an egress gateway"),
    }
}
