//! The traffic configuration that applies to one pod, as a destination: the Services that select
//! it (ports, protocols, the pod port each targets), the mTLS its sidecar accepts per port
//! (PeerAuthentication), the DestinationRule and VirtualServices of each Service as a client in
//! the pod's namespace sees them (the subsets the pod is in, the routes and weights that reach
//! it), the AuthorizationPolicies that select it, its Sidecar resource, the gateways that route
//! to it, and the coherence findings (MD04xx) about these objects. The facts of `istioctl x
//! describe pod`, read from the configuration (not from the pod's Envoy; `path` compares the two).
//! Pure: the snapshot and the pod in, the view out.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Pod, Service};
use serde::Serialize;

use crate::analysis;
use crate::findings::Finding;
use crate::istio::authorization;
use crate::istio::config::host::to_fqdn;
use crate::istio::config::{Config, Labels, RouteDestination, Typed, VirtualService};
use crate::istio::dataplane::{self, target_port};
use crate::istio::destination_rules::Client;
use crate::istio::mtls::{self, ServerMode};
use crate::istio::protocol::port_protocol;
use crate::istio::routing::{self, MESH_GATEWAY};
use crate::kube::snapshot::{Located, Object, Snapshot};

/// The analyzers whose findings are about the traffic to a pod.
pub const ANALYZERS: &[&str] = &[
    "mtls-coherence",
    "mtls-port-level",
    "destinationrule-merge",
    "authz-identity",
    "authz-allow-nothing",
    "authz-unknown-identity",
];

/// The analyzer whose namespace-wide and Gateway findings `pod` adds (its per-pod ones, MD0412
/// and MD0413, the pod's diagnosis gives itself).
pub const AMBIENT_ANALYZER: &str = "ambient-l7";

/// Everything that decides how traffic reaches the pod.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Traffic {
    /// False for a pod without a sidecar: PeerAuthentication and AuthorizationPolicy are then
    /// enforced by ztunnel when ambient captures it ([`Traffic::ambient`]), else by nothing on
    /// its side.
    pub sidecar: bool,
    /// True for a pod without a sidecar that ambient captured (the CNI agent's
    /// `ambient.istio.io/redirection: enabled`): ztunnel enforces its PeerAuthentication and,
    /// at L4, its AuthorizationPolicies (the ambient checks say what it cannot enforce).
    pub ambient: bool,
    pub services: Vec<ServiceTraffic>,
    pub peer_authentication: PeerAuthenticationView,
    /// `ALLOW shop/frontend-only (2 rules)`, in Istio's order of evaluation (CUSTOM, DENY,
    /// ALLOW, AUDIT).
    pub authorization_policies: Vec<String>,
    /// `Sidecar shop/default`, `None` when none applies (every host is visible).
    pub sidecar_resource: Option<String>,
    /// `Gateway istio-system/public (hosts shop.example.com) via VirtualService shop/web`.
    pub gateways: Vec<String>,
    /// The findings of [`ANALYZERS`] about the objects above, the pod or its workload.
    #[serde(skip)]
    pub findings: Vec<Finding>,
}

/// One Service that selects the pod.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceTraffic {
    /// `Service shop/web`.
    pub service: String,
    pub host: String,
    pub ports: Vec<PortTraffic>,
    pub destination_rule: Option<DestinationRuleView>,
    pub virtual_services: Vec<VirtualServiceView>,
}

/// One port of a Service, as the pod receives it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortTraffic {
    pub name: String,
    pub port: i32,
    pub protocol: &'static str,
    /// The pod port it targets; `None` when a named `targetPort` matches no container port.
    pub pod_port: Option<u32>,
    /// What the pod's sidecar accepts on that port: STRICT, PERMISSIVE or DISABLE.
    pub accepts: &'static str,
    /// The PeerAuthentication that decides it (`None`: Istio's default PERMISSIVE).
    pub accepts_by: Option<String>,
    /// What a client in the pod's namespace sends: the DestinationRule's TLS mode, else
    /// `auto mTLS` (Istio's mTLS to pods with a sidecar, plaintext to others).
    pub clients_send: String,
}

/// The DestinationRule a client in the pod's namespace applies to the Service.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DestinationRuleView {
    /// `DestinationRule shop/web` (several names when Istio merges them).
    pub rule: String,
    pub host: String,
    pub subsets_with_pod: Vec<String>,
    pub subsets_without_pod: Vec<String>,
    /// The top-level TLS mode; `None` when it sets none.
    pub tls: Option<String>,
    /// `port 8443: SIMPLE`.
    pub port_tls: Vec<String>,
}

/// A VirtualService that routes to the Service.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualServiceView {
    /// `VirtualService shop/web`.
    pub virtual_service: String,
    /// `mesh`, or the gateways it is bound to.
    pub gateways: Vec<String>,
    pub routes: Vec<RouteView>,
}

/// One route of a VirtualService with a destination to the Service.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteView {
    /// `http[0] (api)`, `tcp[1]`.
    pub route: String,
    /// `uri prefix /api`, `every request`.
    pub matches: String,
    /// `80% to subset v1 (this pod)`.
    pub destinations: Vec<String>,
    /// True when one of its destinations can reach this pod.
    pub reaches_pod: bool,
}

/// The pod's effective PeerAuthentication.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerAuthenticationView {
    /// The mode of a port without a `portLevelMtls` entry.
    pub workload_mode: &'static str,
    /// `8080: PERMISSIVE`, the ports a `portLevelMtls` entry decides.
    pub port_modes: Vec<String>,
    /// The policies that apply, mesh first: `PeerAuthentication istio-system/default`.
    pub applied: Vec<String>,
}

fn labels_of(pod: &Pod) -> &Labels {
    static EMPTY: Labels = Labels::new();
    pod.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn selects(selector: &Labels, labels: &Labels) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn named<T>(kind: &str, t: &Typed<'_, T>) -> String {
    format!("{kind} {}/{}", t.namespace(), t.name())
}

/// The Services of the pod's namespace whose selector picks the pod.
fn selecting_services<'s>(snapshot: &'s Snapshot, pod: &Pod) -> Vec<&'s Located<Service>> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let labels = labels_of(pod);
    let mut out: Vec<&Located<Service>> = snapshot
        .all_services()
        .filter(|s| s.object.namespace() == Some(ns))
        .filter(|s| {
            s.object
                .spec
                .as_ref()
                .and_then(|spec| spec.selector.as_ref())
                .is_some_and(|sel| !sel.is_empty() && selects(sel, labels))
        })
        .collect();
    out.sort_by(|a, b| a.object.name().cmp(b.object.name()));
    out.dedup_by(|a, b| a.object.name() == b.object.name());
    out
}

/// The view of the traffic to `pod` in `snapshot` (which holds the pod's namespace and Istio's
/// config). The findings come from running [`ANALYZERS`] over the snapshot.
pub fn traffic(snapshot: &Snapshot, pod: &Pod) -> Traffic {
    let config = Config::of(snapshot);
    let root = dataplane::root_namespace(snapshot);
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let labels = labels_of(pod);
    let spec = pod.spec.as_ref();
    let sidecar = dataplane::has_proxy(spec);
    let services = selecting_services(snapshot, pod);

    let ambient = !sidecar
        && pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(dataplane::AMBIENT_REDIRECTION))
            .is_some_and(|v| v == "enabled");
    let mut view = Traffic {
        sidecar,
        ambient,
        peer_authentication: peer_authentication(&config, root, ns, labels, pod, &services),
        ..Traffic::default()
    };
    for svc in &services {
        view.services
            .push(service_traffic(&config, root, ns, labels, spec, svc));
    }
    let mut policies = authorization::applying(&config, root, ns, labels);
    let order = |action: &str| match action {
        "CUSTOM" => 0,
        "DENY" => 1,
        "ALLOW" => 2,
        _ => 3,
    };
    policies.sort_by_key(|p| (order(authorization::action(&p.spec)), p.namespace() != ns));
    view.authorization_policies = policies
        .iter()
        .map(|p| {
            let rules = p.spec.rules.len();
            let rules = match rules {
                0 => "no rules".to_string(),
                1 => "1 rule".to_string(),
                n => format!("{n} rules"),
            };
            format!(
                "{} {}/{} ({rules})",
                authorization::action(&p.spec),
                p.namespace(),
                p.name()
            )
        })
        .collect();
    view.sidecar_resource =
        routing::sidecar_resource(&config, root, ns, labels).map(|s| named("Sidecar", s));
    view.gateways = gateways(&config, &view.services);
    view.findings = findings(snapshot, pod, &view);
    view
}

fn peer_authentication(
    config: &Config<'_>,
    root: &str,
    ns: &str,
    labels: &Labels,
    pod: &Pod,
    services: &[&Located<Service>],
) -> PeerAuthenticationView {
    // A port no portLevelMtls names: the workload's mode.
    let workload = mtls::server_mode(config, root, ns, labels, 0);
    let mut ports: BTreeSet<u32> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| u32::try_from(p.container_port).ok())
        .collect();
    for svc in services {
        for port in svc
            .object
            .spec
            .iter()
            .flat_map(|s| s.ports.iter().flatten())
        {
            ports.extend(target_port(port, pod.spec.as_ref()));
        }
    }
    let mut applied = Vec::new();
    let wide = |p: &&Typed<'_, crate::istio::config::PeerAuthentication>, in_ns: &str| {
        p.namespace() == in_ns
            && p.spec
                .selector
                .as_ref()
                .is_none_or(|s| s.match_labels.is_empty())
    };
    let mut by_age: Vec<&Typed<'_, crate::istio::config::PeerAuthentication>> =
        config.peer_authentications.iter().collect();
    by_age.sort_by_key(|p| {
        (
            p.resource
                .object
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
                .unwrap_or_default(),
            p.name().to_string(),
        )
    });
    if let Some(p) = by_age.iter().find(|p| wide(p, root)) {
        applied.push(named("PeerAuthentication", p));
    }
    if ns != root
        && let Some(p) = by_age.iter().find(|p| wide(p, ns))
    {
        applied.push(named("PeerAuthentication", p));
    }
    let own = by_age.iter().find(|p| {
        p.namespace() == ns
            && p.spec
                .selector
                .as_ref()
                .is_some_and(|s| !s.match_labels.is_empty() && selects(&s.match_labels, labels))
    });
    if let Some(p) = own {
        applied.push(named("PeerAuthentication", p));
        ports.extend(
            p.spec
                .port_level_mtls
                .keys()
                .filter_map(|k| k.parse::<u32>().ok()),
        );
    }
    let port_modes = ports
        .into_iter()
        .filter_map(|port| {
            let d = mtls::server_mode(config, root, ns, labels, port);
            d.port_level.then(|| format!("{port}: {}", d.mode.as_str()))
        })
        .collect();
    PeerAuthenticationView {
        workload_mode: workload.mode.as_str(),
        port_modes,
        applied,
    }
}

fn service_traffic(
    config: &Config<'_>,
    root: &str,
    ns: &str,
    labels: &Labels,
    spec: Option<&k8s_openapi::api::core::v1::PodSpec>,
    svc: &Located<Service>,
) -> ServiceTraffic {
    let name = svc.object.name();
    let fqdn = format!("{name}.{ns}.svc.cluster.local");
    // What the namespace's clients use (those a workload-selector rule selects may differ).
    let clients = Client::unselected(ns);
    let merged = mtls::destination_rule(config, root, clients, &fqdn);
    let ports = svc
        .object
        .spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| {
            let pod_port = target_port(p, spec);
            let server = pod_port.map(|port| mtls::server_mode(config, root, ns, labels, port));
            let port = u32::try_from(p.port).unwrap_or(0);
            let client = mtls::client_tls(config, root, clients, &fqdn, port);
            let clients_send = match (&client.mode, client.rule) {
                (Some(mode), Some(rule)) => format!(
                    "{mode} ({}{})",
                    named("DestinationRule", rule),
                    if client.port_level {
                        ", portLevelSettings"
                    } else {
                        ""
                    }
                ),
                _ => "auto mTLS (Istio's mTLS to pods with a sidecar, plaintext to others)".into(),
            };
            PortTraffic {
                name: p.name.clone().unwrap_or_default(),
                port: p.port,
                protocol: port_protocol(
                    p.port,
                    p.name.as_deref(),
                    p.protocol.as_deref(),
                    p.app_protocol.as_deref(),
                )
                .as_str(),
                pod_port,
                accepts: server
                    .as_ref()
                    .map_or(ServerMode::Permissive.as_str(), |d| d.mode.as_str()),
                accepts_by: server.as_ref().and_then(|d| {
                    d.policy.map(|p| {
                        format!(
                            "{}{}",
                            named("PeerAuthentication", p),
                            if d.port_level { ", portLevelMtls" } else { "" }
                        )
                    })
                }),
                clients_send,
            }
        })
        .collect();
    let destination_rule = merged.as_ref().map(|m| {
        let (with_pod, without_pod): (Vec<_>, Vec<_>) = m
            .subsets()
            .into_iter()
            .partition(|(s, _)| selects(&s.labels, labels));
        let policy = m.traffic_policy().map(|(p, _)| p);
        DestinationRuleView {
            rule: format!("DestinationRule {}", m.names()),
            host: crate::istio::destination_rules::host_of(m.head()),
            subsets_with_pod: with_pod.iter().map(|(s, _)| s.name.clone()).collect(),
            subsets_without_pod: without_pod.iter().map(|(s, _)| s.name.clone()).collect(),
            tls: policy
                .and_then(|p| p.tls.as_ref())
                .map(|t| t.mode.clone())
                .filter(|m| !m.is_empty()),
            port_tls: policy
                .into_iter()
                .flat_map(|p| &p.port_level_settings)
                .filter_map(|s| {
                    let port = s.port.as_ref()?.number;
                    let mode = s
                        .tls
                        .as_ref()
                        .map(|t| t.mode.as_str())
                        .filter(|m| !m.is_empty())?;
                    Some(format!("port {port}: {mode}"))
                })
                .collect(),
        }
    });
    let subset_has_pod = |subset: &str| {
        subset.is_empty()
            || merged
                .as_ref()
                .and_then(|m| m.subset(subset))
                .is_some_and(|(s, _)| selects(&s.labels, labels))
    };
    let virtual_services = config
        .virtual_services
        .iter()
        .filter_map(|vs| virtual_service_view(vs, &fqdn, &subset_has_pod))
        .collect();
    ServiceTraffic {
        service: format!("Service {ns}/{name}"),
        host: fqdn,
        ports,
        destination_rule,
        virtual_services,
    }
}

fn virtual_service_view(
    vs: &Typed<'_, VirtualService>,
    fqdn: &str,
    subset_has_pod: &dyn Fn(&str) -> bool,
) -> Option<VirtualServiceView> {
    let spec = &vs.spec;
    let to_us = |d: &RouteDestination| {
        d.destination
            .as_ref()
            .is_some_and(|d| !d.host.is_empty() && to_fqdn(vs.namespace(), &d.host) == fqdn)
    };
    let describe = |route: &[RouteDestination]| -> (Vec<String>, bool) {
        let total: i32 = route.iter().map(|d| d.weight.max(0)).sum();
        let mut reaches = false;
        let lines = route
            .iter()
            .map(|d| {
                let share = if route.len() == 1 {
                    100
                } else if total > 0 {
                    d.weight.max(0) * 100 / total
                } else {
                    0
                };
                let dest = d.destination.as_ref();
                let host = dest.map_or("", |d| d.host.as_str());
                let subset = dest.map_or("", |d| d.subset.as_str());
                let target = if subset.is_empty() {
                    format!("host {host}")
                } else {
                    format!("host {host} subset {subset}")
                };
                let note = if !to_us(d) {
                    " (another host)"
                } else if subset_has_pod(subset) {
                    reaches |= share > 0;
                    " (this pod)"
                } else {
                    " (not this pod)"
                };
                format!("{share}% to {target}{note}")
            })
            .collect();
        (lines, reaches)
    };
    let mut routes = Vec::new();
    for (i, r) in spec.http.iter().enumerate() {
        if !r.route.iter().any(to_us) {
            continue;
        }
        let matches = if r.matches.is_empty() {
            "every request".to_string()
        } else {
            r.matches
                .iter()
                .map(|m| {
                    let mut parts = Vec::new();
                    if let Some(u) = &m.uri {
                        parts.push(format!("uri {}", routing::describe(u)));
                    }
                    if let Some(x) = &m.method {
                        parts.push(format!("method {}", routing::describe(x)));
                    }
                    if let Some(x) = &m.authority {
                        parts.push(format!("authority {}", routing::describe(x)));
                    }
                    for (k, v) in &m.headers {
                        parts.push(format!("header {k} {}", routing::describe(v)));
                    }
                    if m.port != 0 {
                        parts.push(format!("port {}", m.port));
                    }
                    if !m.source_labels.is_empty() || !m.source_namespace.is_empty() {
                        parts.push("from some clients only".to_string());
                    }
                    if parts.is_empty() {
                        "every request".to_string()
                    } else {
                        parts.join(", ")
                    }
                })
                .collect::<Vec<_>>()
                .join(" or ")
        };
        let (destinations, reaches_pod) = describe(&r.route);
        routes.push(RouteView {
            route: routing::route_label(i, &r.name),
            matches,
            destinations,
            reaches_pod,
        });
    }
    let l4 = spec
        .tcp
        .iter()
        .map(|r| {
            (
                "tcp",
                &r.route,
                r.matches.iter().map(|m| m.port).collect::<Vec<_>>(),
            )
        })
        .chain(
            spec.tls
                .iter()
                .map(|r| ("tls", &r.route, r.matches.iter().map(|m| m.port).collect())),
        );
    let mut index = std::collections::BTreeMap::<&str, usize>::new();
    for (kind, route, ports) in l4 {
        let i = index.entry(kind).or_default();
        let label = format!("{kind}[{i}]");
        *i += 1;
        if !route.iter().any(to_us) {
            continue;
        }
        let ports: Vec<String> = ports
            .iter()
            .filter(|p| **p != 0)
            .map(u32::to_string)
            .collect();
        let (destinations, reaches_pod) = describe(route);
        routes.push(RouteView {
            route: label,
            matches: if ports.is_empty() {
                "every connection".to_string()
            } else {
                format!("port {}", ports.join(" or "))
            },
            destinations,
            reaches_pod,
        });
    }
    if routes.is_empty() {
        return None;
    }
    let gateways = if spec.gateways.is_empty() {
        vec![MESH_GATEWAY.to_string()]
    } else {
        spec.gateways.clone()
    };
    Some(VirtualServiceView {
        virtual_service: named("VirtualService", vs),
        gateways,
        routes,
    })
}

/// The gateways that route to the pod: Istio Gateways a VirtualService of its Services is bound
/// to, and Gateway API Gateways whose routes send to its Services.
fn gateways(config: &Config<'_>, services: &[ServiceTraffic]) -> Vec<String> {
    let mut out = Vec::new();
    for svc in services {
        for vs in &svc.virtual_services {
            let vs_ns = vs
                .virtual_service
                .trim_start_matches("VirtualService ")
                .split('/')
                .next()
                .unwrap_or_default();
            for g in vs.gateways.iter().filter(|g| *g != MESH_GATEWAY) {
                let (gw_ns, gw_name) = g.split_once('/').unwrap_or((vs_ns, g.as_str()));
                let found = config
                    .gateways
                    .iter()
                    .find(|x| x.namespace() == gw_ns && x.name() == gw_name);
                let text = match found {
                    Some(gw) => {
                        let hosts: BTreeSet<&str> = gw
                            .spec
                            .servers
                            .iter()
                            .flat_map(|s| s.hosts.iter().map(String::as_str))
                            .collect();
                        format!(
                            "Gateway {gw_ns}/{gw_name} (hosts {}) via {}",
                            hosts.into_iter().collect::<Vec<_>>().join(", "),
                            vs.virtual_service
                        )
                    }
                    None => format!(
                        "Gateway {gw_ns}/{gw_name} (not found) via {}",
                        vs.virtual_service
                    ),
                };
                out.push(text);
            }
        }
        let (ns, name) = svc
            .service
            .trim_start_matches("Service ")
            .split_once('/')
            .unwrap_or_default();
        let kinds = [
            ("HTTPRoute", &config.http_routes),
            ("GRPCRoute", &config.grpc_routes),
            ("TCPRoute", &config.tcp_routes),
            ("TLSRoute", &config.tls_routes),
        ];
        for (kind, routes) in kinds {
            for route in routes {
                let sends = route
                    .spec
                    .rules
                    .iter()
                    .filter_map(|r| r.get("backendRefs")?.as_array())
                    .flatten()
                    .any(|r| {
                        let text = |k: &str| r.get(k).and_then(|v| v.as_str());
                        text("kind").is_none_or(|k| k == "Service")
                            && text("group").is_none_or(str::is_empty)
                            && text("name") == Some(name)
                            && text("namespace").unwrap_or(route.namespace()) == ns
                    });
                if !sends {
                    continue;
                }
                for parent in &route.spec.parent_refs {
                    let kind_of = parent.kind.as_deref().unwrap_or("Gateway");
                    if kind_of != "Gateway" {
                        continue;
                    }
                    let parent_ns = parent.namespace.as_deref().unwrap_or(route.namespace());
                    out.push(format!(
                        "Gateway {parent_ns}/{} (Gateway API) via {kind} {}/{}",
                        parent.name,
                        route.namespace(),
                        route.name()
                    ));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The findings of [`ANALYZERS`] about the objects of the view, the pod, or its workload.
fn findings(snapshot: &Snapshot, pod: &Pod, view: &Traffic) -> Vec<Finding> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut objects: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut add = |text: &str| {
        // "Kind ns/name" (a merged DestinationRule names several: "ns/a, ns/b").
        let Some((kind, rest)) = text.split_once(' ') else {
            return;
        };
        for one in rest.split(", ") {
            let one = one.split(' ').next().unwrap_or_default();
            if let Some((n, name)) = one.split_once('/') {
                objects.insert((kind.to_string(), n.to_string(), name.to_string()));
            }
        }
    };
    for svc in &view.services {
        add(&svc.service);
        if let Some(dr) = &svc.destination_rule {
            add(&dr.rule);
        }
        for vs in &svc.virtual_services {
            add(&vs.virtual_service);
        }
    }
    for pa in &view.peer_authentication.applied {
        add(pa);
    }
    for ap in &view.authorization_policies {
        // "ALLOW ns/name (1 rule)"
        if let Some(rest) = ap.split_once(' ').map(|(_, r)| r) {
            add(&format!("AuthorizationPolicy {rest}"));
        }
    }
    if let Some(s) = &view.sidecar_resource {
        add(s);
    }
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    objects.insert(("Pod".into(), ns.into(), name.into()));
    let owner_names: Vec<String> = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| o.name.clone())
        .collect();
    let gateways = gateways_of_pod(snapshot, pod);
    let mut names: Vec<String> = ANALYZERS.iter().map(|a| a.to_string()).collect();
    if !view.sidecar || !gateways.is_empty() {
        names.push(AMBIENT_ANALYZER.to_string());
    }
    let (ambient, coherence): (Vec<Finding>, Vec<Finding>) = analysis::run(snapshot, &names)
        .findings
        .into_iter()
        .partition(|f| {
            analysis::ambient_l7::CODES
                .iter()
                .any(|c| c.code == f.code())
        });
    let mut found: Vec<Finding> = coherence
        .into_iter()
        .filter(|f| {
            f.resource.as_ref().is_some_and(|r| {
                let r_ns = r.namespace.clone().unwrap_or_default();
                objects.contains(&(r.kind.clone(), r_ns.clone(), r.name.clone()))
                    || (r_ns == ns
                        && r.kind != "Pod"
                        && owner_names.iter().any(|o| {
                            *o == r.name || o.rsplit_once('-').is_some_and(|(w, _)| w == r.name)
                        }))
            })
        })
        .collect();
    found.extend(
        ambient
            .into_iter()
            .filter(|f| ambient_concerns_pod(f, ns, &gateways, view)),
    );
    found
}

/// The Gateways whose policies concern the pod: the one it is a pod of
/// (`gateway.networking.k8s.io/gateway-name`) and the waypoint its own or its namespace's
/// `istio.io/use-waypoint` names (in its namespace, as a targetRef's Gateway must be).
fn gateways_of_pod(snapshot: &Snapshot, pod: &Pod) -> Vec<String> {
    use crate::istio::waypoint::{GATEWAY_NAME_LABEL, USE_WAYPOINT_LABEL};
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pod_labels = pod.metadata.labels.as_ref();
    let namespace_labels = snapshot
        .namespaces
        .iter()
        .find(|n| n.object.name() == ns)
        .and_then(|n| n.object.metadata.labels.as_ref());
    let get = |labels: Option<&Labels>, key: &str| {
        labels
            .and_then(|l| l.get(key))
            .filter(|name| !name.is_empty())
            .map(|name| format!("{ns}/{name}"))
    };
    let mut out: Vec<String> = [
        get(pod_labels, GATEWAY_NAME_LABEL),
        get(pod_labels, USE_WAYPOINT_LABEL),
        get(namespace_labels, USE_WAYPOINT_LABEL),
    ]
    .into_iter()
    .flatten()
    .collect();
    out.sort();
    out.dedup();
    out
}

/// Of [`AMBIENT_ANALYZER`]'s findings, those `pod` adds: a namespace-wide object no proxy of
/// the pod's ambient namespace applies (MD0420) when the pod has no sidecar, and a policy
/// attached to a Gateway of [`gateways_of_pod`] that applies nothing (MD0115).
fn ambient_concerns_pod(f: &Finding, ns: &str, gateways: &[String], view: &Traffic) -> bool {
    let in_namespace = f
        .resource
        .as_ref()
        .is_some_and(|r| r.namespace.as_deref() == Some(ns));
    in_namespace
        && match f.code() {
            "MD0420" => !view.sidecar,
            "MD0115" => gateways
                .iter()
                .any(|g| f.message.contains(&format!(" targets Gateway {g}, which "))),
            _ => false,
        }
}
