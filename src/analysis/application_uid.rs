//! Istio's `applicationUID.Analyzer` (IST0144): a pod, or the pod template of a workload, that
//! runs an application container as UID 1337, the UID Istio reserves for the sidecar proxy (its
//! traffic is not captured). Istio reads Pods and Deployments; mesh-doctor reads the templates of
//! every workload kind (StatefulSets, DaemonSets, Jobs...) too, as the pods they will create.

use k8s_openapi::api::core::v1::PodSpec;

use crate::findings::messages::IST0144;
use crate::findings::{Finding, ResourceRef};
use crate::kube::snapshot::{Located, Object, Snapshot};

/// The UID of the sidecar proxy.
pub const PROXY_UID: i64 = 1337;

/// Istio's control plane: its pods and Deployments carry an `istio` label or `release=istio`.
fn is_control_plane<T: Object>(object: &T) -> bool {
    object.label("istio").is_some() || object.label("release") == Some("istio")
}

/// How many times the spec runs as 1337: the pod's security context, then each application
/// container's (not `istio-proxy` or `istio-operator`).
fn uses_proxy_uid(spec: &PodSpec) -> usize {
    let pod = spec
        .security_context
        .as_ref()
        .and_then(|s| s.run_as_user)
        .is_some_and(|u| u == PROXY_UID);
    let containers = spec
        .containers
        .iter()
        .filter(|c| c.name != "istio-proxy" && c.name != "istio-operator")
        .filter(|c| {
            c.security_context
                .as_ref()
                .and_then(|s| s.run_as_user)
                .is_some_and(|u| u == PROXY_UID)
        })
        .count();
    usize::from(pod) + containers
}

fn report<T: Object>(located: &Located<T>, spec: Option<&PodSpec>, out: &mut Vec<Finding>) {
    if is_control_plane(&located.object) || spec.is_none_or(|s| uses_proxy_uid(s) == 0) {
        return;
    }
    out.push(Finding::new(
        IST0144::message(),
        Some(ResourceRef::of(located)),
    ));
}

/// `applicationUID.Analyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for pod in &snapshot.pods {
        report(pod, pod.object.spec.as_ref(), out);
    }
    for workload in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none())
    {
        report(workload, workload.object.template.spec.as_ref(), out);
    }
}
