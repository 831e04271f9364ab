//! Injection findings: IST0102, IST0103, IST0123, IST0148 (as Istio's injection analyzer decides
//! them), MD0103 (injection asked for, but no webhook matches) and MD0204 (the revision asked
//! for is served by no webhook; see [`revisions::unserved_revisions`]). A pod ambient captured
//! that asks for a sidecar itself is left to MD0116 (analyzer `ambient`).
//! Differences from Istio are listed in docs/compat.md.

use std::collections::BTreeMap;

use super::revisions;
use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::{IST0102, IST0103, IST0123, IST0148, MD0103};
use crate::istio::ambient::captured_pod_sidecar_ask;
use crate::istio::injection::{
    self, DATAPLANE_MODE_LABEL, Decision, INJECTION_LABEL, PodFacts, REVISION_LABEL, Skip,
};
use crate::istio::sidecar;
use crate::kube::snapshot::{Object, Snapshot};

/// The ConfigMap that holds an injector revision's values.
pub fn injector_config_map_name(revision: &str) -> String {
    if revision.is_empty() || revision == "default" {
        "istio-sidecar-injector".to_string()
    } else {
        format!("istio-sidecar-injector-{revision}")
    }
}

/// `sidecarInjectorWebhook.enableNamespacesByDefault` of the injector ConfigMap for a revision.
fn enabled_by_default(snapshot: &Snapshot, revision: &str) -> bool {
    let name = injector_config_map_name(revision);
    snapshot
        .config_maps
        .iter()
        .find(|cm| cm.object.name() == name)
        .and_then(|cm| cm.object.data.as_ref()?.get("values").cloned())
        .and_then(|values| serde_json::from_str::<serde_json::Value>(&values).ok())
        .and_then(|v| {
            v.pointer("/sidecarInjectorWebhook/enableNamespacesByDefault")?
                .as_bool()
        })
        .unwrap_or(false)
}

pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    // A revision no webhook serves is reported once per namespace (or asking pod) as MD0204,
    // instead of MD0103 on every workload and pod.
    let unserved = |cluster: Option<&str>, facts: PodFacts<'_>| {
        facts.namespace_labels.is_some_and(|labels| {
            revisions::asks_unserved_revision(snapshot, cluster, labels, facts.labels)
        })
    };
    revisions::unserved_revisions(snapshot, out);
    for ns in &snapshot.namespaces {
        let name = ns.object.name();
        if name == "istio-system" {
            continue;
        }
        let empty = BTreeMap::new();
        let labels = ns.object.metadata.labels.as_ref().unwrap_or(&empty);
        let injection = labels.get(INJECTION_LABEL);
        let mut istio_labels = Vec::new();
        if let Some(value) = injection {
            istio_labels.push(format!("{INJECTION_LABEL}={value}"));
        }
        for key in [REVISION_LABEL, DATAPLANE_MODE_LABEL] {
            if let Some(value) = labels.get(key)
                && (injection.is_none() || injection.is_some_and(|v| v == "enabled"))
            {
                istio_labels.push(format!("{key}={value}"));
            }
        }
        if istio_labels.len() > 1 {
            out.push(Finding::new(
                IST0123::message(istio_labels),
                Some(ResourceRef::of(ns)),
            ));
        }
        if labels
            .get(DATAPLANE_MODE_LABEL)
            .is_some_and(|v| v == "ambient")
        {
            continue;
        }
        let revision = labels.get(REVISION_LABEL);
        if injection.is_none_or(String::is_empty) && revision.is_none() {
            let resource = ResourceRef::of(ns).at_field(ns, "metadata.name");
            if enabled_by_default(snapshot, "default") {
                out.push(Finding::new(IST0148::message(), Some(resource)));
            } else {
                out.push(Finding::new(IST0102::message(name, name), Some(resource)));
            }
        }
    }

    let namespaces = NamespaceIndex::new(snapshot);
    for pod in &snapshot.pods {
        let spec = pod.object.spec.as_ref();
        let has_proxy = spec
            .and_then(sidecar::proxy_container)
            .is_some_and(|p| !p.image().is_empty());
        if has_proxy {
            continue;
        }
        let namespace = pod.object.namespace().unwrap_or("");
        // A pod ambient captured that asks for a sidecar itself is MD0116 (analyzer ambient).
        if captured_pod_sidecar_ask(&pod.object, namespaces.labels(namespace)).is_some() {
            continue;
        }
        let facts = PodFacts {
            namespace,
            namespace_labels: namespaces.labels(namespace),
            labels: pod.object.metadata.labels.as_ref(),
            annotations: pod.object.metadata.annotations.as_ref(),
            host_network: spec.and_then(|s| s.host_network).unwrap_or(false),
        };
        let full_name = format!("{namespace}/{}", pod.object.name());
        match injection::decide(&facts, &snapshot.webhooks) {
            Decision::Injected { .. } => {
                out.push(Finding::new(
                    IST0103::message(full_name),
                    Some(ResourceRef::of(pod)),
                ));
            }
            Decision::NotInjected(Skip::NoWebhookMatches { .. })
                if unserved(pod.origin.cluster.as_deref(), facts) => {}
            Decision::NotInjected(Skip::NoWebhookMatches { asked_by }) => out.push(Finding::new(
                MD0103::message("Pod", full_name, asked_by),
                Some(ResourceRef::of(pod)),
            )),
            Decision::NotInjected(_) | Decision::Unknown => {}
        }
    }

    for workload in &snapshot.workloads {
        let template = &workload.object.template;
        if template
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .is_some()
        {
            continue;
        }
        let namespace = workload.object.namespace().unwrap_or("");
        let meta = template.metadata.as_ref();
        let facts = PodFacts {
            namespace,
            namespace_labels: namespaces.labels(namespace),
            labels: meta.and_then(|m| m.labels.as_ref()),
            annotations: meta.and_then(|m| m.annotations.as_ref()),
            host_network: template
                .spec
                .as_ref()
                .and_then(|s| s.host_network)
                .unwrap_or(false),
        };
        if let Decision::NotInjected(Skip::NoWebhookMatches { asked_by }) =
            injection::decide(&facts, &snapshot.webhooks)
            && !unserved(workload.origin.cluster.as_deref(), facts)
        {
            out.push(Finding::new(
                MD0103::message(
                    workload.object.kind(),
                    format!("{namespace}/{}", workload.object.name()),
                    asked_by,
                ),
                Some(ResourceRef::of(workload)),
            ));
        }
    }
}

/// The labels of every namespace in the snapshot, by name (an unlabelled namespace has an empty map).
pub struct NamespaceIndex<'a> {
    labels: std::collections::HashMap<&'a str, &'a BTreeMap<String, String>>,
}

impl<'a> NamespaceIndex<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        let labels = snapshot
            .namespaces
            .iter()
            .map(|ns| {
                (
                    ns.object.name(),
                    ns.object.metadata.labels.as_ref().unwrap_or(&EMPTY),
                )
            })
            .collect();
        NamespaceIndex { labels }
    }

    /// `None` when the namespace is not in the snapshot.
    pub fn labels(&self, name: &str) -> Option<&'a BTreeMap<String, String>> {
        self.labels.get(name).copied()
    }
}
