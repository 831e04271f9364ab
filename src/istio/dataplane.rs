//! How a workload takes part in the mesh, read off its pod (or the pod template a workload will
//! create): a sidecar, ambient mode, or neither; and the mesh's root namespace. Shared by the
//! analyzers and the `path` walk.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::injection::{INJECT_LABEL, INJECTION_LABEL, REVISION_LABEL};
use crate::kube::snapshot::{Object, Snapshot};

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
    if has_proxy(spec) {
        return Dataplane::Sidecar;
    }
    let get =
        |m: &Option<BTreeMap<String, String>>, k: &str| m.as_ref().and_then(|m| m.get(k)).cloned();
    if get(&meta.annotations, AMBIENT_REDIRECTION).as_deref() == Some("enabled") {
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
    let namespace = meta.namespace.as_deref().unwrap_or("");
    let ns = snapshot
        .all_namespaces()
        .find(|n| n.object.name() == namespace);
    let label = |k: &str| ns.and_then(|n| n.object.label(k));
    if label(INJECTION_LABEL) == Some("enabled")
        || label(REVISION_LABEL).is_some_and(|r| !r.is_empty())
    {
        Dataplane::Sidecar
    } else if label(DATAPLANE_MODE) == Some("ambient")
        || get(&meta.labels, DATAPLANE_MODE).as_deref() == Some("ambient")
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
