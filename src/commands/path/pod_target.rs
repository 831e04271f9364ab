//! A pod as the target (`pod/NAME[.NS][:PORT]`): a request to the pod's IP, not to a Service.
//! As the test node's sidecars show: the client's sidecar finds no Service host for the IP, so
//! with `ALLOW_ANY` it passes the connection through (PassthroughCluster): no VirtualService, no
//! DestinationRule and no Istio mTLS, whatever the pod; with `REGISTRY_ONLY` it blocks it (502
//! from an HTTP listener of the port, else the connection is closed). The pod's sidecar then
//! gets plaintext: a STRICT port resets it, and its AuthorizationPolicies see no identity.

use k8s_openapi::api::core::v1::Pod;

use super::hops::{Server, authorization};
use super::model::{Branch, Hop, PortWalk, Scene, ServerExpected, Status, not_reached};
use super::network::{self, ServerPeer};
use crate::istio::dataplane::{Dataplane, dataplane};
use crate::istio::mtls::{ServerMode, server_mode};
use crate::istio::routing;
use crate::kube::snapshot::{Located, Object};

static EMPTY: crate::istio::config::Labels = crate::istio::config::Labels::new();

/// The ports to walk: `port`, else the pod's declared TCP container ports (80 when none is).
pub fn ports(pod: &Pod, port: Option<u32>) -> Vec<u32> {
    if let Some(p) = port {
        return vec![p];
    }
    let mut out: Vec<u32> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter(|c| c.name != crate::istio::dataplane::PROXY_CONTAINER)
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.protocol.as_deref().is_none_or(|x| x == "TCP"))
        .filter_map(|p| u32::try_from(p.container_port).ok())
        .collect();
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        out.push(80);
    }
    out
}

/// The walk of one port of the pod (its outcome is decided by the caller).
pub fn walk_port(scene: &Scene<'_, '_>, pod: &Located<Pod>, port: u32, http: bool) -> PortWalk {
    let q = scene.question;
    let c = &q.client;
    let meta = &pod.object.metadata;
    let ns = pod.object.namespace().unwrap_or_default();
    let ip = pod
        .object
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .and_then(|ip| ip.parse::<std::net::IpAddr>().ok());
    let address = ip.map_or("its IP".to_string(), |ip| ip.to_string());
    let mut walk = PortWalk {
        port,
        protocol: "tcp (pod IP)".to_string(),
        hops: Vec::new(),
        branches: Vec::new(),
        outcome: super::model::Outcome {
            status: Status::Pass,
            summary: String::new(),
            hop: None,
        },
    };

    // Source.
    let source = match c.dataplane {
        Dataplane::Ambient => Hop::new(
            "source",
            Status::Unknown,
            format!(
                "{} is in ambient mode: ztunnel carries its traffic, and mesh-doctor does not walk ambient paths yet",
                c.what
            ),
        ),
        Dataplane::None => Hop::new(
            "source",
            Status::Pass,
            format!(
                "{} has no sidecar: it connects to {address}:{port} in plaintext, straight to the pod",
                c.what
            ),
        ),
        Dataplane::Sidecar if c.proxy_ready == Some(false) => Hop::new(
            "source",
            Status::Fail,
            format!(
                "the sidecar of {} is not ready: it has no configuration to send the request with",
                c.what
            ),
        )
        .symptom("connections are refused or reset until istio-proxy is ready"),
        Dataplane::Sidecar => {
            let sidecar =
                routing::sidecar_resource(scene.config, scene.root, c.namespace, c.labels);
            let (mode, from) = sidecar
                .and_then(|s| {
                    s.spec
                        .outbound_traffic_policy
                        .as_ref()
                        .map(|p| p.mode.clone())
                        .filter(|m| !m.is_empty())
                        .map(|m| (m, format!("Sidecar {}/{}", s.namespace(), s.name())))
                })
                .or_else(|| {
                    scene
                        .snapshot
                        .mesh_config
                        .as_ref()
                        .and_then(|m| m.pointer("/outboundTrafficPolicy/mode")?.as_str())
                        .map(|m| (m.to_string(), "the mesh config".to_string()))
                })
                .unwrap_or(("ALLOW_ANY".into(), "Istio's default".into()));
            if mode == "REGISTRY_ONLY" {
                Hop::new(
                    "source",
                    Status::Fail,
                    format!("a pod IP is no host of the client's registry, and its outboundTrafficPolicy is REGISTRY_ONLY ({from}): the sidecar blocks the connection (BlackHoleCluster)"),
                )
                .symptom("502 Bad Gateway from the client's sidecar when the mesh has an HTTP port with this number (its HTTP listener), else the connection is closed")
                .fix(format!("send to a Service in front of the pod, or allow the address in a ServiceEntry ({from})"))
            } else {
                Hop::new(
                    "source",
                    Status::Pass,
                    format!(
                        "{} has a sidecar; a pod IP is no Service host, so with outboundTrafficPolicy {mode} ({from}) it passes the connection through (PassthroughCluster): no VirtualService, DestinationRule or Istio mTLS applies",
                        c.what
                    ),
                )
            }
        }
    };
    let stop = matches!(source.status, Status::Fail | Status::Unknown);
    walk.hops.push(source);
    if stop {
        walk.hops.push(not_reached("route"));
        return walk;
    }
    walk.hops.push(Hop::new(
        "route",
        Status::Pass,
        format!("to {address}:{port} directly: no route applies"),
    ));

    // The pod as the endpoint.
    let labels = meta.labels.as_ref().unwrap_or(&EMPTY);
    let plane = dataplane(scene.snapshot, meta, pod.object.spec.as_ref(), !q.live);
    let what = format!("Pod {ns}/{}", pod.object.name());
    let mut hops = Vec::new();
    let phase = pod
        .object
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Unknown");
    let endpoint = if !q.live {
        Hop::new(
            "endpoints",
            Status::Pass,
            format!("{what} (from files: its state is not known)"),
        )
    } else if meta.deletion_timestamp.is_some() {
        Hop::new("endpoints", Status::Fail, format!("{what} is terminating"))
            .symptom("the connection is refused once its containers stop")
    } else if phase != "Running" || ip.is_none() {
        Hop::new(
            "endpoints",
            Status::Fail,
            format!(
                "{what} is not running (phase {phase}){}",
                if ip.is_none() { ", and has no IP" } else { "" }
            ),
        )
        .symptom("the connection times out or is refused")
        .fix(format!(
            "kubectl mesh-doctor pod {} -n {ns} says why",
            pod.object.name()
        ))
    } else {
        Hop::new(
            "endpoints",
            Status::Pass,
            format!("{what} runs at {address}"),
        )
    };
    let failed = endpoint.status == Status::Fail;
    hops.push(endpoint);
    let mut server_expected = None;
    if !failed {
        // Transport: plaintext, always (the passthrough has no Istio mTLS).
        let transport = match plane {
            Dataplane::Sidecar => {
                let d = server_mode(scene.config, scene.root, ns, labels, port);
                let by = d
                    .policy
                    .map_or("no PeerAuthentication: PERMISSIVE".to_string(), |p| {
                        format!("PeerAuthentication {}/{}", p.namespace(), p.name())
                    });
                if q.live {
                    server_expected = Some(ServerExpected {
                        namespace: ns.to_string(),
                        pod: pod.object.name().to_string(),
                        port,
                        mode: d.mode,
                    });
                }
                if d.mode == ServerMode::Strict {
                    Hop::new(
                        "transport",
                        Status::Fail,
                        format!("the connection to a pod IP arrives in plaintext; {what} requires Istio's mTLS on port {port} ({by})"),
                    )
                    .symptom("the server's sidecar resets the connection: 503 Service Unavailable, \"upstream connect error or disconnect/reset before headers. reset reason: connection termination\" from the client's sidecar when it handles the port as HTTP, else no answer")
                    .fix("send to the Service in front of the pod (its cluster carries Istio's mTLS), or make the port PERMISSIVE")
                } else {
                    Hop::new(
                        "transport",
                        Status::Pass,
                        format!(
                            "plaintext, accepted by {what} ({} on port {port}, {by}): the server sees no client identity",
                            d.mode.as_str()
                        ),
                    )
                }
            }
            Dataplane::Ambient => Hop::new(
                "transport",
                Status::Unknown,
                format!("{what} is in ambient mode: ztunnel's side is not walked"),
            ),
            Dataplane::None => Hop::new(
                "transport",
                Status::Pass,
                format!("plaintext to {what}, which has no sidecar"),
            ),
        };
        let stop = transport.status != Status::Pass;
        hops.push(transport);
        if stop {
            for name in ["destination", "network"] {
                hops.push(not_reached(name));
            }
        } else {
            let server = Server {
                what: what.clone(),
                namespace: ns,
                labels,
                dataplane: plane,
                ips: ip.into_iter().collect(),
                port: Some(port),
                replicas: None,
            };
            let dest = authorization(scene, &[&server], None, port, http, &address);
            let stop = matches!(dest.status, Status::Fail | Status::Unknown);
            hops.push(dest);
            if stop {
                hops.push(not_reached("network"));
            } else {
                let peer = ServerPeer {
                    what: &server.what,
                    namespace: ns,
                    labels,
                    ips: &server.ips,
                    port: Some(port),
                };
                hops.push(network::network(scene, &[peer], port));
            }
        }
    } else {
        for name in ["transport", "destination", "network"] {
            hops.push(not_reached(name));
        }
    }
    walk.branches.push(Branch {
        destination: format!("{what} {address}:{port}"),
        weight: 100,
        hops,
        expected: None,
        server: server_expected,
    });
    walk
}
