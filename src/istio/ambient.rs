//! Ambient mode: what asks for it, and the names of what carries it. A pod is captured when it
//! asks for ambient (`istio.io/dataplane-mode=ambient` on its namespace or itself, not opted
//! out with `istio.io/dataplane-mode=none`), Istio's CNI node agent has redirected its traffic
//! (it then sets the pod annotation `ambient.istio.io/redirection: enabled`), and a ready
//! ztunnel runs on its node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use crate::istio::dataplane::has_proxy;
use crate::istio::injection::{
    DATAPLANE_MODE_LABEL, Decision, INJECT_LABEL, INJECTION_LABEL, REVISION_LABEL, inject_setting,
};

/// The annotation the CNI agent sets once the pod's traffic is redirected to ztunnel.
pub const REDIRECTION_ANNOTATION: &str = "ambient.istio.io/redirection";
/// The label selector of ztunnel's pods (a DaemonSet, usually in istio-system).
pub const ZTUNNEL_SELECTOR: &str = "app=ztunnel";
/// The label selector of Istio's CNI node agent's pods.
pub const CNI_SELECTOR: &str = "k8s-app=istio-cni-node";

/// What the labels say about ambient mode for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Ambient is asked for, by this label (`namespace label ...` / `pod label ...`).
    Asked(String),
    /// The namespace asks for ambient, the pod opts out (`istio.io/dataplane-mode=none`).
    OptedOut,
    /// Nothing asks for ambient.
    NotAsked,
}

/// Whether the pod asks for ambient mode.
pub fn request(
    namespace_labels: Option<&BTreeMap<String, String>>,
    pod_labels: Option<&BTreeMap<String, String>>,
) -> Request {
    let pod = pod_labels.and_then(|l| l.get(DATAPLANE_MODE_LABEL));
    let namespace = namespace_labels.and_then(|l| l.get(DATAPLANE_MODE_LABEL));
    match (pod.map(String::as_str), namespace.map(String::as_str)) {
        (Some("ambient"), _) => Request::Asked(format!("pod label {DATAPLANE_MODE_LABEL}=ambient")),
        (Some("none"), Some("ambient")) => Request::OptedOut,
        (None, Some("ambient")) => {
            Request::Asked(format!("namespace label {DATAPLANE_MODE_LABEL}=ambient"))
        }
        _ => Request::NotAsked,
    }
}

/// The pod's redirection annotation, as the CNI agent set it (`enabled`, `disabled`), if any.
pub fn redirection(pod: &Pod) -> Option<&str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(REDIRECTION_ANNOTATION)
        .map(String::as_str)
}

/// What on a pod ambient captured asks for a sidecar the pod does not have: its own label
/// `sidecar.istio.io/inject=true` (else that annotation), or its label `istio.io/rev`, when the
/// pod has no `istio-proxy`, the CNI agent set `ambient.istio.io/redirection: enabled`, and its
/// namespace asks for no injection (no `istio-injection` or `istio.io/rev` label: that case is
/// Istio's IST0103). `None` otherwise, and when the pod opts out
/// (`sidecar.istio.io/inject=false`). The text names what asks: `pod label
/// sidecar.istio.io/inject=true`.
pub fn captured_pod_sidecar_ask(
    pod: &Pod,
    namespace_labels: Option<&BTreeMap<String, String>>,
) -> Option<String> {
    if has_proxy(pod.spec.as_ref()) || redirection(pod) != Some("enabled") {
        return None;
    }
    if namespace_labels
        .is_some_and(|l| l.contains_key(INJECTION_LABEL) || l.contains_key(REVISION_LABEL))
    {
        return None;
    }
    let meta = &pod.metadata;
    match inject_setting(meta.labels.as_ref(), meta.annotations.as_ref()) {
        Some((v, how)) if v.eq_ignore_ascii_case("true") => {
            return Some(format!("pod {how} {INJECT_LABEL}=true"));
        }
        Some((v, _)) if v.eq_ignore_ascii_case("false") => return None,
        _ => {}
    }
    meta.labels
        .as_ref()?
        .get(REVISION_LABEL)
        .filter(|r| !r.is_empty())
        .map(|r| format!("pod label {REVISION_LABEL}={r}"))
}

/// What a captured pod's own request for a sidecar (`asked_by`, from
/// [`captured_pod_sidecar_ask`]) does, from what the injection webhook decides for a pod
/// created now: MD0116's consequence.
pub fn sidecar_ask_consequence(asked_by: &str, decision: &Decision) -> String {
    match decision {
        Decision::Injected { webhook, .. } => format!(
            "a pod created now gets one from the injection webhook{}, so when this one is re-created (a rollout, an eviction, a node drain) its replacement runs with a sidecar and leaves ambient mode (the CNI agent does not redirect a pod with a sidecar): ztunnel no longer carries its traffic",
            webhook.as_ref().map_or_else(
                || " (a default installation's selectors assumed: no injection webhook configuration was read)".to_string(),
                |w| format!(" ({w})")
            )
        ),
        Decision::Unknown => "whether a re-created pod gets one depends on the labels of its namespace, which was not read".to_string(),
        Decision::NotInjected(_) if asked_by.contains("annotation") => format!(
            "the annotation is read only by an injection webhook already called for the pod, and none is (the namespace has no injection label and the pod no {INJECT_LABEL} or {REVISION_LABEL} label), so its replacements start without a sidecar too: the annotation has no effect, but says the opposite of how the pod runs"
        ),
        Decision::NotInjected(skip) => format!(
            "a re-created pod would not get one either ({}), so the request has no effect, but says the opposite of how the pod runs",
            skip.explain()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[(&str, &str)]) -> BTreeMap<String, String> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn pod(own: &[(&str, &str)], annotations: &[(&str, &str)], sidecar: bool) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "amb", "labels": labels(own),
                         "annotations": labels(annotations)},
            "spec": {"containers": if sidecar {
                serde_json::json!([{"name": "app", "image": "app"}, {"name": "istio-proxy", "image": "proxyv2"}])
            } else {
                serde_json::json!([{"name": "app", "image": "app"}])
            }}
        }))
        .unwrap()
    }

    #[test]
    fn a_captured_pod_that_asks_for_a_sidecar_itself() {
        let captured = [(REDIRECTION_ANNOTATION, "enabled")];
        let amb = labels(&[(DATAPLANE_MODE_LABEL, "ambient")]);
        let ask = |l: &[(&str, &str)],
                   a: &[(&str, &str)],
                   sidecar: bool,
                   ns: &BTreeMap<String, String>| {
            captured_pod_sidecar_ask(&pod(l, a, sidecar), Some(ns))
        };
        let inject = [(INJECT_LABEL, "true")];
        assert_eq!(
            ask(&inject, &captured, false, &amb).as_deref(),
            Some("pod label sidecar.istio.io/inject=true")
        );
        let mut both: Vec<(&str, &str)> = captured.to_vec();
        both.push((INJECT_LABEL, "true"));
        assert_eq!(
            ask(&[], &both, false, &amb).as_deref(),
            Some("pod annotation sidecar.istio.io/inject=true")
        );
        assert_eq!(
            ask(&[(REVISION_LABEL, "canary")], &captured, false, &amb).as_deref(),
            Some("pod label istio.io/rev=canary")
        );
        // The negative twins: a sidecar (MD0112's case), not captured, an opt-out that wins,
        // a namespace that asks for injection itself (IST0103), nothing asked.
        assert_eq!(ask(&inject, &captured, true, &amb), None);
        assert_eq!(ask(&inject, &[], false, &amb), None);
        assert_eq!(
            ask(
                &inject,
                &[(REDIRECTION_ANNOTATION, "disabled")],
                false,
                &amb
            ),
            None
        );
        assert_eq!(
            ask(
                &[(INJECT_LABEL, "false"), (REVISION_LABEL, "canary")],
                &both,
                false,
                &amb
            ),
            None
        );
        let injected = labels(&[
            (INJECTION_LABEL, "enabled"),
            (DATAPLANE_MODE_LABEL, "ambient"),
        ]);
        assert_eq!(ask(&inject, &captured, false, &injected), None);
        assert_eq!(ask(&[], &captured, false, &amb), None);
    }

    #[test]
    fn who_asks_for_ambient() {
        let amb = labels(&[(DATAPLANE_MODE_LABEL, "ambient")]);
        let none = labels(&[(DATAPLANE_MODE_LABEL, "none")]);
        assert_eq!(
            request(Some(&amb), None),
            Request::Asked("namespace label istio.io/dataplane-mode=ambient".into())
        );
        assert_eq!(request(Some(&amb), Some(&none)), Request::OptedOut);
        assert_eq!(
            request(None, Some(&amb)),
            Request::Asked("pod label istio.io/dataplane-mode=ambient".into())
        );
        assert_eq!(request(None, None), Request::NotAsked);
        assert_eq!(request(Some(&none), None), Request::NotAsked);
    }
}
