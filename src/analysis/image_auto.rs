//! Istio's `injection.ImageAutoAnalyzer`: a pod whose `istio-proxy` container still has
//! `image: auto` was not injected (IST0147: the placeholder is replaced by the injector, so such
//! a pod cannot start), and a workload template with `image: auto` that no Istio injection
//! webhook (a webhook whose name ends in `istio.io`) will match (IST0146). Istio reads
//! Deployments; mesh-doctor reads every workload kind's template.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhook;
use k8s_openapi::api::core::v1::PodSpec;

use crate::findings::messages::{IST0146, IST0147};
use crate::findings::{Finding, ResourceRef};
use crate::kube::selector;
use crate::kube::snapshot::{Object, Snapshot};

fn has_auto_image(spec: Option<&PodSpec>) -> bool {
    spec.is_some_and(|s| {
        s.containers
            .iter()
            .any(|c| c.name == "istio-proxy" && c.image.as_deref() == Some("auto"))
    })
}

/// `injection.ImageAutoAnalyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let webhooks: Vec<&MutatingWebhook> = snapshot
        .webhooks
        .iter()
        .flat_map(|w| w.object.webhooks.iter().flatten())
        .filter(|w| w.name.ends_with("istio.io"))
        .collect();
    for pod in &snapshot.pods {
        if has_auto_image(pod.object.spec.as_ref()) {
            out.push(Finding::new(
                IST0147::message("Pod", pod.object.name()),
                Some(ResourceRef::of(pod)),
            ));
        }
    }
    let empty = BTreeMap::new();
    for workload in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none())
    {
        let w = &workload.object;
        if !has_auto_image(w.template.spec.as_ref()) {
            continue;
        }
        let namespace = w.namespace().unwrap_or("default");
        let namespace_labels = snapshot
            .namespace(namespace)
            .and_then(|n| n.object.metadata.labels.as_ref());
        let pod_labels = w
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.as_ref())
            .unwrap_or(&empty);
        let matched = webhooks.iter().any(|wh| {
            // A namespace that is not in the input has no labels, as in Istio.
            selector::matches(
                wh.namespace_selector.as_ref(),
                namespace_labels.unwrap_or(&empty),
            ) && selector::matches(wh.object_selector.as_ref(), pod_labels)
        });
        if !matched {
            out.push(Finding::new(
                IST0146::message(w.kind.as_str(), w.name()),
                Some(ResourceRef::of(workload)),
            ));
        }
    }
}
