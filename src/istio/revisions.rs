//! Istio revisions, pure: which revisions the injection webhooks serve, and the MD0204 finding
//! for a pod that asks for one no webhook serves (shared by `analyze` and `pod`).

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;

use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::MD0204;
use crate::formats::text::join_names;
use crate::istio::injection::{self, DATAPLANE_MODE_LABEL, REVISION_LABEL, is_injection_webhook};
use crate::kube::snapshot::Located;

/// The served revisions as a sentence: `default and canary (tag of 1-30)`.
pub fn served_text(served: &BTreeMap<String, Option<String>>) -> String {
    if served.is_empty() {
        return "none; the webhooks only select istio-injection=enabled".to_string();
    }
    let names: Vec<String> = served
        .iter()
        .map(|(name, target)| match target {
            Some(rev) => format!("{name} (tag of {rev})"),
            None => name.clone(),
        })
        .collect();
    join_names(&names)
}

/// The served revision to suggest: `default` when it is served, else the first one.
pub fn suggestion(served: &BTreeMap<String, Option<String>>) -> Option<&str> {
    served
        .keys()
        .find(|k| *k == "default")
        .or_else(|| served.keys().next())
        .map(String::as_str)
}

/// MD0204 for one existing pod without proxy (the `pod` command), with the command that fixes
/// it; `None` when the revision it asks for is served, or nothing asks for one.
pub fn pod_unserved_revision(
    pod: ResourceRef,
    namespace_labels: &BTreeMap<String, String>,
    pod_labels: Option<&BTreeMap<String, String>>,
    webhooks: &[Located<MutatingWebhookConfiguration>],
) -> Option<(Finding, String)> {
    let configs: Vec<&MutatingWebhookConfiguration> = webhooks
        .iter()
        .map(|c| &c.object)
        .filter(|c| c.webhooks.iter().flatten().any(is_injection_webhook))
        .collect();
    if configs.is_empty()
        || namespace_labels
            .get(DATAPLANE_MODE_LABEL)
            .is_some_and(|m| m == "ambient")
    {
        return None;
    }
    let served = injection::served_revisions(configs);
    let ask = injection::revision_ask(namespace_labels, pod_labels)?;
    if served.contains_key(&ask.revision) {
        return None;
    }
    let namespace = pod.namespace.clone().unwrap_or_default();
    let target = suggestion(&served).unwrap_or("<revision>").to_string();
    let (subject, how, fix) = if ask.by_namespace {
        (
            format!("Namespace {namespace}"),
            format!("label {REVISION_LABEL}={}", ask.revision),
            format!("kubectl label namespace {namespace} {REVISION_LABEL}={target} --overwrite"),
        )
    } else {
        (
            format!("Pod {namespace}/{}", pod.name),
            format!("pod label {REVISION_LABEL}={}", ask.revision),
            format!("set {REVISION_LABEL}={target} in the pod template of the pod's workload"),
        )
    };
    let finding = Finding::new(
        MD0204::message(
            subject,
            ask.revision.clone(),
            how,
            served_text(&served),
            "this pod was created without the Istio proxy, and so will be its replacements",
            format!(
                "Point it at a served revision or tag, then restart the pod's workload; or install revision {}.",
                ask.revision
            ),
        ),
        Some(pod),
    );
    Some((finding, fix))
}
