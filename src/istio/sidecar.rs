//! Where the Istio proxy lives in a pod: a classic sidecar in `containers`, or (Kubernetes
//! 1.33+ with native sidecars) an init container with `restartPolicy: Always`.

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec};

pub const PROXY_CONTAINER: &str = "istio-proxy";

/// The injected proxy container of a pod spec.
#[derive(Debug, Clone, Copy)]
pub struct ProxyContainer<'a> {
    pub container: &'a Container,
    /// True for a native sidecar (an init container that keeps running).
    pub native: bool,
}

impl ProxyContainer<'_> {
    pub fn image(&self) -> &str {
        self.container.image.as_deref().unwrap_or("")
    }
}

/// Finds `istio-proxy` in the containers, then in the init containers.
pub fn proxy_container(spec: &PodSpec) -> Option<ProxyContainer<'_>> {
    if let Some(container) = spec.containers.iter().find(|c| c.name == PROXY_CONTAINER) {
        return Some(ProxyContainer {
            container,
            native: false,
        });
    }
    spec.init_containers
        .iter()
        .flatten()
        .find(|c| c.name == PROXY_CONTAINER)
        .map(|container| ProxyContainer {
            container,
            native: container.restart_policy.as_deref() == Some("Always"),
        })
}

/// Every container named `istio-proxy` (containers and init containers), as Istio's image
/// analyzer iterates them.
pub fn proxy_containers(spec: &PodSpec) -> impl Iterator<Item = &Container> {
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .filter(|c| c.name == PROXY_CONTAINER)
}

/// The status of the `istio-proxy` container, wherever it runs.
pub fn proxy_status(pod: &Pod) -> Option<&ContainerStatus> {
    let status = pod.status.as_ref()?;
    status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .find(|s| s.name == PROXY_CONTAINER)
}
