//! `kubectl mesh-doctor path SOURCE TARGET[:PORT]`: where a request from SOURCE to TARGET
//! breaks, hop by hop. Gathers the snapshot (a live cluster, every namespace, and the target's
//! EndpointSlices; or files alone), finds the client (a pod, or one pod of a workload live; the
//! workload's pod template on files), hands them to the pure [`walk`] and renders.

pub mod entry;
pub mod hops;
pub mod model;
pub mod network;
pub mod pod_target;
pub mod proxy;
pub mod render;
pub mod walk;

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Pod;

use crate::error::{Error, Result};
use crate::exit;
use crate::istio::config::Labels;
use crate::istio::dataplane::{PROXY_CONTAINER, dataplane};
use crate::istio::routing::HttpRequest;
use crate::kube::snapshot::{Located, Object, Snapshot, WorkloadKind};
use crate::output::format::DocumentFormat;
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::request::Global;
use crate::source::cluster::{self, Cluster};
use crate::source::files::{self, FileOptions};

use model::{ClientSide, Question, Status, Target, Walk};

/// What the walk is expected to find (`--expect`), for CI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Reachable,
    Blocked,
}

/// The client, as named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceRef {
    Pod(String),
    Workload(WorkloadKind, String),
}

/// What `path` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    pub source: SourceRef,
    /// The target as given: `name`, `name.ns`, `name.ns.svc.cluster.local`, or another host.
    pub target: String,
    pub port: Option<u32>,
    pub request: HttpRequest,
    /// Files to walk instead of the cluster (no Envoy, no endpoints: the workloads stand for them).
    pub inputs: Vec<PathBuf>,
    pub recursive: bool,
    pub max_input_size: u64,
    pub output: DocumentFormat,
    pub expect: Option<Expect>,
    /// Live: read the client's Envoy (port-forward to its admin port).
    pub probe: bool,
}

/// The target as a Service or a host: a Service of the snapshot by `name` (in the client's
/// namespace), `name.ns`, `name.ns.svc` or `name.ns.svc.cluster.local`; anything else is a host.
pub fn resolve_target(snapshot: &Snapshot, text: &str, client_ns: &str) -> Target {
    if let Some(pod) = text.strip_prefix("pod/") {
        let (name, namespace) = pod.split_once('.').unwrap_or((pod, client_ns));
        return Target::Pod {
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
    }
    let text = text.trim_end_matches('.');
    let parts: Vec<&str> = text.split('.').collect();
    let service = |ns: &str, name: &str| {
        snapshot
            .all_services()
            .any(|s| s.object.name() == name && s.object.namespace() == Some(ns))
            .then(|| Target::Service {
                namespace: ns.to_string(),
                name: name.to_string(),
            })
    };
    let found = match parts.as_slice() {
        [name] => service(client_ns, name),
        [name, ns] | [name, ns, "svc"] | [name, ns, "svc", "cluster", "local"] => service(ns, name),
        _ => None,
    };
    found.unwrap_or_else(|| match parts.as_slice() {
        [name] => Target::Host(format!("{name}.{client_ns}.svc.cluster.local")),
        _ => Target::Host(text.to_string()),
    })
}

static EMPTY: Labels = Labels::new();

/// The client from the snapshot: a pod by name, or a workload (live: one of its running pods,
/// the first by name; files: its pod template).
fn client<'s>(
    snapshot: &'s Snapshot,
    source: &SourceRef,
    namespace: &'s str,
    live: bool,
) -> Result<ClientSide<'s>> {
    let pod_side = |p: &'s Located<Pod>| {
        let meta = &p.object.metadata;
        let spec = p.object.spec.as_ref();
        let proxy_ready = p
            .object
            .status
            .as_ref()
            .and_then(|s| {
                s.container_statuses
                    .iter()
                    .flatten()
                    .chain(s.init_container_statuses.iter().flatten())
                    .find(|c| c.name == PROXY_CONTAINER)
            })
            .map(|c| c.ready);
        ClientSide {
            what: format!("Pod {namespace}/{}", p.object.name()),
            namespace,
            labels: meta.labels.as_ref().unwrap_or(&EMPTY),
            service_account: spec
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_else(|| "default".into()),
            dataplane: dataplane(snapshot, meta, spec, false),
            ip: p
                .object
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.as_deref())
                .and_then(|ip| ip.parse().ok()),
            // Live, a pod without a status for istio-proxy (Pending) has no ready proxy.
            proxy_ready: live.then(|| proxy_ready.unwrap_or(false)),
            pod: live.then(|| p.object.name().to_string()),
        }
    };
    match source {
        SourceRef::Pod(name) => snapshot
            .all_pods()
            .find(|p| p.object.name() == name && p.object.namespace() == Some(namespace))
            .map(pod_side)
            .ok_or_else(|| Error::PodNotFound {
                pod: name.clone(),
                namespace: namespace.to_string(),
            }),
        SourceRef::Workload(kind, name) => {
            let w = snapshot
                .workloads
                .iter()
                .find(|w| {
                    w.object.kind == *kind
                        && w.object.name() == name
                        && w.object.namespace() == Some(namespace)
                })
                .ok_or_else(|| {
                    Error::Data(format!(
                        "{} {name} not found in namespace {namespace}",
                        kind.as_str()
                    ))
                })?;
            if live {
                let selector = w.object.selector.as_ref();
                let mut pods: Vec<&Located<Pod>> = snapshot
                    .all_pods()
                    .filter(|p| p.object.namespace() == Some(namespace))
                    .filter(|p| p.object.metadata.deletion_timestamp.is_none())
                    .filter(|p| {
                        selector.is_some_and(|s| {
                            crate::kube::selector::matches(
                                Some(s),
                                p.object.metadata.labels.as_ref().unwrap_or(&EMPTY),
                            )
                        })
                    })
                    .collect();
                pods.sort_by_key(|p| {
                    let running = p.object.status.as_ref().and_then(|s| s.phase.as_deref())
                        == Some("Running");
                    (!running, p.object.name().to_string())
                });
                return pods.first().map(|p| pod_side(p)).ok_or_else(|| {
                    Error::Data(format!(
                        "{} {namespace}/{name} has no pod to send from: walk its pod template with -f, or scale it up",
                        kind.as_str()
                    ))
                });
            }
            let meta = w.object.template.metadata.as_ref();
            let mut with_ns = meta.cloned().unwrap_or_default();
            with_ns.namespace = Some(namespace.to_string());
            let spec = w.object.template.spec.as_ref();
            Ok(ClientSide {
                what: format!("{} {namespace}/{name}", kind.as_str()),
                namespace,
                labels: meta.and_then(|m| m.labels.as_ref()).unwrap_or(&EMPTY),
                service_account: spec
                    .and_then(|s| s.service_account_name.clone())
                    .unwrap_or_else(|| "default".into()),
                dataplane: dataplane(snapshot, &with_ns, spec, true),
                ip: None,
                proxy_ready: None,
                pod: None,
            })
        }
    }
}

/// The live snapshot ([`crate::source::live::path`]): what the walk from the client's namespace
/// to the target needs, the target's namespace and EndpointSlices read once it is resolved.
async fn live_snapshot(
    cluster: &Cluster,
    global: &Global,
    target: &str,
) -> Result<(Snapshot, String)> {
    let namespace = cluster::scope_namespace(global, Some(cluster));
    tracing::info!(cluster = %cluster.name, %namespace, "reading the cluster for the walk");
    let mut snapshot = crate::source::live::path::snapshot(cluster, &namespace).await?;
    let (target_ns, service) = match resolve_target(&snapshot, target, &namespace) {
        Target::Service {
            namespace: ns,
            name,
        } => (ns, Some(name)),
        Target::Pod { namespace: ns, .. } => (ns, None),
        Target::Host(host) => {
            // A host of the form name.ns[.svc...]: its namespace's pods are the servers.
            let parts: Vec<&str> = host.split('.').collect();
            let ns = match parts.as_slice() {
                [_, ns, "svc", ..] => (*ns).to_string(),
                _ => namespace.clone(),
            };
            (ns, None)
        }
    };
    let fqdn = match &service {
        Some(name) => format!("{name}.{target_ns}.svc.cluster.local"),
        None => target.trim_end_matches('.').to_string(),
    };
    // The Services the target's VirtualServices route to are servers of the walk too.
    let mut read: Vec<(String, Option<String>)> = vec![(target_ns.clone(), service.clone())];
    for host in route_destinations(&snapshot, &fqdn) {
        let parts: Vec<&str> = host.split('.').collect();
        if let [name, ns, "svc", "cluster", "local"] = parts.as_slice() {
            let entry = ((*ns).to_string(), Some((*name).to_string()));
            if !read.contains(&entry) {
                read.push(entry);
            }
        }
    }
    let mut pods_read: Vec<String> = Vec::new();
    for (ns, name) in read {
        // A namespace's pods are read once (the client's are already there).
        let pods_ns = if pods_read.contains(&ns) {
            namespace.clone()
        } else {
            pods_read.push(ns.clone());
            ns.clone()
        };
        crate::source::live::path::target(cluster, &mut snapshot, &namespace, &pods_ns, None)
            .await?;
        if let Some(name) = name {
            crate::source::live::path::endpoints(cluster, &mut snapshot, &ns, &name).await?;
        }
    }
    for (kind, reason) in &snapshot.unavailable {
        eprintln!("warning: cannot list {kind} in {}: {reason}", cluster.name);
    }
    Ok((snapshot, namespace))
}

/// The hosts the VirtualServices for `fqdn` route to (completed in each VirtualService's
/// namespace), other than `fqdn` itself.
fn route_destinations(snapshot: &Snapshot, fqdn: &str) -> Vec<String> {
    use crate::istio::config::host::{matches, to_fqdn};
    let config = crate::istio::config::Config::of(snapshot);
    let mut out = Vec::new();
    for vs in &config.virtual_services {
        let spec = &vs.spec;
        let for_host = spec.hosts.iter().any(|h| {
            let full = to_fqdn(vs.namespace(), h);
            full == fqdn || (full.starts_with('*') && matches(&full, fqdn))
        });
        if !for_host {
            continue;
        }
        let destinations = spec
            .http
            .iter()
            .flat_map(|r| &r.route)
            .chain(spec.tcp.iter().flat_map(|r| &r.route))
            .chain(spec.tls.iter().flat_map(|r| &r.route))
            .filter_map(|d| d.destination.as_ref());
        for d in destinations {
            let host = to_fqdn(vs.namespace(), &d.host);
            if host != fqdn && !out.contains(&host) {
                out.push(host);
            }
        }
    }
    out
}

/// Walks the request and returns the walk (for callers that want the data).
pub async fn examine(global: &Global, request: &Request) -> Result<Walk> {
    let live = request.inputs.is_empty();
    let cluster = if live {
        Some(cluster::connect(global, global.context.first().map(String::as_str)).await?)
    } else {
        None
    };
    let (snapshot, namespace) = if let Some(cluster) = &cluster {
        live_snapshot(cluster, global, &request.target).await?
    } else {
        let namespace = cluster::scope_namespace(global, None);
        let options = FileOptions {
            recursive: request.recursive,
            default_namespace: Some(namespace.clone()),
            max_input: Some(request.max_input_size),
        };
        let (snapshot, stats) = files::load(&request.inputs, &options).map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            if errors.len() == 1 {
                errors.into_iter().next().expect("one error")
            } else {
                Error::Data(lines.join("\n  "))
            }
        })?;
        if stats.objects == 0 {
            return Err(Error::Data(
                "the files hold no Kubernetes object to walk".into(),
            ));
        }
        (snapshot, namespace)
    };
    let client = client(&snapshot, &request.source, &namespace, live)?;
    let target = resolve_target(&snapshot, &request.target, client.namespace);
    let mut http = request.request.clone();
    if http.authority.is_empty() {
        http.authority = request.target.clone();
    }
    let pod = client.pod.clone();
    let sidecar = client.dataplane == crate::istio::dataplane::Dataplane::Sidecar;
    let question = Question {
        client,
        target,
        port: request.port,
        request: http,
        live,
    };
    let mut walk = walk::walk(&snapshot, &question);
    // Live, with a sidecar: what its Envoy holds for the walk's destinations; and what the
    // servers' Envoys accept.
    if let (Some(cluster), true) = (&cluster, request.probe) {
        let wanted = proxy::wanted(&walk);
        let client_pod = pod
            .filter(|_| sidecar && !wanted.is_empty())
            .and_then(|pod| {
                snapshot.all_pods().find(|p| {
                    p.object.name() == pod && p.object.namespace() == Some(namespace.as_str())
                })
            });
        let servers = proxy::wanted_servers(&walk);
        let (client_view, server_views) = tokio::join!(
            async {
                match client_pod {
                    Some(p) => Some(proxy::read(cluster, &p.object, &wanted).await),
                    None => None,
                }
            },
            futures::future::join_all(
                servers
                    .iter()
                    .map(|(ns, pod)| proxy::read_server(cluster, ns, pod))
            )
        );
        if let Some(view) = client_view {
            proxy::compare(&mut walk, &view);
        }
        proxy::compare_servers(&mut walk, &server_views);
    }
    Ok(walk)
}

pub async fn run(global: &Global, request: Request) -> Result<u8> {
    let walk = examine(global, &request).await?;
    let text = match request.output {
        DocumentFormat::Json => crate::output::json::pretty_json(&walk),
        DocumentFormat::Yaml => crate::formats::yaml_write::to_string(
            &serde_json::to_value(&walk).map_err(|e| Error::Internal(e.to_string()))?,
        ),
        DocumentFormat::Text => {
            let styles = Styles::new(global.color.enabled(Stream::Stdout));
            render::text(&walk, &styles)
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    Ok(exit_code(&walk, request.expect))
}

/// 0 when the walk finds the request reachable (or, with `--expect blocked`, failing); 79 when a
/// hop fails (or the walk disagrees with `--expect`); 69 when a hop could not be checked.
pub fn exit_code(walk: &Walk, expect: Option<Expect>) -> u8 {
    let status = walk.status();
    match (expect, status) {
        (_, Status::Unknown) => exit::UNAVAILABLE,
        (Some(Expect::Blocked), Status::Fail) => exit::OK,
        (Some(Expect::Blocked), _) => exit::FINDINGS,
        (_, Status::Fail) => exit::FINDINGS,
        _ => exit::OK,
    }
}
