//! The network hop: NetworkPolicies between the client and the servers at the workload port
//! (the client's egress, each server's ingress), through `kube::netpol`.

use std::net::IpAddr;

use k8s_openapi::api::networking::v1::NetworkPolicy;

use super::model::{Hop, Scene, Status};
use crate::istio::config::Labels;
use crate::kube::netpol::{Allow, Destination, ports_allow};
use crate::kube::snapshot::Object;

/// One server as the network hop sees it.
pub struct ServerPeer<'s> {
    pub what: &'s str,
    pub namespace: &'s str,
    pub labels: &'s Labels,
    pub ips: &'s [IpAddr],
    /// The workload port, when known.
    pub port: Option<u32>,
}

fn namespace_labels(scene: &Scene<'_, '_>, ns: &str) -> Labels {
    let mut labels = scene
        .snapshot
        .all_namespaces()
        .find(|n| n.object.name() == ns)
        .and_then(|n| n.object.metadata.labels.clone())
        .unwrap_or_default();
    labels.insert("kubernetes.io/metadata.name".into(), ns.to_string());
    labels
}

fn types(p: &NetworkPolicy) -> (bool, bool) {
    let spec = p.spec.as_ref();
    let listed = spec.and_then(|s| s.policy_types.as_ref());
    match listed {
        Some(t) => (
            t.iter().any(|t| t == "Ingress"),
            t.iter().any(|t| t == "Egress"),
        ),
        None => (true, spec.is_some_and(|s| s.egress.is_some())),
    }
}

pub fn network(scene: &Scene<'_, '_>, serving: &[ServerPeer<'_>], service_port: u32) -> Hop {
    let c = &scene.question.client;
    let client_ns_labels = namespace_labels(scene, c.namespace);
    let client_ips: Vec<IpAddr> = c.ip.into_iter().collect();
    let selects = |p: &NetworkPolicy, labels: &Labels| {
        crate::kube::selector::matches(
            p.spec.as_ref().and_then(|s| s.pod_selector.as_ref()),
            labels,
        )
    };
    let policies: Vec<&NetworkPolicy> = scene
        .snapshot
        .network_policies
        .iter()
        .map(|p| &p.object)
        .collect();
    let mut worst = Allow::Yes;
    let mut evidence = Vec::new();
    for s in serving {
        let port = i32::try_from(s.port.unwrap_or(service_port)).unwrap_or(0);
        let server_ns_labels = namespace_labels(scene, s.namespace);
        // Egress of the client.
        let egress: Vec<&NetworkPolicy> = policies
            .iter()
            .copied()
            .filter(|p| p.namespace() == Some(c.namespace) && types(p).1 && selects(p, c.labels))
            .collect();
        if !egress.is_empty() {
            let to = Destination {
                policy_namespace: c.namespace,
                namespace: s.namespace,
                namespace_labels: &server_ns_labels,
                pod_labels: s.labels,
                addresses: s.ips,
            };
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
                    to.peers(r.to.as_deref())
                        .and(ports_allow(r.ports.as_deref(), port, "TCP"))
                })
                .max()
                .unwrap_or(Allow::No);
            if allow != Allow::Yes {
                let names: Vec<String> = egress
                    .iter()
                    .map(|p| format!("{}/{}", c.namespace, p.name()))
                    .collect();
                evidence.push(format!(
                    "egress of the client ({}): {}",
                    names.join(", "),
                    allow_text(allow)
                ));
            }
            worst = worst.and(allow);
        }
        // Ingress of the server.
        let ingress: Vec<&NetworkPolicy> = policies
            .iter()
            .copied()
            .filter(|p| p.namespace() == Some(s.namespace) && types(p).0 && selects(p, s.labels))
            .collect();
        if !ingress.is_empty() {
            let from = Destination {
                policy_namespace: s.namespace,
                namespace: c.namespace,
                namespace_labels: &client_ns_labels,
                pod_labels: c.labels,
                addresses: &client_ips,
            };
            let allow = ingress
                .iter()
                .flat_map(|p| {
                    p.spec
                        .as_ref()
                        .and_then(|s| s.ingress.as_ref())
                        .into_iter()
                        .flatten()
                })
                .map(|r| {
                    from.peers(r.from.as_deref())
                        .and(ports_allow(r.ports.as_deref(), port, "TCP"))
                })
                .max()
                .unwrap_or(Allow::No);
            if allow != Allow::Yes {
                let names: Vec<String> = ingress
                    .iter()
                    .map(|p| format!("{}/{}", s.namespace, p.name()))
                    .collect();
                evidence.push(format!(
                    "ingress of {} ({}): {}",
                    s.what,
                    names.join(", "),
                    allow_text(allow)
                ));
            }
            worst = worst.and(allow);
        }
    }
    let mut hop = match worst {
        Allow::Yes => Hop::new("network", Status::Pass, "no NetworkPolicy stops the connection"),
        Allow::Maybe => Hop::new("network", Status::Unknown, "a NetworkPolicy may stop the connection (a named port or an ipBlock without known addresses)"),
        Allow::No => Hop::new("network", Status::Fail, "NetworkPolicies drop the connection between the two pods")
            .symptom("the connection times out where the CNI enforces NetworkPolicy (503 with response flag UF from the client's sidecar after its connect timeout)")
            .fix("allow the client's pods to the server's port in the NetworkPolicies named"),
    };
    hop.evidence = evidence;
    hop
}

fn allow_text(a: Allow) -> &'static str {
    match a {
        Allow::Yes => "allowed",
        Allow::Maybe => "cannot tell",
        Allow::No => "not allowed",
    }
}
