//! What the client's Envoy really holds, live: for each destination of the walk, the cluster
//! (present or not), its endpoints with their health and outlier ejections, its counters, and the
//! TLS it sends. Read through the port-forward to the admin port (15000), `/clusters` and
//! `/config_dump` for the walk's clusters only; compared with what the configuration says, as
//! one more hop, `proxy`, at the end of each destination. A cluster the configuration has and
//! Envoy lacks, or no healthy endpoint in Envoy, fails now whatever the configuration says;
//! a TLS that differs means the proxy has not received the change yet.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::model::{Hop, Status, Walk};
use crate::envoy::admin::ClusterStatus;
use crate::envoy::upstream_tls::UpstreamTls;
use crate::probe::admin::AdminClient;
use crate::probe::transport::{Limits, PortForward};
use crate::source::cluster::Cluster;

/// What was read from the client's Envoy (or why it could not be).
pub struct ProxyView {
    pub clusters: Result<Vec<ClusterStatus>, String>,
    pub tls: Result<BTreeMap<String, UpstreamTls>, String>,
}

/// The Envoy clusters the walk's destinations expect.
pub fn wanted(walk: &Walk) -> Vec<String> {
    let mut names: Vec<String> = walk
        .ports
        .iter()
        .flat_map(|p| &p.branches)
        .filter_map(|b| b.expected.as_ref().map(|(name, _)| name.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Reads `/clusters` and the TLS of the `wanted` clusters from the pod's Envoy.
pub async fn read(cluster: &Cluster, pod: &Pod, wanted: &[String]) -> ProxyView {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let client = AdminClient::new(PortForward::new(
        cluster.client.clone(),
        &namespace,
        &name,
        Limits::default(),
    ));
    let regex = format!(
        "^({})$",
        wanted
            .iter()
            .map(|n| regex::escape(n))
            .collect::<Vec<_>>()
            .join("|")
    );
    let (clusters, tls) = tokio::join!(client.clusters(), client.cluster_tls(&regex));
    ProxyView {
        clusters: clusters.map_err(|e| e.to_string()),
        tls: tls.map_err(|e| e.to_string()),
    }
}

/// Adds the `proxy` hop to every destination with an expected cluster.
pub fn compare(walk: &mut Walk, view: &ProxyView) {
    for port in &mut walk.ports {
        for branch in &mut port.branches {
            let Some((name, tls)) = branch.expected.clone() else {
                continue;
            };
            branch.hops.push(proxy_hop(&name, tls, view));
        }
        port.outcome = super::walk::outcome_of(port);
    }
}

fn proxy_hop(name: &str, expected: UpstreamTls, view: &ProxyView) -> Hop {
    let clusters = match &view.clusters {
        Ok(c) => c,
        Err(reason) => {
            return Hop::new(
                "proxy",
                Status::Unknown,
                format!("the client's Envoy could not be read: {reason}"),
            );
        }
    };
    let Some(c) = clusters.iter().find(|c| c.name == name) else {
        return Hop::new(
            "proxy",
            Status::Fail,
            format!("the client's Envoy has no cluster {name}: istiod has not pushed this configuration to it yet, or the proxy rejected it"),
        )
        .symptom("503 Service Unavailable from the client's sidecar (response flag NC: no cluster) until it has it")
        .fix("kubectl mesh-doctor proxy-status shows whether the proxy is STALE or rejected the config");
    };
    let total = c.hosts.len();
    let ejected = c.hosts.iter().filter(|h| h.ejected).count();
    let healthy = c
        .hosts
        .iter()
        .filter(|h| !h.ejected && h.health.as_deref().is_none_or(|s| s == "HEALTHY"))
        .count();
    let counters = format!(
        "since the proxy started: {} request(s), {} error(s), {} connect failure(s)",
        c.hosts.iter().map(|h| h.rq_total).sum::<u64>(),
        c.hosts.iter().map(|h| h.rq_error).sum::<u64>(),
        c.connect_failures()
    );
    if healthy == 0 {
        return Hop::new(
            "proxy",
            Status::Fail,
            format!("the client's Envoy has no healthy endpoint in {name} ({total} endpoint(s), {ejected} ejected by outlier detection)"),
        )
        .evidence(counters)
        .symptom("503 Service Unavailable, body \"no healthy upstream\" (response flag UH)")
        .fix(if ejected > 0 {
            "the endpoints failed outlier detection (consecutive 5xx or gateway errors): look at the server's answers; they return after baseEjectionTime".to_string()
        } else {
            "kubectl mesh-doctor proxy-status shows whether the proxy's endpoints are STALE".to_string()
        });
    }
    let seen = view.tls.as_ref().ok().and_then(|t| t.get(name)).copied();
    let mut hop = match seen {
        Some(seen) if seen != expected => Hop::new(
            "proxy",
            Status::Warn,
            format!("the client's Envoy still sends {} to {name}; the configuration says {}: it has not received the change yet", seen.as_str(), expected.as_str()),
        )
        .fix("kubectl mesh-doctor proxy-status shows whether the proxy is STALE (istiod down or slow)"),
        _ => Hop::new(
            "proxy",
            Status::Pass,
            format!(
                "the client's Envoy holds {name}: {healthy} of {total} endpoint(s) healthy{}, TLS {}",
                if ejected > 0 { format!(", {ejected} ejected") } else { String::new() },
                seen.map_or("not read", UpstreamTls::as_str)
            ),
        ),
    };
    hop.evidence.push(counters);
    if let Err(reason) = &view.tls {
        hop.evidence
            .push(format!("its clusters' TLS could not be read: {reason}"));
    }
    hop
}
