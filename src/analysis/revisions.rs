//! MD0204: namespaces, pods and workloads that ask for an `istio.io/rev` no injection webhook
//! serves (run by the `injection` analyzer, which then leaves MD0103 out for that case). A pod
//! ambient captured that asks for a revision itself is left to MD0116.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;

use super::control_plane::{at_label, cluster_of, in_cluster};
use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::MD0204;
use crate::formats::text::join_names;
use crate::istio::ambient::captured_pod_sidecar_ask;
use crate::istio::injection::{
    self, DATAPLANE_MODE_LABEL, INJECT_LABEL, REVISION_LABEL, inject_setting, is_injection_webhook,
};
use crate::istio::revisions::{served_text, suggestion};
use crate::istio::sidecar;
use crate::kube::snapshot::{Object, Snapshot};

/// The distinct clusters of a snapshot (`None` for files and single-cluster runs).
fn clusters(snapshot: &Snapshot) -> BTreeSet<Option<&str>> {
    snapshot
        .namespaces
        .iter()
        .map(cluster_of)
        .chain(snapshot.webhooks.iter().map(cluster_of))
        .collect()
}

fn opted_out(
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> bool {
    inject_setting(labels, annotations).is_some_and(|(v, _)| v.eq_ignore_ascii_case("false"))
}

/// The revisions the injection webhooks of one cluster serve; `None` when it has none (then
/// a default installation is assumed, as for MD0103).
fn served_in(
    snapshot: &Snapshot,
    cluster: Option<&str>,
) -> Option<BTreeMap<String, Option<String>>> {
    let configs: Vec<&MutatingWebhookConfiguration> = in_cluster(&snapshot.webhooks, cluster)
        .map(|c| &c.object)
        .filter(|c| c.webhooks.iter().flatten().any(is_injection_webhook))
        .collect();
    (!configs.is_empty()).then(|| injection::served_revisions(configs))
}

/// True when the revision a pod asks for (namespace or pod label) is not served, so that MD0204,
/// not MD0103, explains why it gets no proxy.
pub fn asks_unserved_revision(
    snapshot: &Snapshot,
    cluster: Option<&str>,
    namespace_labels: &BTreeMap<String, String>,
    pod_labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let Some(served) = served_in(snapshot, cluster) else {
        return false;
    };
    if namespace_labels
        .get(DATAPLANE_MODE_LABEL)
        .is_some_and(|m| m == "ambient")
    {
        return false;
    }
    injection::revision_ask(namespace_labels, pod_labels)
        .is_some_and(|ask| !served.contains_key(&ask.revision))
}

/// MD0204: namespaces (once each) and pods or workloads (when they ask themselves) that ask for a
/// revision no injection webhook serves.
pub fn unserved_revisions(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for cluster in clusters(snapshot) {
        let Some(served) = served_in(snapshot, cluster) else {
            continue;
        };
        let suggest = suggestion(&served);
        let served_list = served_text(&served);
        let mut asking_namespaces = BTreeSet::new();
        for ns in in_cluster(&snapshot.namespaces, cluster) {
            let labels = ns.object.metadata.labels.clone().unwrap_or_default();
            if labels
                .get(DATAPLANE_MODE_LABEL)
                .is_some_and(|m| m == "ambient")
            {
                continue;
            }
            let name = ns.object.name();
            if labels.contains_key(injection::INJECTION_LABEL)
                || labels.contains_key(REVISION_LABEL)
            {
                asking_namespaces.insert(name.to_string());
            }
            let Some(ask) = injection::revision_ask(&labels, None) else {
                continue;
            };
            if served.contains_key(&ask.revision) {
                continue;
            }
            let mut affected: Vec<String> = in_cluster(&snapshot.workloads, cluster)
                .filter(|w| w.object.namespace() == Some(name) && w.object.owner.is_none())
                .filter(|w| {
                    let meta = w.object.template.metadata.as_ref();
                    !opted_out(
                        meta.and_then(|m| m.labels.as_ref()),
                        meta.and_then(|m| m.annotations.as_ref()),
                    )
                })
                .map(|w| format!("{} {name}/{}", w.object.kind(), w.object.name()))
                .collect();
            affected.extend(
                in_cluster(&snapshot.pods, cluster)
                    .filter(|p| p.object.namespace() == Some(name))
                    .filter(|p| {
                        p.object
                            .metadata
                            .owner_references
                            .as_ref()
                            .is_none_or(Vec::is_empty)
                    })
                    .filter(|p| {
                        !opted_out(
                            p.object.metadata.labels.as_ref(),
                            p.object.metadata.annotations.as_ref(),
                        )
                    })
                    .filter(|p| {
                        p.object
                            .spec
                            .as_ref()
                            .and_then(sidecar::proxy_container)
                            .is_none()
                    })
                    .map(|p| format!("Pod {name}/{}", p.object.name())),
            );
            let effect = if affected.is_empty() {
                "pods created in it will start without the Istio proxy".to_string()
            } else {
                format!(
                    "pods created in it will start without the Istio proxy ({})",
                    join_names(&affected)
                )
            };
            let fix = match suggest {
                Some(rev) => format!(
                    "Point it at a served revision or tag ('kubectl label namespace {name} {REVISION_LABEL}={rev} --overwrite', then restart its workloads), or install revision {}.",
                    ask.revision
                ),
                None => format!(
                    "Label it istio-injection=enabled instead ('kubectl label namespace {name} istio-injection=enabled {REVISION_LABEL}-'), or install revision {}.",
                    ask.revision
                ),
            };
            out.push(Finding::new(
                MD0204::message(
                    "The namespace",
                    ask.revision.clone(),
                    format!("label {REVISION_LABEL}={}", ask.revision),
                    served_list.clone(),
                    effect,
                    fix,
                ),
                Some(at_label(
                    ResourceRef::of(ns),
                    ns,
                    "metadata.labels",
                    REVISION_LABEL,
                )),
            ));
        }

        // Pods and workloads that ask themselves, in a namespace that does not.
        let pod_fix = |rev: &str| match suggest {
            Some(s) => format!(
                "Change the pod template's {REVISION_LABEL} label to a served revision or tag (e.g. {s}), or install revision {rev}."
            ),
            None => format!(
                "Remove the {REVISION_LABEL} label and set {INJECT_LABEL}=true instead, or install revision {rev}."
            ),
        };
        let labels_by_namespace: HashMap<&str, BTreeMap<String, String>> =
            in_cluster(&snapshot.namespaces, cluster)
                .map(|n| {
                    (
                        n.object.name(),
                        n.object.metadata.labels.clone().unwrap_or_default(),
                    )
                })
                .collect();
        let namespace_labels = |name: &str| labels_by_namespace.get(name);
        for w in in_cluster(&snapshot.workloads, cluster) {
            let Some(ns) = w.object.namespace() else {
                continue;
            };
            if asking_namespaces.contains(ns) {
                continue;
            }
            let Some(ns_labels) = namespace_labels(ns) else {
                continue;
            };
            let meta = w.object.template.metadata.as_ref();
            let labels = meta.and_then(|m| m.labels.as_ref());
            if opted_out(labels, meta.and_then(|m| m.annotations.as_ref())) {
                continue;
            }
            let Some(ask) = injection::revision_ask(ns_labels, labels) else {
                continue;
            };
            if served.contains_key(&ask.revision)
                || ns_labels
                    .get(DATAPLANE_MODE_LABEL)
                    .is_some_and(|m| m == "ambient")
            {
                continue;
            }
            out.push(Finding::new(
                MD0204::message(
                    format!("{} {ns}/{}", w.object.kind(), w.object.name()),
                    ask.revision.clone(),
                    format!("pod template label {REVISION_LABEL}={}", ask.revision),
                    served_list.clone(),
                    "its new pods will start without the Istio proxy",
                    pod_fix(&ask.revision),
                ),
                Some(at_label(
                    ResourceRef::of(w),
                    w,
                    "spec.template.metadata.labels",
                    REVISION_LABEL,
                )),
            ));
        }
        for p in in_cluster(&snapshot.pods, cluster) {
            let Some(ns) = p.object.namespace() else {
                continue;
            };
            if asking_namespaces.contains(ns)
                || p.object
                    .spec
                    .as_ref()
                    .and_then(sidecar::proxy_container)
                    .is_some()
            {
                continue;
            }
            let Some(ns_labels) = namespace_labels(ns) else {
                continue;
            };
            let labels = p.object.metadata.labels.as_ref();
            if opted_out(labels, p.object.metadata.annotations.as_ref())
                || captured_pod_sidecar_ask(&p.object, Some(ns_labels)).is_some()
            {
                continue;
            }
            let Some(ask) = injection::revision_ask(ns_labels, labels) else {
                continue;
            };
            if served.contains_key(&ask.revision)
                || ns_labels
                    .get(DATAPLANE_MODE_LABEL)
                    .is_some_and(|m| m == "ambient")
            {
                continue;
            }
            out.push(Finding::new(
                MD0204::message(
                    format!("Pod {ns}/{}", p.object.name()),
                    ask.revision.clone(),
                    format!("label {REVISION_LABEL}={}", ask.revision),
                    served_list.clone(),
                    "it started without the Istio proxy, and so will its replacements",
                    pod_fix(&ask.revision),
                ),
                Some(at_label(
                    ResourceRef::of(p),
                    p,
                    "metadata.labels",
                    REVISION_LABEL,
                )),
            ));
        }
    }
}
