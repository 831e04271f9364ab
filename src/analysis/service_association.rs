//! Istio's `deployment.MultiServiceAnalyzer` (ServiceAssociationAnalyzer): a workload in the
//! mesh whose pods two Services of its namespace select with the same port but different
//! protocols (IST0116), or with the same targetPort but different ports (IST0137). Istio reads
//! Deployments; mesh-doctor reads the templates of every workload kind, as the pods they will
//! create, and counts a namespace labelled `istio.io/rev` as in the mesh (see docs/compat.md).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::findings::messages::{IST0116, IST0137};
use crate::findings::{Finding, ResourceRef};
use crate::istio::injection::{INJECTION_LABEL, REVISION_LABEL};
use crate::kube::snapshot::{Located, Object, Snapshot, Workload};

const SIDECAR_INJECT: &str = "sidecar.istio.io/inject";

/// Istio's "in the mesh" for a workload: an `istio-proxy` container with an image, else the
/// template's `sidecar.istio.io/inject` label, else its annotation, else the namespace's
/// `istio-injection=enabled` (or, in mesh-doctor, an `istio.io/rev` label).
fn in_mesh(namespaces: &Namespaces, workload: &Workload) -> bool {
    let template = &workload.template;
    let has_proxy = template.spec.as_ref().is_some_and(|s| {
        s.containers
            .iter()
            .find(|c| c.name == "istio-proxy")
            .is_some_and(|c| c.image.as_deref().is_some_and(|i| !i.is_empty()))
    });
    if has_proxy {
        return true;
    }
    let meta = template.metadata.as_ref();
    for map in [
        meta.and_then(|m| m.labels.as_ref()),
        meta.and_then(|m| m.annotations.as_ref()),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(v) = map.get(SIDECAR_INJECT) {
            return v == "true";
        }
    }
    let namespace = workload.namespace().unwrap_or("");
    namespaces.get(namespace).is_some_and(|n| {
        n.object.label(INJECTION_LABEL) == Some("enabled")
            || (n.object.label(INJECTION_LABEL).is_none()
                && n.object
                    .label(REVISION_LABEL)
                    .is_some_and(|r| !r.is_empty()))
    })
}

/// A waypoint (`gateway.istio.io/managed: istio.io-mesh-controller`) is not judged.
fn is_waypoint(workload: &Workload) -> bool {
    workload.label("gateway.istio.io/managed") == Some("istio.io-mesh-controller")
}

/// The first Namespace object of each name (as [`Snapshot::namespace`] finds it).
type Namespaces<'s> = HashMap<&'s str, &'s Located<Namespace>>;
/// The Services of each namespace, in the snapshot's order.
type ServicesOf<'s> = HashMap<&'s str, Vec<&'s Located<Service>>>;

/// The Services of the workload's namespace whose (non-empty) selector matches its template.
fn matching_services<'s>(
    services: &ServicesOf<'s>,
    workload: &Workload,
) -> Vec<&'s Located<Service>> {
    let empty = BTreeMap::new();
    let labels = workload
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .unwrap_or(&empty);
    let namespace = workload.namespace().unwrap_or("");
    services
        .get(namespace)
        .into_iter()
        .flatten()
        .copied()
        .filter(|s| {
            let selector = s.object.spec.as_ref().and_then(|s| s.selector.as_ref());
            selector.is_some_and(|sel| {
                !sel.is_empty() && sel.iter().all(|(k, v)| labels.get(k) == Some(v))
            })
        })
        .collect()
}

fn full_name(s: &Located<Service>) -> String {
    format!("{}/{}", s.object.namespace().unwrap_or(""), s.object.name())
}

/// `deployment.MultiServiceAnalyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let mut namespaces: Namespaces = HashMap::new();
    for n in &snapshot.namespaces {
        namespaces.entry(n.object.name()).or_insert(n);
    }
    let mut services_of: ServicesOf = HashMap::new();
    for s in &snapshot.services {
        services_of
            .entry(s.object.namespace().unwrap_or(""))
            .or_default()
            .push(s);
    }
    for located in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none())
    {
        let workload = &located.object;
        if is_waypoint(workload) || !in_mesh(&namespaces, workload) {
            continue;
        }
        let services = matching_services(&services_of, workload);
        // port -> protocol -> services; targetPort -> port -> service
        let mut protocols: BTreeMap<i32, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let mut target_ports: BTreeMap<String, BTreeMap<i32, String>> = BTreeMap::new();
        for service in &services {
            let name = full_name(service);
            for port in service
                .object
                .spec
                .as_ref()
                .and_then(|s| s.ports.as_ref())
                .into_iter()
                .flatten()
            {
                let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".into());
                let protocol = if protocol.is_empty() {
                    "TCP".into()
                } else {
                    protocol
                };
                protocols
                    .entry(port.port)
                    .or_default()
                    .entry(protocol)
                    .or_default()
                    .push(name.clone());
                let target = match &port.target_port {
                    Some(IntOrString::Int(n)) => n.to_string(),
                    Some(IntOrString::String(s)) => s.clone(),
                    None => String::new(),
                };
                let target = if target.is_empty() || target == "0" {
                    port.port.to_string()
                } else {
                    target
                };
                target_ports
                    .entry(target)
                    .or_default()
                    .insert(port.port, name.clone());
            }
        }
        let reference = || ResourceRef::of(located).at_field(located, "metadata.name");
        for (port, by_protocol) in &protocols {
            if by_protocol.len() > 1 {
                let mut names: Vec<String> = by_protocol.values().flatten().cloned().collect();
                names.sort();
                out.push(Finding::new(
                    IST0116::message(workload.name(), *port, names),
                    Some(reference()),
                ));
            }
        }
        for (target, by_port) in &target_ports {
            if by_port.len() > 1 {
                let mut names: Vec<String> = by_port.values().cloned().collect();
                names.sort();
                let ports: Vec<String> = by_port.keys().map(i32::to_string).collect();
                out.push(Finding::new(
                    IST0137::message(workload.name(), names, target.as_str(), ports),
                    Some(reference()),
                ));
            }
        }
    }
}
