//! The hops of one destination of the route: cluster, endpoints, transport, destination and
//! network (see [`super::walk`]).

use std::collections::BTreeSet;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{PodSpec, Service};

use super::model::{Expected, Hop, Known, Scene, ServerExpected, Status, known, not_reached};
use super::network;
use crate::envoy::upstream_tls::UpstreamTls;
use crate::istio::authorization::{self, Call, HttpCall, Peer, Verdict};
use crate::istio::config::{ClientTls, Labels, TrafficPolicy};
use crate::istio::dataplane::{Dataplane, dataplane, service_backends, target_port, trust_domain};
use crate::istio::mtls::{ServerMode, destination_rule, hidden_rule, server_mode};
use crate::kube::snapshot::{Located, Object};

/// One pod, or one workload's pod template, that serves the destination.
pub(super) struct Server<'s> {
    pub what: String,
    pub namespace: &'s str,
    pub labels: &'s Labels,
    pub dataplane: Dataplane,
    pub ips: Vec<IpAddr>,
    /// The workload port the Service port sends to.
    pub port: Option<u32>,
    /// Replicas of a template (`None` for a pod).
    pub replicas: Option<i32>,
}

static EMPTY: Labels = Labels::new();

/// The ready endpoints of a Service port (live), as (pod name, IP).
fn ready_endpoints(
    scene: &Scene<'_, '_>,
    svc: &Located<Service>,
    port_name: &str,
) -> (Vec<(String, IpAddr)>, usize) {
    let ns = svc.object.namespace();
    let mut ready = Vec::new();
    let mut not_ready = 0;
    for slice in scene.snapshot.endpoint_slices.iter().map(|s| &s.object) {
        if slice.namespace() != ns
            || slice.label("kubernetes.io/service-name") != Some(svc.object.name())
        {
            continue;
        }
        let serves = slice.ports.as_ref().is_none_or(|ports| {
            ports
                .iter()
                .any(|p| p.name.as_deref().unwrap_or("") == port_name)
        });
        if !serves {
            continue;
        }
        for e in &slice.endpoints {
            let is_ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
            let pod = e
                .target_ref
                .as_ref()
                .and_then(|t| t.name.clone())
                .unwrap_or_default();
            for a in &e.addresses {
                if let Ok(ip) = a.parse::<IpAddr>() {
                    if is_ready {
                        ready.push((pod.clone(), ip));
                    } else {
                        not_ready += 1;
                    }
                }
            }
        }
    }
    (ready, not_ready)
}

/// The servers behind a Service: live, the pods of its ready endpoints; from files, the pods
/// and workload templates its selector picks.
fn servers<'s>(
    scene: &Scene<'s, '_>,
    svc: &'s Located<Service>,
    service_port: u32,
) -> (Vec<Server<'s>>, usize) {
    let snapshot = scene.snapshot;
    let ns = svc.object.namespace().unwrap_or("");
    let spec = svc.object.spec.as_ref();
    let port = spec.and_then(|s| s.ports.as_ref()).and_then(|ports| {
        ports
            .iter()
            .find(|p| u32::try_from(p.port).ok() == Some(service_port))
    });
    let port_name = port.and_then(|p| p.name.clone()).unwrap_or_default();
    let workload_port = |spec: Option<&PodSpec>| port.and_then(|p| target_port(p, spec));
    if scene.question.live {
        let (ready, not_ready) = ready_endpoints(scene, svc, &port_name);
        let mut out = Vec::new();
        for (name, ip) in ready {
            let pod = snapshot
                .all_pods()
                .find(|p| p.object.name() == name && p.object.namespace() == Some(ns));
            let (labels, pod_spec, plane) = match pod {
                Some(p) => (
                    p.object.metadata.labels.as_ref().unwrap_or(&EMPTY),
                    p.object.spec.as_ref(),
                    dataplane(snapshot, &p.object.metadata, p.object.spec.as_ref(), false),
                ),
                None => (&EMPTY, None, Dataplane::None),
            };
            out.push(Server {
                what: if name.is_empty() {
                    format!("endpoint {ip}")
                } else {
                    format!("Pod {ns}/{name}")
                },
                namespace: ns,
                labels,
                dataplane: plane,
                ips: vec![ip],
                port: workload_port(pod_spec),
                replicas: None,
            });
        }
        return (out, not_ready);
    }
    let out = service_backends(snapshot, svc)
        .into_iter()
        .map(|b| Server {
            port: workload_port(b.spec),
            what: b.what,
            namespace: ns,
            labels: b.labels,
            dataplane: b.dataplane,
            ips: Vec::new(),
            replicas: b.replicas,
        })
        .collect();
    (out, 0)
}

fn policy_text(p: Option<&TrafficPolicy>) -> Vec<String> {
    let Some(p) = p else { return Vec::new() };
    let mut out = Vec::new();
    for (name, v) in [
        ("loadBalancer", &p.load_balancer),
        ("outlierDetection", &p.outlier_detection),
        ("connectionPool", &p.connection_pool),
    ] {
        if let Some(v) = v {
            out.push(format!("{name} {v}"));
        }
    }
    out
}

/// The TLS settings of a traffic policy for a port: its port-level settings, else its own.
fn tls_of(policy: Option<&TrafficPolicy>, port: u32) -> Option<(&ClientTls, bool)> {
    let p = policy?;
    p.port_level_settings
        .iter()
        .find(|s| s.port.as_ref().is_some_and(|sp| sp.number == port))
        .and_then(|s| s.tls.as_ref())
        .filter(|t| !t.mode.is_empty())
        .map(|t| (t, true))
        .or_else(|| {
            p.tls
                .as_ref()
                .filter(|t| !t.mode.is_empty())
                .map(|t| (t, false))
        })
}

/// The hops from the cluster on, for one destination `host:port` (with `subset`), and what the
/// client's Envoy should hold for it.
pub fn destination(
    scene: &Scene<'_, '_>,
    host: &str,
    port: u32,
    subset: &str,
    http: bool,
) -> (Vec<Hop>, Expected) {
    let q = scene.question;
    let mut hops = Vec::new();
    let sidecar = q.client.dataplane == Dataplane::Sidecar;
    let later = |hops: &mut Vec<Hop>, from: usize| {
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
    };

    // Cluster.
    let svc = match known(scene, host, q.client.namespace) {
        Known::Service(svc) => svc,
        Known::Entry(se) => return super::entry::hops(scene, se, host, port, subset),
        Known::Unknown => {
            hops.push(
                Hop::new("cluster", Status::Fail, format!("the route sends to {host}, which is neither a Service nor a ServiceEntry host: the sidecar has no cluster for it"))
                    .symptom("503 Service Unavailable from the client's sidecar (response flag NC: no cluster)")
                    .fix(format!("correct the destination host {host} in the VirtualService, or add the Service")),
            );
            later(&mut hops, 1);
            return (hops, Expected::default());
        }
    };
    let declared = svc
        .object
        .spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .any(|p| u32::try_from(p.port).ok() == Some(port));
    if !declared {
        hops.push(
            Hop::new("cluster", Status::Fail, format!("the route sends to port {port} of {host}, which the Service does not declare: the sidecar has no cluster outbound|{port}||{host}"))
                .symptom("503 Service Unavailable from the client's sidecar (response flag NC: no cluster)")
                .fix("send to one of the Service's ports (destination.port in the VirtualService)"),
        );
        later(&mut hops, 1);
        return (hops, Expected::default());
    }
    // The rule as Istio merges the rules of one namespace and host.
    let merged = if sidecar {
        destination_rule(scene.config, scene.root, q.client.rule_client(), host)
    } else {
        None
    };
    let subset_spec = if subset.is_empty() {
        None
    } else {
        match merged.as_ref().and_then(|m| m.subset(subset)) {
            Some((s, _)) => Some(s),
            None => {
                let hidden = merged
                    .is_none()
                    .then(|| hidden_rule(scene.config, scene.root, q.client.rule_client(), host))
                    .flatten();
                let why = match (&merged, &hidden) {
                    (Some(m), _) if m.from.len() > 1 => format!(
                        "DestinationRules {} (merged) have no subset {subset}",
                        m.names()
                    ),
                    (Some(m), _) => format!("DestinationRule {} has no subset {subset}", m.names()),
                    (None, Some((selectors, hidden))) => format!(
                        "the client uses no DestinationRule for {host}: namespace {}'s rules for it ({}) are for the workloads a workloadSelector selects, not for it, and Istio then looks no further (not at {}{})",
                        q.client.namespace,
                        selectors.join(", "),
                        hidden.names(),
                        if hidden.subset(subset).is_some() {
                            format!(", which defines subset {subset}")
                        } else {
                            String::new()
                        },
                    ),
                    (None, None) => {
                        format!("no DestinationRule for {host} defines subset {subset}")
                    }
                };
                let fix = match &hidden {
                    Some(_) => format!(
                        "give namespace {} a DestinationRule for {host} without workloadSelector (and without exportTo [\".\"]), with subset {subset} (MD0418, MD0419)",
                        q.client.namespace
                    ),
                    None => format!(
                        "add subset {subset} to the DestinationRule for {host}, or route to a subset it has"
                    ),
                };
                hops.push(
                    Hop::new("cluster", Status::Fail, format!("{why}: the sidecar has no cluster outbound|{port}|{subset}|{host}"))
                        .symptom("503 Service Unavailable from the client's sidecar (response flag NC: no cluster)")
                        .fix(fix),
                );
                later(&mut hops, 1);
                return (hops, Expected::default());
            }
        }
    };
    let mut cluster = match &merged {
        Some(m) => Hop::new(
            "cluster",
            Status::Pass,
            format!(
                "outbound|{port}|{subset}|{host}, DestinationRule{} {}",
                if m.from.len() > 1 { "s" } else { "" },
                m.names()
            ),
        ),
        None if sidecar => Hop::new(
            "cluster",
            Status::Pass,
            format!("outbound|{port}|{subset}|{host}, no DestinationRule"),
        ),
        None => Hop::new(
            "cluster",
            Status::Pass,
            format!("the Service {host} port {port} (no sidecar: kube-proxy)"),
        ),
    };
    if let Some(s) = subset_spec {
        let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        cluster.evidence.push(format!(
            "subset {subset}: pods labelled {}",
            labels.join(",")
        ));
    }
    let top_policy = merged.as_ref().and_then(|m| m.traffic_policy());
    cluster
        .evidence
        .extend(policy_text(top_policy.map(|(p, _)| p)));
    cluster.evidence.extend(policy_text(
        subset_spec.and_then(|s| s.traffic_policy.as_ref()),
    ));
    hops.push(cluster);
    let client_tls = if sidecar {
        tls_of(subset_spec.and_then(|s| s.traffic_policy.as_ref()), port)
            .map(|(t, _)| (t.mode.clone(), format!("subset {subset}")))
            .or_else(|| {
                let (p, r) = top_policy?;
                tls_of(Some(p), port).map(|(t, lvl)| {
                    (
                        t.mode.clone(),
                        format!(
                            "DestinationRule {}/{}{}",
                            r.namespace(),
                            r.name(),
                            if lvl { " portLevelSettings" } else { "" }
                        ),
                    )
                })
            })
    } else {
        None
    };
    let mut server_expected: Option<ServerExpected> = None;
    let expected = sidecar.then(|| {
        (
            format!("outbound|{port}|{subset}|{host}"),
            UpstreamTls::of_mode(client_tls.as_ref().map(|(m, _)| m.as_str())),
        )
    });

    // Endpoints.
    let (all, not_ready) = servers(scene, svc, port);
    let subset_labels = subset_spec.map(|s| &s.labels);
    let in_subset = |labels: &Labels| {
        subset_labels.is_none_or(|want| want.iter().all(|(k, v)| labels.get(k) == Some(v)))
    };
    let chosen: Vec<&Server<'_>> = all.iter().filter(|s| in_subset(s.labels)).collect();
    let fit = |s: &&Server<'_>| s.replicas.is_none_or(|r| r > 0);
    let serving: Vec<&Server<'_>> = chosen.iter().copied().filter(fit).collect();
    if serving.is_empty() {
        let subset_note = if subset.is_empty() {
            String::new()
        } else {
            format!(" in subset {subset}")
        };
        let (status, summary) = if !q.live && all.is_empty() {
            (
                Status::Unknown,
                format!(
                    "no workload in the files is selected by Service {host}: its endpoints are not known from the files"
                ),
            )
        } else if q.live {
            let others = if all.is_empty() || subset.is_empty() {
                String::new()
            } else {
                format!("; {} ready endpoint(s) outside the subset", all.len())
            };
            (
                Status::Fail,
                format!("no ready endpoint{subset_note} ({not_ready} not ready{others})"),
            )
        } else {
            (
                Status::Fail,
                format!(
                    "no workload in the files{subset_note} will be an endpoint (none matches, or zero replicas)"
                ),
            )
        };
        let mut hop = Hop::new("endpoints", status, summary);
        if status == Status::Fail {
            hop = hop
                .symptom("503 Service Unavailable, body \"no healthy upstream\" (response flag UH)")
                .fix(if subset.is_empty() {
                    "start pods that the Service selects, and make them ready".to_string()
                } else {
                    format!("label the pods of the Service with subset {subset}'s labels, or change the subset's labels")
                });
        }
        hops.push(hop);
        later(&mut hops, 2);
        return (
            hops,
            Expected {
                client: expected,
                server: server_expected,
            },
        );
    }
    let names: Vec<String> = serving.iter().take(5).map(|s| s.what.clone()).collect();
    let more = if serving.len() > 5 {
        format!(" and {} more", serving.len() - 5)
    } else {
        String::new()
    };
    hops.push(Hop::new(
        "endpoints",
        Status::Pass,
        format!(
            "{} {}: {}{more}",
            serving.len(),
            if q.live {
                "ready endpoint(s)"
            } else {
                "workload(s) in the files"
            },
            names.join(", ")
        ),
    ));

    // Transport.
    let mut mtls_to_all = true;
    let mut transport = None;
    for s in &serving {
        let Some(wport) = s.port else {
            transport = Some(Hop::new(
                "transport",
                Status::Unknown,
                format!(
                    "the workload port of {} for service port {port} is not known (a named targetPort no container declares)",
                    s.what
                ),
            ));
            break;
        };
        let server = server_mode(scene.config, scene.root, s.namespace, s.labels, wport);
        if q.live
            && server_expected.is_none()
            && s.dataplane == Dataplane::Sidecar
            && let Some(pod) = s.what.strip_prefix("Pod ").and_then(|p| p.split_once('/'))
        {
            server_expected = Some(ServerExpected {
                namespace: pod.0.to_string(),
                pod: pod.1.to_string(),
                port: wport,
                mode: server.mode,
            });
        }
        let by = server
            .policy
            .map_or("no PeerAuthentication: PERMISSIVE".to_string(), |p| {
                format!("PeerAuthentication {}/{}", p.namespace(), p.name())
            });
        let mode = server.mode;
        let sends = match (&client_tls, sidecar) {
            (_, false) => "plaintext (no client sidecar)".to_string(),
            (None, true) => "auto mTLS".to_string(),
            (Some((m, from)), true) => format!("tls.mode {m} ({from})"),
        };
        let fail = |summary: String, symptom: &str, fix: String| {
            Some(
                Hop::new("transport", Status::Fail, summary)
                    .symptom(symptom)
                    .fix(fix),
            )
        };
        let reset = "503 Service Unavailable, \"upstream connect error or disconnect/reset before headers. reset reason: connection termination\" (the server's sidecar closes the connection)";
        let hop = match (s.dataplane, client_tls.as_ref().map(|(m, _)| m.as_str()), sidecar) {
            (Dataplane::Ambient, _, _) => Some(Hop::new("transport", Status::Unknown, format!("{} is in ambient mode: ztunnel's side is not walked", s.what))),
            (Dataplane::Sidecar, _, false) if mode == ServerMode::Strict => {
                mtls_to_all = false;
                fail(
                    format!("the client has no sidecar and sends plaintext; {} requires mTLS on port {wport} ({by})", s.what),
                    "the connection is reset by the server's sidecar (curl: \"Recv failure: Connection reset by peer\")",
                    "inject a sidecar into the client, or make the server's PeerAuthentication PERMISSIVE for this port".to_string(),
                )
            }
            (Dataplane::Sidecar, Some("DISABLE" | "SIMPLE" | "MUTUAL"), true) if mode == ServerMode::Strict => fail(
                format!("the client sends {sends}; {} requires Istio's mTLS on port {wport} ({by}) [MD0401]", s.what),
                reset,
                "set the DestinationRule's tls.mode to ISTIO_MUTUAL (or remove it: auto mTLS), or relax the PeerAuthentication".to_string(),
            ),
            (Dataplane::Sidecar, Some("ISTIO_MUTUAL"), true) if mode == ServerMode::Disable => fail(
                format!("the client sends Istio's mTLS ({sends}); {} has mTLS DISABLE on port {wport} ({by}) [MD0402]", s.what),
                reset,
                "remove tls.mode ISTIO_MUTUAL from the DestinationRule (auto mTLS), or enable mTLS on the server".to_string(),
            ),
            (Dataplane::None, Some("ISTIO_MUTUAL"), true) => fail(
                format!("the client sends Istio's mTLS ({sends}) to {}, which has no sidecar to terminate it [MD0402]", s.what),
                reset,
                "remove tls.mode ISTIO_MUTUAL (auto mTLS sends plaintext to pods without a sidecar), or inject the server".to_string(),
            ),
            (Dataplane::Sidecar, Some("DISABLE" | "SIMPLE" | "MUTUAL"), true) => {
                mtls_to_all = false;
                None
            }
            (Dataplane::None, _, _) => {
                mtls_to_all = false;
                None
            }
            (Dataplane::Sidecar, _, false) => {
                mtls_to_all = false;
                None
            }
            (Dataplane::Sidecar, _, true) if mode == ServerMode::Disable => {
                mtls_to_all = false;
                None
            }
            _ => None,
        };
        if let Some(h) = hop {
            transport = Some(h);
            break;
        }
    }
    let transport = transport.unwrap_or_else(|| {
        let how = if mtls_to_all {
            "Istio's mTLS: the server sees the client's identity".to_string()
        } else {
            "plaintext or other TLS: the server sees no client identity".to_string()
        };
        let sends = match &client_tls {
            _ if !sidecar => "plaintext (no client sidecar)".to_string(),
            None => "auto mTLS".to_string(),
            Some((m, from)) => format!("tls.mode {m} ({from})"),
        };
        Hop::new("transport", Status::Pass, format!("{sends}: {how}"))
    });
    let failed = transport.status != Status::Pass;
    hops.push(transport);
    if failed {
        later(&mut hops, 3);
        return (
            hops,
            Expected {
                client: expected,
                server: server_expected,
            },
        );
    }

    // Destination: the server's sidecar and its AuthorizationPolicies.
    let principal = (mtls_to_all && sidecar).then(|| {
        format!(
            "{}/ns/{}/sa/{}",
            trust_domain(scene.snapshot),
            q.client.namespace,
            q.client.service_account
        )
    });
    let dest = authorization(scene, &serving, principal, port, http, host);
    let failed = matches!(dest.status, Status::Fail | Status::Unknown);
    hops.push(dest);
    if failed {
        later(&mut hops, 4);
        return (
            hops,
            Expected {
                client: expected,
                server: server_expected,
            },
        );
    }

    // Network.
    let servers: Vec<network::ServerPeer<'_>> = serving
        .iter()
        .map(|s| network::ServerPeer {
            what: &s.what,
            namespace: s.namespace,
            labels: s.labels,
            ips: &s.ips,
            port: s.port,
        })
        .collect();
    hops.push(network::network(scene, &servers, port));
    (
        hops,
        Expected {
            client: expected,
            server: server_expected,
        },
    )
}

/// The `destination` hop: the AuthorizationPolicies of the servers with a sidecar, evaluated for
/// this request from the client with `principal` (`None`: plaintext, no identity), as Istio
/// evaluates them (CUSTOM, DENY, ALLOW); the servers without a sidecar enforce none.
pub(super) fn authorization(
    scene: &Scene<'_, '_>,
    serving: &[&Server<'_>],
    principal: Option<String>,
    port: u32,
    http: bool,
    host: &str,
) -> Hop {
    let q = scene.question;
    let peer = Peer {
        principal: principal.clone(),
        ip: q.client.ip,
    };
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut dest_hop = None;
    let mut unenforced = Vec::new();
    for s in serving {
        let key = format!("{}{:?}", s.namespace, s.labels);
        if !seen.insert(key) {
            continue;
        }
        let policies = authorization::applying(scene.config, scene.root, s.namespace, s.labels);
        if s.dataplane != Dataplane::Sidecar {
            if !policies.is_empty() {
                let names: Vec<String> = policies
                    .iter()
                    .map(|p| format!("{}/{}", p.namespace(), p.name()))
                    .collect();
                unenforced.push(format!(
                    "{} has no sidecar: AuthorizationPolicy {} is not enforced on it",
                    s.what,
                    names.join(", ")
                ));
            }
            continue;
        }
        let wport = s.port.unwrap_or(port);
        let headers = &q.request.headers;
        let call = Call {
            port: wport,
            http: http.then_some(HttpCall {
                host: if q.request.authority.is_empty() {
                    host
                } else {
                    &q.request.authority
                },
                method: &q.request.method,
                path: &q.request.path,
                headers,
            }),
        };
        let who = principal
            .clone()
            .map_or("a plaintext client (no identity)".to_string(), |p| {
                format!("principal {p}")
            });
        let denied = "403 Forbidden, body \"RBAC: access denied\" from the server's sidecar";
        let hop = match authorization::evaluate(&policies, &peer, &call) {
            Verdict::Allowed { .. } => None,
            Verdict::Denied { policy } => Some(
                Hop::new(
                    "destination",
                    Status::Fail,
                    format!(
                        "AuthorizationPolicy {}/{} (DENY) matches this request from {who} to {}",
                        policy.namespace(),
                        policy.name(),
                        s.what
                    ),
                )
                .symptom(denied)
                .fix(format!(
                    "narrow the DENY rules of {}/{}",
                    policy.namespace(),
                    policy.name()
                )),
            ),
            Verdict::NotAllowed { policies } => {
                let names: Vec<String> = policies
                    .iter()
                    .map(|p| format!("{}/{}", p.namespace(), p.name()))
                    .collect();
                let mut hop = Hop::new(
                    "destination",
                    Status::Fail,
                    format!(
                        "ALLOW policies select {} and none matches this request from {who}",
                        s.what
                    ),
                )
                .symptom(denied)
                .fix("add a rule that allows this client to one of the ALLOW policies".to_string());
                hop.evidence
                    .push(format!("AuthorizationPolicy {}", names.join(", ")));
                if principal.is_none() {
                    hop.evidence.push("principals and namespaces exist only over Istio's mTLS: this request carries none".into());
                }
                Some(hop)
            }
            Verdict::External { policy } => Some(Hop::new(
                "destination",
                Status::Unknown,
                format!(
                    "AuthorizationPolicy {}/{} (CUSTOM) sends this request to its external authorizer, whose answer is not known",
                    policy.namespace(),
                    policy.name()
                ),
            )),
            Verdict::Unknown { policy, reason } => Some(Hop::new(
                "destination",
                Status::Unknown,
                format!(
                    "AuthorizationPolicy {}/{}: {reason}",
                    policy.namespace(),
                    policy.name()
                ),
            )),
        };
        if let Some(h) = hop {
            dest_hop = Some(h);
            break;
        }
    }
    dest_hop.unwrap_or_else(|| {
        let mut h = Hop::new(
            "destination",
            Status::Pass,
            "no AuthorizationPolicy stops the request",
        );
        if !unenforced.is_empty() {
            h.status = Status::Warn;
            h.evidence = unenforced;
        }
        h
    })
}
