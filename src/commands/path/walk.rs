//! The walk of one request, pure: the snapshot (live or files), the client, the target and the
//! request in; one [`PortWalk`] per target port out, each a list of hops with a status, the
//! evidence and, for the hop that breaks, what the request gets and what to change.
//!
//! Hops, in the order the request meets them: source (the client's sidecar and its Sidecar
//! resource), route (VirtualService), then per destination of the route: cluster
//! (DestinationRule and subset), endpoints, transport (TLS the client sends against what the
//! server accepts), destination (the server's sidecar and its AuthorizationPolicies) and network
//! (NetworkPolicies). The walk stops at the first hop that fails; the hops after it are "not
//! reached".

use crate::istio::config::host::to_fqdn;
use crate::istio::config::{Config, Sidecar, Typed};
use crate::istio::dataplane::{Dataplane, root_namespace};
use crate::istio::protocol::{Protocol, port_protocol};
use crate::istio::routing::{self, Client, HttpChoice, HttpRequest};
use crate::kube::snapshot::{Object, Snapshot};

use super::hops;
use super::model::{
    Branch, Hop, Known, Outcome, PortWalk, Question, Scene, Status, Target, Walk, known,
    not_reached,
};

/// (port, name, protocol) of every port of the service behind the target.
fn target_ports(known: &Known<'_, '_>) -> Vec<(u32, String, Protocol)> {
    match known {
        Known::Service(svc) => svc
            .object
            .spec
            .iter()
            .flat_map(|s| s.ports.iter().flatten())
            .filter_map(|p| {
                let n = u32::try_from(p.port).ok()?;
                let protocol = port_protocol(
                    p.port,
                    p.name.as_deref(),
                    p.protocol.as_deref(),
                    p.app_protocol.as_deref(),
                );
                Some((n, p.name.clone().unwrap_or_default(), protocol))
            })
            .collect(),
        Known::Entry(se) => se
            .spec
            .ports
            .iter()
            .map(|p| {
                let protocol = port_protocol(
                    i32::try_from(p.number).unwrap_or(0),
                    Some(&p.protocol),
                    None,
                    None,
                );
                (p.number, p.name.clone(), protocol)
            })
            .collect(),
        Known::Unknown => Vec::new(),
    }
}

/// True for the protocols Envoy routes as HTTP (sniffing counts: the request is HTTP).
pub fn is_http(protocol: Protocol) -> bool {
    matches!(
        protocol,
        Protocol::Http
            | Protocol::Http2
            | Protocol::Grpc
            | Protocol::GrpcWeb
            | Protocol::HttpProxy
            | Protocol::Unsupported
    )
}

pub fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
        Protocol::Grpc => "grpc",
        Protocol::GrpcWeb => "grpc-web",
        Protocol::Http => "http",
        Protocol::HttpProxy => "http-proxy",
        Protocol::Http2 => "http2",
        Protocol::Https => "https",
        Protocol::Tls => "tls",
        Protocol::Mongo => "mongo",
        Protocol::Redis => "redis",
        Protocol::Mysql => "mysql",
        Protocol::Unsupported => "unnamed (sniffed)",
    }
}

/// Walks the request; see the module doc.
pub fn walk(snapshot: &Snapshot, question: &Question<'_>) -> Walk {
    let config = Config::of(snapshot);
    let scene = Scene {
        snapshot,
        config: &config,
        root: root_namespace(snapshot),
        question,
    };
    let fqdn = question.target.fqdn();
    if let Target::Pod { namespace, name } = &question.target {
        return pod_walk(&scene, namespace, name, &fqdn);
    }
    let known = known(&scene, &fqdn, question.client.namespace);
    let mut ports = target_ports(&known);
    let not_read: Vec<String> = snapshot
        .unavailable
        .iter()
        .map(|(kind, why)| format!("{kind}: {why}"))
        .collect();
    let request = format!("{} {}", question.request.method, question.request.path);
    let mut walks = Vec::new();
    if let Some(port) = question.port {
        ports.retain(|(n, _, _)| *n == port);
        if ports.is_empty() {
            // A port the service does not declare: for a known service no listener or route
            // exists for it; for an unknown host it is the port the request uses.
            let protocol = Protocol::Unsupported;
            ports.push((port, String::new(), protocol));
        }
    }
    if ports.is_empty() {
        ports.push((80, String::new(), Protocol::Unsupported));
    }
    for (port, name, protocol) in ports {
        walks.push(walk_port(&scene, &known, &fqdn, port, &name, protocol));
    }
    Walk {
        source: question.client.what.clone(),
        target: fqdn,
        request,
        ports: walks,
        not_read,
    }
}

/// A pod as the target ([`super::pod_target`]); a pod the snapshot lacks is one unknown hop.
fn pod_walk(scene: &Scene<'_, '_>, namespace: &str, name: &str, target: &str) -> Walk {
    let q = scene.question;
    let request = format!("{} {}", q.request.method, q.request.path);
    let not_read: Vec<String> = scene
        .snapshot
        .unavailable
        .iter()
        .map(|(kind, why)| format!("{kind}: {why}"))
        .collect();
    let pod = scene
        .snapshot
        .all_pods()
        .find(|p| p.object.name() == name && p.object.namespace() == Some(namespace));
    let ports = match pod {
        Some(p) => super::pod_target::ports(&p.object, q.port)
            .into_iter()
            .map(|port| finish(super::pod_target::walk_port(scene, p, port, true)))
            .collect(),
        None => {
            let mut walk = PortWalk {
                port: q.port.unwrap_or(80),
                protocol: "tcp (pod IP)".into(),
                hops: vec![Hop::new(
                    "source",
                    Status::Unknown,
                    format!(
                        "Pod {namespace}/{name} is not in the {}",
                        if q.live { "cluster" } else { "files" }
                    ),
                )],
                branches: Vec::new(),
                outcome: Outcome {
                    status: Status::Unknown,
                    summary: String::new(),
                    hop: None,
                },
            };
            walk = finish(walk);
            vec![walk]
        }
    };
    Walk {
        source: q.client.what.clone(),
        target: target.to_string(),
        request,
        ports,
        not_read,
    }
}

fn declared(known: &Known<'_, '_>, port: u32) -> bool {
    target_ports(known).iter().any(|(n, _, _)| *n == port)
}

fn walk_port(
    scene: &Scene<'_, '_>,
    known: &Known<'_, '_>,
    fqdn: &str,
    port: u32,
    name: &str,
    protocol: Protocol,
) -> PortWalk {
    let q = scene.question;
    let http = is_http(protocol);
    let mut walk = PortWalk {
        port,
        protocol: if name.is_empty() || name == protocol_name(protocol) {
            protocol_name(protocol).to_string()
        } else {
            format!("{} (port {name})", protocol_name(protocol))
        },
        hops: Vec::new(),
        branches: Vec::new(),
        outcome: Outcome {
            status: Status::Pass,
            summary: String::new(),
            hop: None,
        },
    };
    let source = source_hop(scene, known, fqdn, port);
    let source_status = source.status;
    walk.hops.push(source);
    if source_status == Status::Fail {
        walk.hops.push(not_reached("route"));
        return finish(walk);
    }
    if matches!(known, Known::Unknown) {
        // Left the mesh (ALLOW_ANY) or was refused (above): no route, cluster or policy applies.
        return finish(walk);
    }
    if !declared(known, port) {
        let hop = Hop::new(
            "route",
            Status::Fail,
            format!("{fqdn} has no port {port}: the sidecar has no listener or route for it"),
        )
        .symptom("the connection goes to the PassthroughCluster or is refused; an HTTP request to the Service IP gets no answer from the service")
        .fix(format!("use one of the ports of {fqdn}, or add the port to it"));
        walk.hops.push(hop);
        return finish(walk);
    }
    let client = Client {
        namespace: q.client.namespace,
        labels: q.client.labels,
    };
    let sidecar = q.client.dataplane == Dataplane::Sidecar;
    let mut destinations: Vec<(String, u32, String, i32)> = Vec::new();
    if !sidecar {
        walk.hops.push(Hop::new(
            "route",
            Status::Pass,
            "no sidecar on the client: no VirtualService applies; kube-proxy sends the connection to any endpoint of the Service",
        ));
        destinations.push((fqdn.to_string(), port, String::new(), 100));
    } else {
        match routing::virtual_service(scene.config, q.client.namespace, fqdn) {
            None => {
                walk.hops.push(Hop::new(
                    "route",
                    Status::Pass,
                    format!("no VirtualService for {fqdn}: the default route to {fqdn}:{port}"),
                ));
                destinations.push((fqdn.to_string(), port, String::new(), 100));
            }
            Some(chosen) => {
                let (hop, dests) = route_hop(&chosen, &q.request, client, port, http);
                let failed = hop.status == Status::Fail || hop.status == Status::Unknown;
                walk.hops.push(hop);
                if failed {
                    return finish(walk);
                }
                destinations = dests;
            }
        }
    }
    for (host, dest_port, subset, weight) in destinations {
        let (hops, expected) = hops::destination(scene, &host, dest_port, &subset, http);
        let label = if subset.is_empty() {
            format!("{host}:{dest_port}")
        } else {
            format!("{host}:{dest_port} subset {subset}")
        };
        walk.branches.push(Branch {
            destination: label,
            weight,
            hops,
            expected: expected.client,
            server: expected.server,
        });
    }
    finish(walk)
}

/// The outcome of a port's hops (after the live `proxy` hops are added).
pub fn outcome_of(walk: &PortWalk) -> Outcome {
    finish(walk.clone()).outcome
}

/// The outcome from the hops: the first failing one (with its share of the requests), else the
/// first unknown one, else reachable.
fn finish(mut walk: PortWalk) -> PortWalk {
    let first = |hops: &[Hop], status: Status| hops.iter().find(|h| h.status == status).cloned();
    if let Some(hop) = first(&walk.hops, Status::Fail) {
        walk.outcome = Outcome {
            status: Status::Fail,
            summary: failure_text(&hop, 100),
            hop: Some(hop.hop),
        };
        return walk;
    }
    let failing: Vec<(i32, Hop)> = walk
        .branches
        .iter()
        .filter_map(|b| first(&b.hops, Status::Fail).map(|h| (b.weight, h)))
        .collect();
    if let Some((_, hop)) = failing.first() {
        let share: i32 = failing.iter().map(|(w, _)| *w).sum();
        walk.outcome = Outcome {
            status: Status::Fail,
            summary: failure_text(hop, share.min(100)),
            hop: Some(hop.hop),
        };
        return walk;
    }
    let unknown = first(&walk.hops, Status::Unknown).or_else(|| {
        walk.branches
            .iter()
            .find_map(|b| first(&b.hops, Status::Unknown))
    });
    if let Some(hop) = unknown {
        walk.outcome = Outcome {
            status: Status::Unknown,
            summary: format!("cannot tell: {} ({})", hop.summary, hop.hop),
            hop: Some(hop.hop),
        };
        return walk;
    }
    let left = walk
        .hops
        .iter()
        .any(|h| h.hop == "source" && h.summary.contains("leaves the mesh"));
    let warned = walk
        .hops
        .iter()
        .chain(walk.branches.iter().flat_map(|b| &b.hops))
        .any(|h| h.status == Status::Warn);
    walk.outcome = Outcome {
        status: if warned { Status::Warn } else { Status::Pass },
        summary: if left {
            "leaves the mesh: the request goes out through the PassthroughCluster, not walked further".into()
        } else {
            "reachable: no hop stops the request".into()
        },
        hop: None,
    };
    walk
}

fn failure_text(hop: &Hop, share: i32) -> String {
    let what = hop.symptom.clone().unwrap_or_else(|| hop.summary.clone());
    if share >= 100 {
        format!("fails at {}: {what}", hop.hop)
    } else {
        format!("{share}% of requests fail at {}: {what}", hop.hop)
    }
}

/// The Sidecar resource of the client ([`routing::sidecar_resource`]).
fn client_sidecar<'c, 'a>(scene: &Scene<'c, 'a>) -> Option<&'c Typed<'a, Sidecar>> {
    let c = &scene.question.client;
    crate::istio::routing::sidecar_resource(scene.config, scene.root, c.namespace, c.labels)
}

/// Whether a Sidecar's egress lets the host through on `port`: `None` when it has no egress
/// (everything is visible).
fn egress_allows(
    sidecar: &Sidecar,
    client_ns: &str,
    host_ns: Option<&str>,
    fqdn: &str,
    port: u32,
) -> Option<bool> {
    if sidecar.egress.is_empty() {
        return None;
    }
    let allowed = sidecar.egress.iter().any(|listener| {
        let listener_port = listener
            .pointer("/port/number")
            .and_then(|n| n.as_u64())
            .unwrap_or(0);
        if listener_port != 0 && listener_port != u64::from(port) {
            return false;
        }
        listener
            .get("hosts")
            .and_then(|h| h.as_array())
            .into_iter()
            .flatten()
            .filter_map(|h| h.as_str())
            .any(|entry| {
                let (ns, host) = entry.split_once('/').unwrap_or(("*", entry));
                let ns_ok = match ns {
                    "*" => true,
                    "." => host_ns == Some(client_ns) || host_ns.is_none(),
                    "~" => false,
                    other => host_ns == Some(other),
                };
                ns_ok && (host == "*" || crate::istio::config::host::matches(host, fqdn))
            })
    });
    Some(allowed)
}

/// The outbound traffic policy for the client: its Sidecar's, else the mesh's, else ALLOW_ANY.
fn outbound_mode<'s>(
    scene: &'s Scene<'_, '_>,
    sidecar: Option<&'s Typed<'_, Sidecar>>,
) -> (String, String) {
    if let Some(s) = sidecar
        && let Some(mode) = s
            .spec
            .outbound_traffic_policy
            .as_ref()
            .map(|p| p.mode.clone())
            .filter(|m| !m.is_empty())
    {
        return (mode, format!("Sidecar {}/{}", s.namespace(), s.name()));
    }
    if let Some(mode) = scene
        .snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.pointer("/outboundTrafficPolicy/mode")?.as_str())
    {
        return (mode.to_string(), "the mesh config".to_string());
    }
    ("ALLOW_ANY".to_string(), "Istio's default".to_string())
}

fn source_hop(scene: &Scene<'_, '_>, known: &Known<'_, '_>, fqdn: &str, port: u32) -> Hop {
    let c = &scene.question.client;
    match c.dataplane {
        Dataplane::Ambient => {
            return Hop::new(
                "source",
                Status::Unknown,
                format!(
                    "{} is in ambient mode: ztunnel carries its traffic, and mesh-doctor does not walk ambient paths yet",
                    c.what
                ),
            );
        }
        Dataplane::None => {
            let hop = Hop::new(
                "source",
                Status::Pass,
                format!(
                    "{} has no sidecar: its requests leave in plaintext, without a route, a DestinationRule or a client identity",
                    c.what
                ),
            );
            if matches!(known, Known::Unknown) {
                return Hop::new(
                    "source",
                    Status::Unknown,
                    format!(
                        "{fqdn} is neither a Service nor a ServiceEntry host, and the client has no sidecar: the request goes wherever DNS sends it, outside the mesh"
                    ),
                );
            }
            return hop;
        }
        Dataplane::Sidecar => {}
    }
    if c.proxy_ready == Some(false) {
        return Hop::new(
            "source",
            Status::Fail,
            format!(
                "the sidecar of {} is not ready: it has no configuration to route the request with",
                c.what
            ),
        )
        .symptom("connections are refused or reset until istio-proxy is ready")
        .fix(format!(
            "kubectl mesh-doctor pod {} -n {} says why the proxy is not ready",
            c.what.rsplit('/').next().unwrap_or(""),
            c.namespace
        ));
    }
    let sidecar = client_sidecar(scene);
    let (mode, mode_from) = outbound_mode(scene, sidecar);
    let host_ns = crate::istio::config::host::split_fqdn(fqdn).map(|(ns, _)| ns);
    let visible = sidecar.and_then(|s| egress_allows(&s.spec, c.namespace, host_ns, fqdn, port));
    let sidecar_text = sidecar.map_or("no Sidecar resource".to_string(), |s| {
        format!("Sidecar {}/{}", s.namespace(), s.name())
    });
    let in_registry = !matches!(known, Known::Unknown) && visible != Some(false);
    if in_registry {
        let mut hop = Hop::new(
            "source",
            Status::Pass,
            format!(
                "{} has a sidecar{}; {fqdn} is in its configuration",
                c.what,
                if c.proxy_ready == Some(true) {
                    " (ready)"
                } else {
                    ""
                }
            ),
        )
        .evidence(format!(
            "{sidecar_text}; outboundTrafficPolicy {mode} ({mode_from})"
        ));
        if c.proxy_ready.is_none() {
            hop = hop.evidence("from files: the pods it creates get a sidecar (injection), whose readiness is not known");
        }
        return hop;
    }
    let why = if visible == Some(false) {
        format!(
            "{sidecar_text} does not list {fqdn}{} in its egress hosts",
            if port != 0 {
                format!(" (port {port})")
            } else {
                String::new()
            }
        )
    } else {
        format!(
            "{fqdn} is neither a Service nor a ServiceEntry host visible from namespace {}",
            c.namespace
        )
    };
    if mode == "REGISTRY_ONLY" {
        return Hop::new(
            "source",
            Status::Fail,
            format!("{why}, and outboundTrafficPolicy is REGISTRY_ONLY ({mode_from}): the sidecar sends the request to the BlackHoleCluster"),
        )
        .symptom("HTTP: 502 Bad Gateway from the sidecar (route block_all); TCP: the connection is closed at once")
        .fix(format!("add a ServiceEntry for {fqdn}, or list it in the Sidecar's egress hosts"));
    }
    Hop::new(
        "source",
        if visible == Some(false) { Status::Warn } else { Status::Pass },
        format!("{why}; outboundTrafficPolicy {mode} ({mode_from}): the request leaves the mesh through the PassthroughCluster, without mesh routing, TLS or identity"),
    )
    .evidence(sidecar_text)
}

fn route_hop(
    chosen: &routing::Chosen<'_, '_>,
    request: &HttpRequest,
    client: Client<'_>,
    port: u32,
    http: bool,
) -> (Hop, Vec<(String, u32, String, i32)>) {
    let vs = chosen.virtual_service;
    let vs_name = format!("VirtualService {}/{}", vs.namespace(), vs.name());
    let dests =
        |route: &[crate::istio::config::RouteDestination]| -> Vec<(String, u32, String, i32)> {
            let single = route.len() == 1;
            route
                .iter()
                .filter_map(|r| {
                    let d = r.destination.as_ref()?;
                    let weight = if single && r.weight == 0 {
                        100
                    } else {
                        r.weight
                    };
                    let p = d
                        .port
                        .as_ref()
                        .map_or(port, |p| if p.number == 0 { port } else { p.number });
                    Some((
                        to_fqdn(vs.namespace(), &d.host),
                        p,
                        d.subset.clone(),
                        weight,
                    ))
                })
                .filter(|d| d.3 > 0)
                .collect()
        };
    let mut shadow = Vec::new();
    for other in &chosen.shadowed {
        shadow.push(format!(
            "VirtualService {}/{} also names this host and is ignored for it (the older or more exact one wins)",
            other.namespace(),
            other.name()
        ));
    }
    if !http {
        return match routing::tcp_route(&vs.spec, client, port) {
            Some((i, r)) => {
                let d = dests(&r.route);
                let mut hop = Hop::new(
                    "route",
                    Status::Pass,
                    format!("{vs_name} tcp[{i}] → {}", describe_dests(&d)),
                );
                hop.evidence = shadow;
                (hop, d)
            }
            None => {
                let mut hop = Hop::new(
                    "route",
                    Status::Pass,
                    format!(
                        "{vs_name} has no tcp route for port {port}: the default route to {}:{port}",
                        chosen.host
                    ),
                );
                hop.evidence = shadow;
                (hop, vec![(chosen.host.clone(), port, String::new(), 100)])
            }
        };
    }
    match routing::http_route(&vs.spec, request, client, port) {
        HttpChoice::NoRoute { misses } => {
            let mut hop = Hop::new(
                "route",
                Status::Fail,
                format!(
                    "{vs_name}: no http route matches {} {}",
                    request.method, request.path
                ),
            )
            .symptom("404 Not Found from the client's sidecar (response flag NR: no route)")
            .fix(format!(
                "add a route (or a last route without match) to {vs_name} for this request"
            ));
            hop.evidence = misses;
            hop.evidence.extend(shadow);
            (hop, Vec::new())
        }
        HttpChoice::Unknown { reason, .. } => (
            Hop::new("route", Status::Unknown, format!("{vs_name}: {reason}")),
            Vec::new(),
        ),
        HttpChoice::Route {
            index,
            route,
            matched,
        } => {
            let label = routing::route_label(index, &route.name);
            let how = match matched {
                Some(i) => format!("match[{i}]"),
                None => "no match: every request".to_string(),
            };
            let d = dests(&route.route);
            let mut hop = Hop::new(
                "route",
                Status::Pass,
                format!("{vs_name} {label} ({how}) → {}", describe_dests(&d)),
            );
            hop.evidence = shadow;
            if !route.timeout.is_empty() {
                hop.evidence.push(format!("timeout {}", route.timeout));
            }
            if let Some(r) = &route.retries {
                hop.evidence.push(format!("retries {r}"));
            }
            if let Some(abort) = route.fault.as_ref().and_then(|f| f.abort.as_ref()) {
                let share = abort.percentage.as_ref().map_or(100.0, |p| p.value);
                let status = if abort.http_status != 0 {
                    format!("HTTP {}", abort.http_status)
                } else if !abort.grpc_status.is_empty() {
                    format!("gRPC status {}", abort.grpc_status)
                } else {
                    "an HTTP/2 error".to_string()
                };
                let text = format!(
                    "{status} \"fault filter abort\" from the client's sidecar (response flag FI: fault injected)"
                );
                if share >= 100.0 {
                    hop.status = Status::Fail;
                    hop.summary =
                        format!("{vs_name} {label} injects a fault: every request is aborted");
                    hop.symptom = Some(text);
                    hop.fix = Some(format!("remove fault.abort from {vs_name} {label}"));
                    return (hop, Vec::new());
                } else if share > 0.0 {
                    hop.status = Status::Warn;
                    hop.evidence
                        .push(format!("fault.abort: {share}% of requests get {text}"));
                }
            }
            if let Some(delay) = route.fault.as_ref().and_then(|f| f.delay.as_ref()) {
                hop.evidence.push(format!(
                    "fault.delay {} for {}% of requests",
                    delay.fixed_delay,
                    delay.percentage.as_ref().map_or(100.0, |p| p.value)
                ));
            }
            if route.redirect.is_some() || route.direct_response.is_some() {
                let what = if route.redirect.is_some() {
                    "a redirect"
                } else {
                    "a direct response"
                };
                hop.summary = format!(
                    "{vs_name} {label} ({how}) answers with {what} from the client's sidecar"
                );
                return (hop, Vec::new());
            }
            if d.is_empty() && route.route.is_empty() {
                hop.status = Status::Unknown;
                hop.summary =
                    format!("{vs_name} {label} has no destination mesh-doctor can follow");
            }
            (hop, d)
        }
    }
}

fn describe_dests(d: &[(String, u32, String, i32)]) -> String {
    let parts: Vec<String> = d
        .iter()
        .map(|(h, p, s, w)| {
            let subset = if s.is_empty() {
                String::new()
            } else {
                format!(" subset {s}")
            };
            format!("{h}:{p}{subset} ({w}%)")
        })
        .collect();
    if parts.is_empty() {
        "no destination".into()
    } else {
        parts.join(", ")
    }
}
