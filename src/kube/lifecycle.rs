//! Where a pod is in its life: live, being deleted, evicted, or ended (`Succeeded`, `Failed`).
//!
//! A pod that is being deleted or has ended is judged by that, never by the startup of its
//! containers: its containers are stopping or stopped, not starting. Pure: the time is an input.

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// A pod's stage of life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lifecycle {
    /// Neither deleted nor ended.
    Live,
    /// `metadata.deletionTimestamp` is set: the kubelet is stopping the pod.
    Terminating {
        /// The grace period the deletion gave (`metadata.deletionGracePeriodSeconds`).
        grace_seconds: Option<i64>,
        /// Seconds until `deletionTimestamp` (the end of the grace period; negative: past it),
        /// when the time is known.
        left_seconds: Option<i64>,
        /// The pod's finalizers (they keep the object after its containers are gone).
        finalizers: Vec<String>,
    },
    /// Phase `Failed` with reason `Evicted`: the kubelet evicted it (node pressure).
    Evicted { message: Option<String> },
    /// Phase `Succeeded` or `Failed`: every container has stopped and none will be restarted.
    Ended {
        phase: String,
        reason: Option<String>,
        message: Option<String>,
    },
}

/// The pod's stage of life at `now` (`None`: the time is not known; the grace left is then
/// not said).
pub fn lifecycle(pod: &Pod, now: Option<jiff::Timestamp>) -> Lifecycle {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
    let reason = status.and_then(|s| s.reason.clone());
    let message = status.and_then(|s| s.message.clone());
    if matches!(phase, "Failed" | "Succeeded") {
        if phase == "Failed" && reason.as_deref() == Some("Evicted") {
            return Lifecycle::Evicted { message };
        }
        return Lifecycle::Ended {
            phase: phase.to_string(),
            reason,
            message,
        };
    }
    if let Some(deleted) = pod.metadata.deletion_timestamp.as_ref() {
        return Lifecycle::Terminating {
            grace_seconds: pod.metadata.deletion_grace_period_seconds,
            left_seconds: now.map(|n| deleted.0.as_second() - n.as_second()),
            finalizers: pod.metadata.finalizers.clone().unwrap_or_default(),
        };
    }
    Lifecycle::Live
}

/// True when the pod is being deleted or has ended: nothing in it is starting.
pub fn is_ending(pod: &Pod) -> bool {
    lifecycle(pod, None) != Lifecycle::Live
}

/// The kind of the pod's controlling owner (`Job`, `ReplicaSet`...) and its name.
pub fn controller(pod: &Pod) -> Option<(&str, &str)> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.kind.as_str(), o.name.as_str()))
}

/// The pod's restart policy (`Always` when it says none, as the API server defaults it).
pub fn restart_policy(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

/// True when the container's current state is terminated (it ran and exited).
pub fn is_terminated(status: &ContainerStatus) -> bool {
    status
        .state
        .as_ref()
        .is_some_and(|s| s.terminated.is_some())
}

/// True when the container is running.
pub fn is_running(status: &ContainerStatus) -> bool {
    status.state.as_ref().is_some_and(|s| s.running.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn stages_of_life() {
        let now: jiff::Timestamp = "2026-12-01T10:00:00Z".parse().unwrap();
        let live = pod(json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}}));
        assert_eq!(lifecycle(&live, Some(now)), Lifecycle::Live);
        let deleting = pod(json!({"metadata": {"name": "p",
            "deletionTimestamp": "2026-12-01T10:00:20Z", "deletionGracePeriodSeconds": 30},
            "status": {"phase": "Running"}}));
        assert_eq!(
            lifecycle(&deleting, Some(now)),
            Lifecycle::Terminating {
                grace_seconds: Some(30),
                left_seconds: Some(20),
                finalizers: vec![]
            }
        );
        let evicted = pod(json!({"metadata": {"name": "p"},
            "status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}}));
        assert!(
            matches!(lifecycle(&evicted, None), Lifecycle::Evicted { message: Some(m) } if m.contains("memory"))
        );
        let failed = pod(
            json!({"metadata": {"name": "p", "deletionTimestamp": "2026-12-01T10:00:20Z"},
            "status": {"phase": "Failed"}}),
        );
        // An ended pod that is also being deleted is judged as ended: nothing runs any more.
        assert!(
            matches!(lifecycle(&failed, Some(now)), Lifecycle::Ended { phase, .. } if phase == "Failed")
        );
        assert!(is_ending(&failed));
        assert!(!is_ending(&live));
    }
}
