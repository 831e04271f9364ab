//! Would the Istio injection webhook add a proxy to this pod? Pure Istio knowledge.
//!
//! The webhook only runs at pod creation. It is called when one of the MutatingWebhookConfigurations'
//! namespace and object selectors match, and then the injector itself skips host-network pods,
//! system namespaces and pods that opt out with `sidecar.istio.io/inject: "false"`.
//! When the input holds no Istio injection webhook, the selectors of a default Istio
//! installation are assumed (namespace `istio-injection=enabled` or `istio.io/rev=<rev>`,
//! or pod label `sidecar.istio.io/inject=true` / `istio.io/rev=<rev>`).

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};

use crate::kube::selector;
use crate::kube::snapshot::{Located, SYSTEM_NAMESPACES};

pub const INJECTION_LABEL: &str = "istio-injection";
pub const REVISION_LABEL: &str = "istio.io/rev";
pub const DATAPLANE_MODE_LABEL: &str = "istio.io/dataplane-mode";
pub const INJECT_LABEL: &str = "sidecar.istio.io/inject";
pub const STATUS_ANNOTATION: &str = "sidecar.istio.io/status";
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The facts about one pod (or pod template) that injection depends on.
#[derive(Debug, Clone, Copy)]
pub struct PodFacts<'a> {
    pub namespace: &'a str,
    /// The namespace's labels; `None` when the namespace is not in the input.
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    pub labels: Option<&'a BTreeMap<String, String>>,
    pub annotations: Option<&'a BTreeMap<String, String>>,
    pub host_network: bool,
}

/// Why a pod gets no proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// kube-system and friends are never injected.
    SystemNamespace,
    /// `hostNetwork: true` pods are never injected.
    HostNetwork,
    /// `sidecar.istio.io/inject: "false"` as a label or annotation.
    OptedOut { by: String },
    /// The namespace has `istio-injection=disabled`.
    NamespaceDisabled,
    /// The namespace runs in ambient mode.
    Ambient,
    /// Nothing asks for injection: the namespace is not labelled and the pod does not ask.
    NotRequested,
    /// Something asks for injection, but no injection webhook's selectors match.
    NoWebhookMatches { asked_by: String },
}

/// The outcome for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Injected {
        /// What asked for it, e.g. `namespace label istio-injection=enabled`.
        asked_by: String,
        /// The webhook that matches (`None` when default selectors were assumed).
        webhook: Option<String>,
        revision: String,
    },
    NotInjected(Skip),
    /// The namespace is not in the input, so its labels are unknown.
    Unknown,
}

/// A pod's explicit inject setting: the label wins over the (deprecated) annotation.
pub fn inject_setting<'a>(
    labels: Option<&'a BTreeMap<String, String>>,
    annotations: Option<&'a BTreeMap<String, String>>,
) -> Option<(&'a str, &'static str)> {
    if let Some(v) = labels.and_then(|l| l.get(INJECT_LABEL)) {
        return Some((v.as_str(), "label"));
    }
    annotations
        .and_then(|a| a.get(INJECT_LABEL))
        .map(|v| (v.as_str(), "annotation"))
}

/// True for the webhooks Istio's injector serves (`*sidecar-injector.istio.io`).
pub fn is_injection_webhook(webhook: &MutatingWebhook) -> bool {
    webhook.name.ends_with("sidecar-injector.istio.io")
}

/// What asks for injection, from the namespace labels first, then the pod labels.
fn request(
    facts: &PodFacts<'_>,
    ns_labels: &BTreeMap<String, String>,
) -> Result<(String, String), Skip> {
    match ns_labels.get(INJECTION_LABEL).map(String::as_str) {
        Some("enabled") => {
            return Ok((
                format!("namespace label {INJECTION_LABEL}=enabled"),
                "default".to_string(),
            ));
        }
        Some(value) if !value.is_empty() => return Err(Skip::NamespaceDisabled),
        _ => {}
    }
    if let Some(rev) = ns_labels.get(REVISION_LABEL) {
        return Ok((
            format!("namespace label {REVISION_LABEL}={rev}"),
            rev.clone(),
        ));
    }
    let pod_labels = facts.labels;
    if let Some(rev) = pod_labels.and_then(|l| l.get(REVISION_LABEL)) {
        return Ok((format!("pod label {REVISION_LABEL}={rev}"), rev.clone()));
    }
    if pod_labels
        .and_then(|l| l.get(INJECT_LABEL))
        .is_some_and(|v| v == "true")
    {
        return Ok((
            format!("pod label {INJECT_LABEL}=true"),
            "default".to_string(),
        ));
    }
    if ns_labels
        .get(DATAPLANE_MODE_LABEL)
        .is_some_and(|v| v == "ambient")
    {
        return Err(Skip::Ambient);
    }
    Err(Skip::NotRequested)
}

/// Decides whether the webhook would inject a proxy into a pod created now.
pub fn decide(
    facts: &PodFacts<'_>,
    webhooks: &[Located<MutatingWebhookConfiguration>],
) -> Decision {
    if SYSTEM_NAMESPACES.contains(&facts.namespace) {
        return Decision::NotInjected(Skip::SystemNamespace);
    }
    let Some(ns_labels) = facts.namespace_labels else {
        return Decision::Unknown;
    };
    let mut ns_labels = ns_labels.clone();
    ns_labels
        .entry(NAMESPACE_NAME_LABEL.to_string())
        .or_insert_with(|| facts.namespace.to_string());
    let asked = request(facts, &ns_labels);
    let opt_out = inject_setting(facts.labels, facts.annotations)
        .filter(|(v, _)| v.eq_ignore_ascii_case("false"))
        .map(|(_, how)| Skip::OptedOut {
            by: format!("{how} {INJECT_LABEL}=\"false\""),
        });

    let istio_webhooks: Vec<(&str, &MutatingWebhook)> = webhooks
        .iter()
        .flat_map(|mwc| {
            let name = mwc.object.metadata.name.as_deref().unwrap_or("");
            mwc.object
                .webhooks
                .iter()
                .flatten()
                .filter(|w| is_injection_webhook(w))
                .map(move |w| (name, w))
        })
        .collect();

    let empty = BTreeMap::new();
    let pod_labels = facts.labels.unwrap_or(&empty);
    let matched = if istio_webhooks.is_empty() {
        None
    } else {
        istio_webhooks.iter().find(|(_, w)| {
            selector::matches(w.namespace_selector.as_ref(), &ns_labels)
                && selector::matches(w.object_selector.as_ref(), pod_labels)
        })
    };

    match (asked, matched) {
        (Err(skip), None) => Decision::NotInjected(skip),
        (Ok((asked_by, _)), None) if !istio_webhooks.is_empty() => {
            Decision::NotInjected(opt_out.unwrap_or(Skip::NoWebhookMatches { asked_by }))
        }
        (asked, matched) => {
            if let Some(skip) = opt_out {
                return Decision::NotInjected(skip);
            }
            if facts.host_network {
                return Decision::NotInjected(Skip::HostNetwork);
            }
            let (asked_by, revision) = asked.unwrap_or_else(|_| {
                (
                    "the auto-injection webhook (enableNamespacesByDefault)".to_string(),
                    "default".to_string(),
                )
            });
            let revision = matched
                .and_then(|(mwc, _)| webhook_revision(webhooks, mwc))
                .unwrap_or(revision);
            Decision::Injected {
                asked_by,
                webhook: matched.map(|(mwc, w)| format!("{mwc}/{}", w.name)),
                revision,
            }
        }
    }
}

fn webhook_revision(
    webhooks: &[Located<MutatingWebhookConfiguration>],
    name: &str,
) -> Option<String> {
    webhooks
        .iter()
        .find(|m| m.object.metadata.name.as_deref() == Some(name))
        .and_then(|m| {
            m.object
                .metadata
                .labels
                .as_ref()?
                .get(REVISION_LABEL)
                .cloned()
        })
}

/// A revision asked for with `istio.io/rev`, on the namespace or on the pod itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionAsk {
    pub revision: String,
    /// True when the namespace label asks (it wins over the pod's label).
    pub by_namespace: bool,
}

/// The revision a pod's injection depends on, following the selectors of Istio's `rev.namespace.`
/// and `rev.object.` webhooks: an `istio-injection` label on the namespace (any value) takes
/// precedence, then the namespace's `istio.io/rev`, then the pod's.
pub fn revision_ask(
    ns_labels: &BTreeMap<String, String>,
    pod_labels: Option<&BTreeMap<String, String>>,
) -> Option<RevisionAsk> {
    if ns_labels.contains_key(INJECTION_LABEL) {
        return None;
    }
    if let Some(rev) = ns_labels.get(REVISION_LABEL) {
        return Some(RevisionAsk {
            revision: rev.clone(),
            by_namespace: true,
        });
    }
    pod_labels
        .and_then(|l| l.get(REVISION_LABEL))
        .map(|rev| RevisionAsk {
            revision: rev.clone(),
            by_namespace: false,
        })
}

/// The revisions and revision tags that Istio injection webhooks select with `istio.io/rev`,
/// each with the revision a tag points to (from the `istio.io/tag` and `istio.io/rev` labels of
/// an `istio-revision-tag-<tag>` configuration). Empty when there is no injection webhook.
pub fn served_revisions<'a>(
    webhooks: impl IntoIterator<Item = &'a MutatingWebhookConfiguration>,
) -> BTreeMap<String, Option<String>> {
    let mut served = BTreeMap::new();
    for mwc in webhooks {
        let labels = mwc.metadata.labels.as_ref();
        let tag = labels.and_then(|l| l.get("istio.io/tag"));
        let target = labels.and_then(|l| l.get(REVISION_LABEL));
        for webhook in mwc
            .webhooks
            .iter()
            .flatten()
            .filter(|w| is_injection_webhook(w))
        {
            for selector in [&webhook.namespace_selector, &webhook.object_selector]
                .into_iter()
                .flatten()
            {
                let mut values: Vec<&String> = selector
                    .match_labels
                    .iter()
                    .flatten()
                    .filter(|(k, _)| *k == REVISION_LABEL)
                    .map(|(_, v)| v)
                    .collect();
                for req in selector.match_expressions.iter().flatten() {
                    if req.key == REVISION_LABEL && req.operator == "In" {
                        values.extend(req.values.iter().flatten());
                    }
                }
                for value in values {
                    let points_to = (tag == Some(value))
                        .then(|| target.filter(|t| *t != value).cloned())
                        .flatten();
                    let entry = served.entry(value.clone()).or_insert(None);
                    if entry.is_none() {
                        *entry = points_to;
                    }
                }
            }
        }
    }
    served
}

impl Skip {
    /// A sentence for people.
    pub fn explain(&self) -> String {
        match self {
            Skip::SystemNamespace => "system namespaces are never injected".into(),
            Skip::HostNetwork => "the pod uses hostNetwork, which Istio never injects".into(),
            Skip::OptedOut { by } => format!("the pod opts out with the {by}"),
            Skip::NamespaceDisabled => format!("the namespace has {INJECTION_LABEL}=disabled"),
            Skip::Ambient => "the namespace uses ambient mode (no sidecars)".into(),
            Skip::NotRequested => format!(
                "nothing asks for injection: the namespace has neither {INJECTION_LABEL}=enabled nor {REVISION_LABEL}, and the pod has neither {INJECT_LABEL}=true nor {REVISION_LABEL}"
            ),
            Skip::NoWebhookMatches { asked_by } => {
                format!(
                    "the {asked_by} asks for injection, but no injection webhook's selectors match"
                )
            }
        }
    }
}
