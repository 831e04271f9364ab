//! How a workload takes part in the mesh, read off its pod (or the pod template a workload will
//! create): a sidecar, ambient mode, or neither; and the mesh's root namespace. Shared by the
//! analyzers and the `path` walk.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::injection::{INJECT_LABEL, INJECTION_LABEL, REVISION_LABEL};
use k8s_openapi::api::core::v1::{Namespace, Service};

use super::config::Labels;
use crate::kube::selector::labels_match;
use crate::kube::snapshot::{Located, Object, ServicesByNamespace, Snapshot};

/// The annotation the CNI agent sets on a pod it has redirected to ztunnel.
pub const AMBIENT_REDIRECTION: &str = "ambient.istio.io/redirection";
/// The label that asks for ambient mode (namespace or pod).
pub const DATAPLANE_MODE: &str = "istio.io/dataplane-mode";
/// The sidecar's container name.
pub const PROXY_CONTAINER: &str = "istio-proxy";

/// The mesh's root namespace (`rootNamespace`, else Istio's default `istio-system`).
pub fn root_namespace(snapshot: &Snapshot) -> &str {
    snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.get("rootNamespace")?.as_str())
        .filter(|r| !r.is_empty())
        .unwrap_or("istio-system")
}

/// The mesh's trust domain (`trustDomain`, else `cluster.local`): the first part of a SPIFFE
/// principal such as `cluster.local/ns/shop/sa/frontend`.
pub fn trust_domain(snapshot: &Snapshot) -> &str {
    snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.get("trustDomain")?.as_str())
        .filter(|r| !r.is_empty())
        .unwrap_or("cluster.local")
}

/// True when the pod spec has an `istio-proxy` container (classic or native) with an image.
pub fn has_proxy(spec: Option<&PodSpec>) -> bool {
    spec.is_some_and(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .any(|c| c.name == PROXY_CONTAINER && c.image.as_deref().is_some_and(|i| !i.is_empty()))
    })
}

/// True when the pod (or template) is an Istio gateway rather than a workload with a sidecar:
/// a Gateway API gateway's pod (`gateway.networking.k8s.io/gateway-name`), or a proxy run as
/// `proxy router` (Istio's ingress and egress gateways). PeerAuthentication does not decide what
/// a gateway's listeners accept.
pub fn is_gateway(labels: &Labels, spec: Option<&PodSpec>) -> bool {
    labels.contains_key(super::config::gateway_api::GATEWAY_NAME_LABEL)
        || spec.is_some_and(|s| {
            s.containers.iter().any(|c| {
                c.name == PROXY_CONTAINER && c.args.iter().flatten().any(|a| a == "router")
            })
        })
}

/// The explicit `sidecar.istio.io/inject` of a pod (label, then annotation): Istio's order.
pub fn inject_value(meta: &ObjectMeta) -> Option<bool> {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(INJECT_LABEL))
        .or_else(|| meta.annotations.as_ref().and_then(|a| a.get(INJECT_LABEL)))
        .map(|v| v == "true")
}

/// How a server or client pod takes its traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataplane {
    Sidecar,
    Ambient,
    None,
}

/// The dataplane of a pod (`template: false`: it exists, its containers say) or of a pod
/// template (`template: true`: what injection will make of it, from its labels and its
/// namespace's).
pub fn dataplane(
    snapshot: &Snapshot,
    meta: &ObjectMeta,
    spec: Option<&PodSpec>,
    template: bool,
) -> Dataplane {
    let namespace = meta.namespace.as_deref().unwrap_or("");
    let ns = snapshot
        .all_namespaces()
        .find(|n| n.object.name() == namespace)
        .map(|n| &n.object);
    dataplane_in(ns, meta, spec, template)
}

/// [`dataplane`] with the pod's Namespace already looked up (`None`: not known).
fn dataplane_in(
    ns: Option<&Namespace>,
    meta: &ObjectMeta,
    spec: Option<&PodSpec>,
    template: bool,
) -> Dataplane {
    if has_proxy(spec) {
        return Dataplane::Sidecar;
    }
    fn get<'m>(m: &'m Option<BTreeMap<String, String>>, k: &str) -> Option<&'m str> {
        m.as_ref().and_then(|m| m.get(k)).map(String::as_str)
    }
    if get(&meta.annotations, AMBIENT_REDIRECTION) == Some("enabled") {
        return Dataplane::Ambient;
    }
    if !template {
        return Dataplane::None; // a pod that exists has its containers
    }
    if let Some(inject) = inject_value(meta) {
        return if inject {
            Dataplane::Sidecar
        } else {
            Dataplane::None
        };
    }
    let label = |k: &str| ns.and_then(|n| n.label(k));
    if label(INJECTION_LABEL) == Some("enabled")
        || label(REVISION_LABEL).is_some_and(|r| !r.is_empty())
    {
        Dataplane::Sidecar
    } else if label(DATAPLANE_MODE) == Some("ambient")
        || get(&meta.labels, DATAPLANE_MODE) == Some("ambient")
    {
        Dataplane::Ambient
    } else {
        Dataplane::None
    }
}

/// The workload port a Service port sends to on one server (`targetPort`, a name resolved
/// through the containers' ports), or `None` when a name matches no container port.
pub fn target_port(
    port: &k8s_openapi::api::core::v1::ServicePort,
    spec: Option<&PodSpec>,
) -> Option<u32> {
    match &port.target_port {
        None => u32::try_from(port.port).ok(),
        Some(IntOrString::Int(n)) => u32::try_from(*n).ok(),
        Some(IntOrString::String(name)) => spec?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u32::try_from(p.container_port).ok()),
    }
}

/// One pod, or one workload's pod template, behind a Service.
#[derive(Clone, Debug)]
pub struct Backend<'s> {
    /// `Deployment shop/orders` or `Pod shop/orders-1`.
    pub what: String,
    pub namespace: &'s str,
    pub labels: &'s Labels,
    pub spec: Option<&'s PodSpec>,
    pub dataplane: Dataplane,
    /// A workload's replicas (1 when unset); `None` for a pod.
    pub replicas: Option<i32>,
}

/// A Service's namespace and its non-empty selector (`None`: it selects no pods).
fn service_selector(svc: &Located<Service>) -> Option<(&str, &BTreeMap<String, String>)> {
    let selector = svc
        .object
        .spec
        .as_ref()?
        .selector
        .as_ref()
        .filter(|s| !s.is_empty())?;
    Some((svc.object.namespace().unwrap_or(""), selector))
}

/// The pod templates (workloads first: that is what a person changes) and the pods a Service's
/// selector picks, in its namespace.
pub fn service_backends<'s>(snapshot: &'s Snapshot, svc: &Located<Service>) -> Vec<Backend<'s>> {
    let Some((ns, selector)) = service_selector(svc) else {
        return Vec::new();
    };
    selected_backends(snapshot, ns, Some(selector))
}

/// The pod templates (workloads first) and the pods in `namespace` whose labels hold every label
/// of `selector` (`None`: all of them, as a policy without a selector applies to).
pub fn selected_backends<'s>(
    snapshot: &'s Snapshot,
    ns: &str,
    selector: Option<&Labels>,
) -> Vec<Backend<'s>> {
    let namespace = snapshot
        .all_namespaces()
        .find(|n| n.object.name() == ns)
        .map(|n| &n.object);
    let workloads = snapshot
        .workloads
        .iter()
        .filter(|w| w.object.namespace() == Some(ns) && w.object.owner.is_none());
    let pods = snapshot
        .pods
        .iter()
        .filter(|p| p.object.namespace() == Some(ns));
    backends_of(namespace, ns, workloads, pods, selector)
}

fn backends_of<'s>(
    namespace: Option<&Namespace>,
    ns: &str,
    workloads: impl Iterator<Item = &'s Located<crate::kube::snapshot::Workload>>,
    pods: impl Iterator<Item = &'s Located<k8s_openapi::api::core::v1::Pod>>,
    selector: Option<&Labels>,
) -> Vec<Backend<'s>> {
    static EMPTY: Labels = BTreeMap::new();
    let picks = |labels: &Labels| selector.is_none_or(|selector| labels_match(selector, labels));
    let mut out = Vec::new();
    for w in workloads {
        let meta = &w.object.template.metadata;
        let labels = meta
            .as_ref()
            .and_then(|m| m.labels.as_ref())
            .unwrap_or(&EMPTY);
        if !picks(labels) {
            continue;
        }
        static NO_META: ObjectMeta = ObjectMeta {
            annotations: None,
            creation_timestamp: None,
            deletion_grace_period_seconds: None,
            deletion_timestamp: None,
            finalizers: None,
            generate_name: None,
            generation: None,
            labels: None,
            managed_fields: None,
            name: None,
            namespace: None,
            owner_references: None,
            resource_version: None,
            self_link: None,
            uid: None,
        };
        let meta = meta.as_ref().unwrap_or(&NO_META);
        let spec = w.object.template.spec.as_ref();
        out.push(Backend {
            what: format!("{} {ns}/{}", w.object.kind.as_str(), w.object.name()),
            namespace: w.object.namespace().unwrap_or(""),
            labels,
            spec,
            dataplane: dataplane_in(namespace, meta, spec, true),
            replicas: Some(w.object.replicas.unwrap_or(1)),
        });
    }
    for pod in pods {
        let labels = pod.object.metadata.labels.as_ref().unwrap_or(&EMPTY);
        if picks(labels) {
            out.push(Backend {
                what: format!("Pod {ns}/{}", pod.object.name()),
                namespace: pod.object.namespace().unwrap_or(""),
                labels,
                spec: pod.object.spec.as_ref(),
                dataplane: dataplane_in(
                    namespace,
                    &pod.object.metadata,
                    pod.object.spec.as_ref(),
                    false,
                ),
                replicas: None,
            });
        }
    }
    out
}

/// Every backend of the snapshot's namespaces (workloads, then pods, namespace by namespace in
/// name order), for the checks that go workload by workload. One pass over the snapshot.
pub fn all_backends(snapshot: &Snapshot) -> Vec<Backend<'_>> {
    type Group<'s> = (
        Vec<&'s Located<crate::kube::snapshot::Workload>>,
        Vec<&'s Located<k8s_openapi::api::core::v1::Pod>>,
    );
    let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
    for w in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none())
    {
        if let Some(ns) = w.object.namespace() {
            groups.entry(ns).or_default().0.push(w);
        }
    }
    for p in &snapshot.pods {
        if let Some(ns) = p.object.namespace() {
            groups.entry(ns).or_default().1.push(p);
        }
    }
    // The first Namespace of a name, as `dataplane` finds it.
    let mut namespaces: std::collections::HashMap<&str, &Namespace> = Default::default();
    for n in snapshot.all_namespaces() {
        namespaces.entry(n.object.name()).or_insert(&n.object);
    }
    let mut out = Vec::new();
    for (ns, (workloads, pods)) in groups {
        let namespace = namespaces.get(ns).copied();
        out.extend(backends_of(
            namespace,
            ns,
            workloads.into_iter(),
            pods.into_iter(),
            None,
        ));
    }
    out
}

/// [`all_backends`], with each namespace's run of them found by name: for the analyses that ask
/// for the backends of many Services or policies (one pass over the snapshot for all of them).
pub struct BackendIndex<'s> {
    all: Vec<Backend<'s>>,
    by_namespace: std::collections::HashMap<&'s str, std::ops::Range<usize>>,
}

impl<'s> BackendIndex<'s> {
    pub fn of(snapshot: &'s Snapshot) -> Self {
        let all = all_backends(snapshot);
        let mut by_namespace: std::collections::HashMap<&'s str, std::ops::Range<usize>> =
            Default::default();
        // `all_backends` gives each namespace's backends together.
        let mut start = 0;
        for end in 1..=all.len() {
            if end == all.len() || all[end].namespace != all[start].namespace {
                by_namespace.insert(all[start].namespace, start..end);
                start = end;
            }
        }
        BackendIndex { all, by_namespace }
    }

    /// Every backend, as [`all_backends`] orders them.
    pub fn all(&self) -> &[Backend<'s>] {
        &self.all
    }

    /// [`selected_backends`] from the index.
    pub fn selected(&self, ns: &str, selector: Option<&Labels>) -> Vec<Backend<'s>> {
        let run = self.by_namespace.get(ns).cloned().unwrap_or_default();
        self.all[run]
            .iter()
            .filter(|b| selector.is_none_or(|s| labels_match(s, b.labels)))
            .cloned()
            .collect()
    }

    /// [`service_backends`] from the index.
    pub fn of_service(&self, svc: &Located<Service>) -> Vec<Backend<'s>> {
        match service_selector(svc) {
            Some((ns, selector)) => self.selected(ns, Some(selector)),
            None => Vec::new(),
        }
    }
}

/// A Service port that sends to a backend: the Service, its port and the workload port.
#[derive(Debug)]
pub struct ServicePortTo {
    /// `shop/web`.
    pub service: String,
    pub port: u32,
    pub target: u32,
}

/// The ports a backend is known to listen on: its declared container ports, and the workload
/// ports its Services send to. Kubernetes' `containerPort` is informational (a container may
/// listen on a port it does not declare): a port missing here is not known to be unused unless
/// the backend declares ports at all.
#[derive(Debug, Default)]
pub struct BackendPorts {
    pub declared: BTreeSet<u32>,
    pub services: Vec<ServicePortTo>,
}

impl BackendPorts {
    /// Every known workload port, sorted.
    pub fn all(&self) -> BTreeSet<u32> {
        let mut all = self.declared.clone();
        all.extend(self.services.iter().map(|s| s.target));
        all
    }
}

/// The ports of a backend (see [`BackendPorts`]); `services` the snapshot's, by namespace.
pub fn backend_ports(services: &ServicesByNamespace<'_>, backend: &Backend<'_>) -> BackendPorts {
    let mut ports = BackendPorts::default();
    if let Some(spec) = backend.spec {
        for c in &spec.containers {
            if c.name == PROXY_CONTAINER {
                continue;
            }
            for p in c.ports.iter().flatten() {
                if let Ok(n) = u32::try_from(p.container_port) {
                    ports.declared.insert(n);
                }
            }
        }
    }
    for svc in services.of(backend.namespace) {
        let Some(spec) = svc.object.spec.as_ref() else {
            continue;
        };
        let Some(selector) = spec.selector.as_ref().filter(|s| !s.is_empty()) else {
            continue;
        };
        if !selector
            .iter()
            .all(|(k, v)| backend.labels.get(k) == Some(v))
        {
            continue;
        }
        for port in spec.ports.iter().flatten() {
            let (Ok(number), Some(target)) =
                (u32::try_from(port.port), target_port(port, backend.spec))
            else {
                continue;
            };
            ports.services.push(ServicePortTo {
                service: format!("{}/{}", backend.namespace, svc.object.name()),
                port: number,
                target,
            });
        }
    }
    ports
}
