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

/// The grace given to a young proxy when its istio-proxy has no readiness probe (seconds).
/// Istio's injected probe (initialDelaySeconds 0, periodSeconds 15, failureThreshold 4) gives
/// the same 60 s.
pub const DEFAULT_STARTUP_GRACE_SECONDS: i64 = 60;

/// How long a proxy may take to become ready before it is judged, one rule for every command
/// (`pod`, `analyze`'s runtime findings, `proxy-status`): istio-proxy's readiness probe
/// `initialDelaySeconds + periodSeconds × failureThreshold` (Kubernetes' defaults 0, 10 and 3
/// for the fields it leaves out), else [`DEFAULT_STARTUP_GRACE_SECONDS`].
pub fn startup_grace_seconds(pod: &Pod) -> i64 {
    let probe = pod
        .spec
        .as_ref()
        .and_then(proxy_container)
        .and_then(|p| p.container.readiness_probe.as_ref());
    match probe {
        Some(p) => {
            let delay = i64::from(p.initial_delay_seconds.unwrap_or(0).max(0));
            let period = i64::from(p.period_seconds.unwrap_or(10).max(1));
            let failures = i64::from(p.failure_threshold.unwrap_or(3).max(1));
            delay + period * failures
        }
        None => DEFAULT_STARTUP_GRACE_SECONDS,
    }
}

/// Seconds since istio-proxy's current run started (`state.running.startedAt`).
pub fn proxy_running_seconds(pod: &Pod, now: jiff::Timestamp) -> Option<i64> {
    let started = proxy_status(pod)?
        .state
        .as_ref()?
        .running
        .as_ref()?
        .started_at
        .as_ref()?;
    Some(now.as_second() - started.0.as_second())
}

/// Seconds since the pod was created.
pub fn pod_age_seconds(pod: &Pod, now: jiff::Timestamp) -> Option<i64> {
    let created = pod.metadata.creation_timestamp.as_ref()?;
    Some(now.as_second() - created.0.as_second())
}

/// True while a proxy that is not ready yet is within its [`startup_grace_seconds`]: running
/// for less than the grace, or (not running yet) in a pod younger than the grace. Such a proxy
/// is "starting", not broken. A proxy that has restarted or exited is never starting, nor is
/// one in a pod that is being deleted or has ended (`kube::lifecycle`).
pub fn is_starting(pod: &Pod, now: jiff::Timestamp) -> bool {
    if crate::kube::lifecycle::is_ending(pod) {
        return false;
    }
    let Some(status) = proxy_status(pod) else {
        return pod_age_seconds(pod, now).is_some_and(|a| a < startup_grace_seconds(pod));
    };
    if status.ready || status.restart_count > 0 || crate::kube::lifecycle::is_terminated(status) {
        return false;
    }
    let grace = startup_grace_seconds(pod);
    match proxy_running_seconds(pod, now) {
        Some(running) => running < grace,
        None => {
            let waiting = status
                .state
                .as_ref()
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| w.reason.as_deref());
            matches!(
                waiting,
                None | Some("ContainerCreating" | "PodInitializing")
            ) && pod_age_seconds(pod, now).is_some_and(|a| a < grace)
        }
    }
}
