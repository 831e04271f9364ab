//! Istio's `services.MultiClusterServiceAnalyzer` (IST0170): a Service that exists in several
//! clusters of one analysis (`--context` repeated) with a different type, a different mix of
//! headless and ClusterIP, or different ports (compared by name, every field). Istio names the
//! clusters by their cluster IDs; mesh-doctor by the kubeconfig contexts they were read from.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};

use crate::findings::messages::IST0170;
use crate::findings::{Finding, ResourceRef};
use crate::kube::snapshot::{Located, Object, Snapshot};

fn headless(spec: &ServiceSpec) -> bool {
    spec.cluster_ip.as_deref() == Some("None")
}

fn sorted_ports(spec: &ServiceSpec) -> Vec<ServicePort> {
    let mut ports = spec.ports.clone().unwrap_or_default();
    ports.sort_by(|a, b| a.name.cmp(&b.name));
    ports
}

/// `services.MultiClusterServiceAnalyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    // (namespace, name) -> cluster -> the Service, clusters in the order they were read.
    type Clusters<'a> = Vec<(Arc<str>, &'a Located<Service>)>;
    let mut services: BTreeMap<(&str, &str), Clusters> = BTreeMap::new();
    for service in &snapshot.services {
        let Some(cluster) = service.origin.cluster.clone() else {
            continue;
        };
        let key = (
            service.object.namespace().unwrap_or(""),
            service.object.name(),
        );
        let entry = services.entry(key).or_default();
        if !entry.iter().any(|(c, _)| *c == cluster) {
            entry.push((cluster, service));
        }
    }
    let empty = ServiceSpec::default();
    for ((namespace, name), clusters) in &services {
        if clusters.len() < 2 {
            continue;
        }
        let (first_cluster, first) = &clusters[0];
        let first_spec = first.object.spec.as_ref().unwrap_or(&empty);
        let first_ports = sorted_ports(first_spec);
        let mut inconsistent: BTreeSet<String> = BTreeSet::new();
        let mut reasons: BTreeSet<&str> = BTreeSet::new();
        for (cluster, service) in clusters {
            let spec = service.object.spec.as_ref().unwrap_or(&empty);
            if headless(first_spec) != headless(spec) {
                inconsistent.extend(clusters.iter().map(|(c, _)| c.to_string()));
                reasons.insert("service has mixed mode like headless and clusterIP");
            }
            if first_spec.type_ != spec.type_ {
                inconsistent.insert(cluster.to_string());
                reasons.insert("service type is inconsistent");
            }
            if first_ports != sorted_ports(spec) {
                inconsistent.insert(cluster.to_string());
                reasons.insert("service ports are inconsistent");
            }
        }
        if inconsistent.is_empty() {
            continue;
        }
        inconsistent.insert(first_cluster.to_string());
        let reasons: Vec<&str> = reasons.into_iter().collect();
        out.push(Finding::new(
            IST0170::message(
                *name,
                *namespace,
                inconsistent.into_iter().collect::<Vec<_>>(),
                reasons.join("; "),
            ),
            Some(ResourceRef::of(first)),
        ));
    }
}
