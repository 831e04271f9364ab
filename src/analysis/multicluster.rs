//! MD0205: two clusters of one analysis (`--context a --context b`) that use the same CLUSTER_ID.
//!
//! A cluster's ID is read from what names it: istiod's `CLUSTER_ID` env (Istio's default
//! `Kubernetes` when unset), the `ISTIO_META_CLUSTER_ID` env of the injected proxies, and, where a
//! caller probed proxies, their node metadata (passed in as [`Evidence`]). Two contexts that
//! reach the same cluster (the same namespace UIDs) are one cluster, not a collision.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::MD0205;
use crate::formats::text::join_names;
use crate::istio::istiod::{self, PROXY_CLUSTER_ID_ENV};
use crate::istio::sidecar;
use crate::kube::snapshot::{Snapshot, WorkloadKind};

/// Where a cluster ID was read.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// istiod's `CLUSTER_ID` env; `explicit` is false when unset (Istio's default applies).
    Istiod { explicit: bool },
    /// `ISTIO_META_CLUSTER_ID` of an injected pod's istio-proxy container.
    InjectedPod,
    /// The node metadata `CLUSTER_ID` a probed proxy reported.
    ProxyMetadata,
}

/// One place that names a cluster's ID.
#[derive(Clone, Debug)]
pub struct Evidence {
    /// The kubeconfig context the object was read from.
    pub cluster: Arc<str>,
    pub id: String,
    pub source: Source,
    pub resource: ResourceRef,
}

/// The cluster IDs a snapshot shows, for objects read from a named cluster.
pub fn evidence(snapshot: &Snapshot) -> Vec<Evidence> {
    let mut out = Vec::new();
    for d in &snapshot.workloads {
        let Some(cluster) = d.origin.cluster.clone() else {
            continue;
        };
        let w = &d.object;
        let template_labels = w.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
        let spec = w.template.spec.as_ref();
        if w.kind != WorkloadKind::Deployment
            || !istiod::is_istiod(w.metadata.labels.as_ref(), template_labels, spec)
        {
            continue;
        }
        if let Some((id, explicit)) = spec.and_then(istiod::cluster_id) {
            out.push(Evidence {
                cluster,
                id,
                source: Source::Istiod { explicit },
                resource: ResourceRef::of(d),
            });
        }
    }
    for p in &snapshot.pods {
        let Some(cluster) = p.origin.cluster.clone() else {
            continue;
        };
        let id = p
            .object
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .and_then(|proxy| istiod::env_value(proxy.container, PROXY_CLUSTER_ID_ENV));
        if let Some(id) = id {
            out.push(Evidence {
                cluster,
                id: id.to_string(),
                source: Source::InjectedPod,
                resource: ResourceRef::of(p),
            });
        }
    }
    out
}

/// Groups contexts that reach the same cluster: they share a namespace UID.
fn same_cluster_groups(snapshot: &Snapshot) -> BTreeMap<Arc<str>, Arc<str>> {
    let mut uids: BTreeMap<Arc<str>, BTreeSet<&str>> = BTreeMap::new();
    for ns in &snapshot.namespaces {
        if let (Some(cluster), Some(uid)) = (&ns.origin.cluster, ns.object.metadata.uid.as_deref())
        {
            uids.entry(cluster.clone()).or_default().insert(uid);
        }
    }
    let mut group: BTreeMap<Arc<str>, Arc<str>> = BTreeMap::new();
    let names: Vec<&Arc<str>> = uids.keys().collect();
    for (i, a) in names.iter().enumerate() {
        let representative = names[..i]
            .iter()
            .find(|b| !uids[**b].is_disjoint(&uids[*a]))
            .map(|b| group.get(*b).cloned().unwrap_or_else(|| (*b).clone()))
            .unwrap_or_else(|| (*a).clone());
        group.insert((*a).clone(), representative);
    }
    group
}

fn describe(items: &[&Evidence]) -> String {
    let mut parts = Vec::new();
    let mut pods = 0;
    let mut probed = 0;
    for e in items {
        match e.source {
            Source::Istiod { explicit: true } => parts.push(format!(
                "istiod {} env CLUSTER_ID",
                e.resource
                    .namespace
                    .as_deref()
                    .map_or(e.resource.name.clone(), |ns| format!(
                        "{ns}/{}",
                        e.resource.name
                    ))
            )),
            Source::Istiod { explicit: false } => parts.push(format!(
                "istiod {} without CLUSTER_ID (Istio's default)",
                e.resource
                    .namespace
                    .as_deref()
                    .map_or(e.resource.name.clone(), |ns| format!(
                        "{ns}/{}",
                        e.resource.name
                    ))
            )),
            Source::InjectedPod => pods += 1,
            Source::ProxyMetadata => probed += 1,
        }
    }
    if pods > 0 {
        parts.push(format!(
            "{pods} injected pod(s) with {PROXY_CLUSTER_ID_ENV}"
        ));
    }
    if probed > 0 {
        parts.push(format!("{probed} probed proxy(ies) in their node metadata"));
    }
    parts.join(", ")
}

/// MD0205 from evidence: one finding per cluster that shares an ID with another cluster, each
/// naming all of them. `groups` maps a context to the context that reaches the same cluster.
pub fn collisions(evidence: &[Evidence], groups: &BTreeMap<Arc<str>, Arc<str>>) -> Vec<Finding> {
    let physical = |c: &Arc<str>| groups.get(c).cloned().unwrap_or_else(|| c.clone());
    let mut by_id: BTreeMap<&str, BTreeMap<Arc<str>, Vec<&Evidence>>> = BTreeMap::new();
    for e in evidence {
        by_id
            .entry(e.id.as_str())
            .or_default()
            .entry(physical(&e.cluster))
            .or_default()
            .push(e);
    }
    let mut out = Vec::new();
    for (id, clusters) in by_id {
        if clusters.len() < 2 {
            continue;
        }
        let names: Vec<String> = clusters.keys().map(|c| c.to_string()).collect();
        let detail = clusters
            .iter()
            .map(|(c, items)| format!("{c}: {}", describe(items)))
            .collect::<Vec<_>>()
            .join("; ");
        let fix = "Give every cluster of the mesh its own ID: install istiod in each with a unique values.global.multiCluster.clusterName (its CLUSTER_ID), then restart the injected workloads so their proxies carry the new ID (ISTIO_META_CLUSTER_ID).";
        for items in clusters.values() {
            let mut items = items.clone();
            items.sort_by(|a, b| a.source.cmp(&b.source));
            let mut resource = items[0].resource.clone();
            resource.cluster = Some(items[0].cluster.clone());
            out.push(Finding::new(
                MD0205::message(
                    id,
                    format!("clusters {}", join_names(&names)),
                    detail.clone(),
                    fix,
                ),
                Some(resource),
            ));
        }
    }
    out
}

/// The analyzer: MD0205 from what the snapshot shows (no probes).
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let groups = same_cluster_groups(snapshot);
    out.extend(collisions(&evidence(snapshot), &groups));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::snapshot::{Located, Origin};
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use serde_json::json;

    fn origin(cluster: &str) -> Origin {
        Origin {
            cluster: Some(Arc::from(cluster)),
            ..Origin::default()
        }
    }

    fn istiod(cluster: &str, id: Option<&str>) -> Located<crate::kube::snapshot::Workload> {
        let env = id.map_or_else(
            || json!([]),
            |id| json!([{"name": "CLUSTER_ID", "value": id}]),
        );
        let deployment: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(json!({
            "metadata": {"name": "istiod", "namespace": "istio-system", "labels": {"app": "istiod"}},
            "spec": {"selector": {}, "template": {"metadata": {"labels": {"app": "istiod"}},
                "spec": {"containers": [{"name": "discovery", "image": "istio/pilot:1.30.3", "env": env}]}}},
        }))
        .unwrap();
        Located {
            object: crate::source::live::from_deployment(deployment),
            origin: origin(cluster),
        }
    }

    fn injected_pod(cluster: &str, name: &str, id: &str) -> Located<Pod> {
        Located {
            object: serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "shop"},
                "spec": {"containers": [{"name": "app"}, {"name": "istio-proxy", "image": "istio/proxyv2:1.30.3",
                    "env": [{"name": "ISTIO_META_CLUSTER_ID", "value": id}]}]},
            }))
            .unwrap(),
            origin: origin(cluster),
        }
    }

    fn namespace(cluster: &str, uid: &str) -> Located<Namespace> {
        Located {
            object: serde_json::from_value(json!({"metadata": {"name": "default", "uid": uid}}))
                .unwrap(),
            origin: origin(cluster),
        }
    }

    fn findings(snapshot: &Snapshot) -> Vec<Finding> {
        let mut out = Vec::new();
        analyze(snapshot, &mut out);
        out
    }

    #[test]
    fn two_clusters_with_one_id() {
        let mut s = Snapshot::default();
        s.workloads.push(istiod("east", Some("mesh1")));
        s.workloads.push(istiod("west", None));
        s.pods.push(injected_pod("west", "web-1", "mesh1"));
        s.pods.push(injected_pod("west", "web-2", "mesh1"));
        s.namespaces.push(namespace("east", "uid-east"));
        s.namespaces.push(namespace("west", "uid-west"));
        let out = findings(&s);
        // istiod of west has no CLUSTER_ID (Kubernetes), but its proxies say mesh1.
        assert_eq!(out.len(), 2, "{out:?}");
        let clusters: Vec<&str> = out
            .iter()
            .map(|f| f.resource.as_ref().unwrap().cluster.as_deref().unwrap())
            .collect();
        assert_eq!(clusters, ["east", "west"]);
        let m = &out[0].message;
        assert!(
            m.starts_with("CLUSTER_ID \"mesh1\" is used by clusters east and west"),
            "{m}"
        );
        assert!(
            m.contains("east: istiod istio-system/istiod env CLUSTER_ID"),
            "{m}"
        );
        assert!(
            m.contains("west: 2 injected pod(s) with ISTIO_META_CLUSTER_ID"),
            "{m}"
        );
        assert_eq!(
            out[0].origin().as_deref(),
            Some("Deployment istio-system/istiod")
        );
        assert_eq!(out[1].origin().as_deref(), Some("Pod shop/web-1"));
    }

    #[test]
    fn istio_default_ids_collide_too() {
        let mut s = Snapshot::default();
        s.workloads.push(istiod("east", None));
        s.workloads.push(istiod("west", Some("Kubernetes")));
        let out = findings(&s);
        assert_eq!(out.len(), 2);
        assert!(
            out[0]
                .message
                .contains("without CLUSTER_ID (Istio's default)"),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn distinct_ids_and_one_cluster_twice_are_fine() {
        let mut s = Snapshot::default();
        s.workloads.push(istiod("east", Some("east")));
        s.workloads.push(istiod("west", Some("west")));
        assert!(findings(&s).is_empty());
        // Two contexts of the same cluster (same namespace UID).
        let mut s = Snapshot::default();
        s.workloads.push(istiod("admin@prod", Some("prod")));
        s.workloads.push(istiod("viewer@prod", Some("prod")));
        s.namespaces.push(namespace("admin@prod", "uid-1"));
        s.namespaces.push(namespace("viewer@prod", "uid-1"));
        assert!(findings(&s).is_empty());
        // Files and single-cluster runs have no cluster name.
        let mut one = istiod("x", Some("a"));
        one.origin = Origin::default();
        let mut s = Snapshot::default();
        s.workloads.push(one);
        assert!(findings(&s).is_empty());
    }

    #[test]
    fn probed_metadata_counts_as_evidence() {
        let mut s = Snapshot::default();
        s.workloads.push(istiod("east", Some("mesh1")));
        let mut evidence = evidence(&s);
        evidence.push(Evidence {
            cluster: Arc::from("west"),
            id: "mesh1".into(),
            source: Source::ProxyMetadata,
            resource: ResourceRef {
                kind: "Pod".into(),
                namespace: Some("shop".into()),
                name: "web-1".into(),
                file: None,
                line: None,
                cluster: Some(Arc::from("west")),
            },
        });
        let out = collisions(&evidence, &BTreeMap::new());
        assert_eq!(out.len(), 2);
        assert!(
            out[0]
                .message
                .contains("west: 1 probed proxy(ies) in their node metadata")
        );
    }
}
