//! What the client's Envoy really holds, live: for each destination of the walk, the cluster
//! (present or not), its endpoints with their health and outlier ejections, its counters, and the
//! TLS it sends. Read through the port-forward to the admin port (15000), `/clusters` and
//! `/config_dump` for the walk's clusters only; compared with what the configuration says, as
//! one more hop, `proxy`, at the end of each destination. A cluster the configuration has and
//! Envoy lacks, or no healthy endpoint in Envoy, fails now whatever the configuration says;
//! a TLS that differs means the proxy has not received the change yet.
//!
//! On the other side, one server pod per destination (at most [`MAX_SERVERS`]): the mTLS its
//! inbound listener accepts on the workload port, against the configuration (`server-proxy`
//! hop), and its RBAC filter's counters, quoted as evidence (a failing `destination` hop quotes
//! the denials: the 403s are happening now). Istio's default stats inclusion keeps no
//! per-cluster `cluster.*` stats on sidecars, so the client's counters come from `/clusters`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::model::{Hop, ServerExpected, Status, Walk};
use crate::envoy::admin::ClusterStatus;
use crate::envoy::inbound::{InboundAccepts, RbacCounters};
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
        cluster.upgrades.clone(),
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

/// What was read from one server pod's Envoy (or why it could not be).
pub struct ServerView {
    pub namespace: String,
    pub pod: String,
    pub inbound: Result<BTreeMap<u32, InboundAccepts>, String>,
    pub rbac: Result<RbacCounters, String>,
}

/// The server pods the walk's destinations expect, at most [`MAX_SERVERS`] (one per
/// destination: one proxy each side).
pub fn wanted_servers(walk: &Walk) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for s in walk
        .ports
        .iter()
        .flat_map(|p| &p.branches)
        .filter_map(|b| b.server.as_ref())
    {
        let key = (s.namespace.clone(), s.pod.clone());
        if !out.contains(&key) && out.len() < MAX_SERVERS {
            out.push(key);
        }
    }
    out
}

/// The most server proxies one walk reads.
pub const MAX_SERVERS: usize = 4;

/// Reads the inbound listener and the RBAC counters of one server pod's Envoy.
pub async fn read_server(cluster: &Cluster, namespace: &str, pod: &str) -> ServerView {
    let client = AdminClient::new(PortForward::new(
        cluster.upgrades.clone(),
        namespace,
        pod,
        Limits::default(),
    ));
    let (inbound, rbac) = tokio::join!(client.inbound(), client.rbac_counters());
    ServerView {
        namespace: namespace.to_string(),
        pod: pod.to_string(),
        inbound: inbound.map_err(|e| e.to_string()),
        rbac: rbac.map_err(|e| e.to_string()),
    }
}

/// Adds the `server-proxy` hop to every destination whose server pod was read, and quotes its
/// RBAC denials on a failing `destination` hop.
pub fn compare_servers(walk: &mut Walk, views: &[ServerView]) {
    for port in &mut walk.ports {
        for branch in &mut port.branches {
            let Some(expected) = branch.server.clone() else {
                continue;
            };
            let Some(view) = views
                .iter()
                .find(|v| v.namespace == expected.namespace && v.pod == expected.pod)
            else {
                continue;
            };
            let hop = server_hop(&expected, view);
            if let Some(denials) = hop.evidence.iter().find(|e| e.contains("denied")).cloned()
                && let Some(dest) = branch
                    .hops
                    .iter_mut()
                    .find(|h| h.hop == "destination" && h.status == Status::Fail)
            {
                dest.evidence.push(denials);
            }
            branch.hops.push(hop);
        }
        port.outcome = super::walk::outcome_of(port);
    }
}

fn server_hop(expected: &ServerExpected, view: &ServerView) -> Hop {
    let who = format!("the server's Envoy (Pod {}/{})", view.namespace, view.pod);
    let port = expected.port;
    let mut hop = match &view.inbound {
        Err(reason) => Hop::new(
            "server-proxy",
            Status::Unknown,
            format!("{who} could not be read: {reason}"),
        ),
        Ok(inbound) => match inbound.get(&port) {
            None => Hop::new(
                "server-proxy",
                Status::Warn,
                format!("{who} has no inbound filter chain for port {port}: requests to it fall to the catch-all chains (passthrough), not to the port's own policy"),
            )
            .fix("declare the port in a Service that selects the pod (containerPort and targetPort), so that istiod builds its inbound chain"),
            Some(accepts) if accepts.mode() != expected.mode.as_str() => Hop::new(
                "server-proxy",
                Status::Warn,
                format!(
                    "{who} still accepts {} on port {port}; the configuration says {}: it has not received the change yet",
                    accepts.mode(),
                    expected.mode.as_str()
                ),
            )
            .fix("kubectl mesh-doctor proxy-status shows whether the server's proxy is STALE (istiod down or slow)"),
            Some(accepts) => Hop::new(
                "server-proxy",
                Status::Pass,
                format!("{who} accepts {} on port {port}, as configured", accepts.mode()),
            ),
        },
    };
    match &view.rbac {
        Ok(rbac) => {
            if let Some((allowed, denied)) = rbac.http.get(&port) {
                hop.evidence.push(format!(
                    "since the proxy started, its RBAC filter on port {port} allowed {allowed} and denied {denied} request(s){}",
                    if *denied > 0 { " (each denied one got 403 \"RBAC: access denied\")" } else { "" }
                ));
            }
            let (allowed, denied) = rbac.tcp;
            if allowed + denied > 0 {
                hop.evidence.push(format!(
                    "its network RBAC filter (TCP, every port) allowed {allowed} and denied {denied} connection(s){}",
                    if denied > 0 { " (each denied one was closed)" } else { "" }
                ));
            }
        }
        Err(reason) => hop
            .evidence
            .push(format!("its RBAC counters could not be read: {reason}")),
    }
    hop
}
