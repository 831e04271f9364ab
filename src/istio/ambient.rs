//! Ambient mode: what asks for it, and the names of what carries it. A pod is captured when it
//! asks for ambient (`istio.io/dataplane-mode=ambient` on its namespace or itself, not opted
//! out with `istio.io/dataplane-mode=none`), Istio's CNI node agent has redirected its traffic
//! (it then sets the pod annotation `ambient.istio.io/redirection: enabled`), and a ready
//! ztunnel runs on its node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use crate::istio::injection::DATAPLANE_MODE_LABEL;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[(&str, &str)]) -> BTreeMap<String, String> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
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
