//! A pod's init phase: which init container it waits on.
//!
//! Init containers run one after the other in spec order. A regular one blocks the pod until
//! it has exited 0; a native sidecar (`restartPolicy: Always`) blocks it until it has started
//! (its startup probe passed). The first init container that has not done so is the one a person
//! reads off `kubectl get pod` (`Init:ImagePullBackOff`, `Init:CrashLoopBackOff`, `Init:1/2`).

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};

/// An init container the pod's init phase waits on, with its status.
#[derive(Debug, Clone, Copy)]
pub struct Blocking<'a> {
    pub container: &'a Container,
    pub status: &'a ContainerStatus,
    /// True for a native sidecar (`restartPolicy: Always`).
    pub native: bool,
}

impl Blocking<'_> {
    /// The waiting reason (`ImagePullBackOff`, `CrashLoopBackOff`, `PodInitializing`...).
    pub fn waiting_reason(&self) -> Option<&str> {
        self.status
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.as_deref())
    }
}

/// Waiting reasons that mean the image cannot be pulled.
pub fn is_image_pull_reason(reason: &str) -> bool {
    matches!(
        reason,
        "ImagePullBackOff" | "ErrImagePull" | "InvalidImageName" | "ErrImageNeverPull"
    )
}

/// The first init container, in spec order, that has not finished (a regular one: not exited 0)
/// or not started (a native sidecar). `None` when the init phase is over, or when a status
/// is missing (nothing to judge from).
pub fn blocking_init_container(pod: &Pod) -> Option<Blocking<'_>> {
    let spec = pod.spec.as_ref()?;
    let statuses = pod.status.as_ref()?.init_container_statuses.as_ref()?;
    for container in spec.init_containers.iter().flatten() {
        let status = statuses.iter().find(|s| s.name == container.name)?;
        let native = container.restart_policy.as_deref() == Some("Always");
        let state = status.state.as_ref();
        let done = if native {
            status.started == Some(true) && state.is_some_and(|s| s.running.is_some())
        } else {
            state
                .and_then(|s| s.terminated.as_ref())
                .is_some_and(|t| t.exit_code == 0)
        };
        if !done {
            return Some(Blocking {
                container,
                status,
                native,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_first_unfinished_init_container_blocks() {
        let p = pod(serde_json::json!({
            "spec": {"initContainers": [
                {"name": "istio-init"},
                {"name": "istio-proxy", "restartPolicy": "Always"}],
                "containers": [{"name": "app"}]},
            "status": {"initContainerStatuses": [
                {"name": "istio-init", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "ImagePullBackOff"}}},
                {"name": "istio-proxy", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "PodInitializing"}}}]}
        }));
        let b = blocking_init_container(&p).unwrap();
        assert_eq!(b.container.name, "istio-init");
        assert_eq!(b.waiting_reason(), Some("ImagePullBackOff"));
        assert!(!b.native);
    }

    #[test]
    fn a_started_native_sidecar_does_not_block() {
        let p = pod(serde_json::json!({
            "spec": {"initContainers": [{"name": "istio-proxy", "restartPolicy": "Always"}],
                     "containers": [{"name": "app"}]},
            "status": {"initContainerStatuses": [
                {"name": "istio-proxy", "image": "x", "imageID": "", "ready": true, "restartCount": 0,
                 "started": true, "state": {"running": {}}}]}
        }));
        assert!(blocking_init_container(&p).is_none());
    }
}
