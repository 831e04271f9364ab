//! Runtime findings in `analyze`: the pure half. Which injected pods the pod list already flags
//! (istio-proxy not ready, restarting or waiting), so that the command probes only those; the
//! [`PodContext`] each diagnosis needs, built from the snapshot; and which of a diagnosis's
//! findings go into the report. The probing itself is I/O and happens in the command.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};

use crate::diagnosis::{AmbientContext, Diagnosis, Lookup, PodContext};
use crate::findings::finding::Finding;
use crate::findings::messages::{self, MessageType};
use crate::istio::ambient::{CNI_SELECTOR, ZTUNNEL_SELECTOR};
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::istio::sidecar;
use crate::istio::waypoint::GATEWAY_NAME_LABEL;
use crate::kube::kind::Kind;
use crate::kube::snapshot::{Located, Object, Snapshot};

/// The name `--analyzer` and `--list-analyzers` know the runtime checks by.
pub const NAME: &str = "sidecar-runtime";
pub const DESCRIPTION: &str = "Sidecars of injected pods that are not ready, restarting or waiting, probed like `pod NAME` (live clusters only; off with --no-probe)";
/// The codes it can add (the sidecar runtime family).
pub const CODES: &[&MessageType] = &[
    messages::MD0101,
    messages::MD0102,
    messages::MD0104,
    messages::MD0105,
    messages::MD0106,
    messages::MD0107,
    messages::MD0108,
    messages::MD0109,
];

/// Why the pod list flags a pod's istio-proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flag {
    /// Waiting to (re)start: `ContainerCreating`, `ImagePullBackOff`, `CrashLoopBackOff`...
    Waiting(String),
    /// Restarted and its last instance ended (`lastState.terminated`).
    Restarting { restarts: i32 },
    /// Running, but its readiness probe fails (the pod shows 1/2).
    NotReady,
}

/// Why this pod's istio-proxy deserves a probe, or `None` when the pod list shows nothing
/// wrong with it, it has no proxy, or it is finished or being deleted.
pub fn flag(pod: &Pod) -> Option<Flag> {
    let spec = pod.spec.as_ref()?;
    sidecar::proxy_container(spec)?;
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return None;
    }
    // No status yet (not scheduled): nothing has run, nothing to probe.
    let status = sidecar::proxy_status(pod)?;
    let state = status.state.as_ref();
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        return Some(Flag::Waiting(
            waiting.reason.clone().unwrap_or_else(|| "Waiting".into()),
        ));
    }
    let terminated_before = status
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some();
    if status.restart_count > 0 && terminated_before {
        return Some(Flag::Restarting {
            restarts: status.restart_count,
        });
    }
    if !status.ready {
        return Some(Flag::NotReady);
    }
    None
}

/// The pods to probe: flagged, injected pods read from a cluster (not from files), in the
/// snapshot's order.
pub fn select(snapshot: &Snapshot) -> Vec<&Located<Pod>> {
    snapshot
        .pods
        .iter()
        .filter(|p| p.origin.file.is_none() && flag(&p.object).is_some())
        .collect()
}

/// What the command reads for a namespace besides the snapshot.
#[derive(Debug)]
pub struct Fetched {
    /// The `istio-system` Namespace (NetworkPolicy namespace selectors).
    pub istio_namespace: Lookup<Namespace>,
    /// ConfigMap `istio-ca-root-cert` of the namespace.
    pub root_cert: Lookup<ConfigMap>,
}

/// The surroundings of the pods of `namespace` in `cluster` (`None` when one cluster is read),
/// from the snapshot plus what the command fetched. A kind the snapshot could not list is
/// `Unknown`, so the diagnosis reports its check as unknown rather than passed.
pub fn pod_context(
    snapshot: &Snapshot,
    cluster: Option<&Arc<str>>,
    namespace: &str,
    fetched: Fetched,
    now: Option<jiff::Timestamp>,
) -> PodContext {
    let same_cluster =
        |o: &crate::kube::snapshot::Origin| o.file.is_none() && o.cluster.as_ref() == cluster;
    let unknown = |kind: Kind| {
        snapshot
            .unavailable
            .get(&kind)
            .map(|reason| format!("cannot list {kind}: {reason}"))
    };
    let ns = match unknown(Kind::Namespaces) {
        Some(reason) => Lookup::Unknown(reason),
        None => snapshot
            .namespaces
            .iter()
            .find(|n| same_cluster(&n.origin) && n.object.name() == namespace)
            .map_or(Lookup::Missing, |n| Lookup::Found(n.object.clone())),
    };
    let webhooks = match unknown(Kind::MutatingWebhookConfigurations) {
        Some(reason) => Lookup::Unknown(reason),
        None => Lookup::Found(
            snapshot
                .webhooks
                .iter()
                .filter(|w| same_cluster(&w.origin))
                .map(|w| Located::new(w.object.clone()))
                .collect(),
        ),
    };
    let slices = match unknown(Kind::EndpointSlices) {
        Some(reason) => Lookup::Unknown(reason),
        None => Lookup::Found(
            snapshot
                .endpoint_slices
                .iter()
                .filter(|s| {
                    same_cluster(&s.origin) && s.object.namespace() == Some(ISTIO_NAMESPACE)
                })
                .map(|s| s.object.clone())
                .collect(),
        ),
    };
    let policies = match unknown(Kind::NetworkPolicies) {
        Some(reason) => Lookup::Unknown(reason),
        None => Lookup::Found(
            snapshot
                .network_policies
                .iter()
                .filter(|p| same_cluster(&p.origin) && p.object.namespace() == Some(namespace))
                .map(|p| p.object.clone())
                .collect(),
        ),
    };
    let istiod_pods = match unknown(Kind::Pods) {
        Some(reason) => Lookup::Unknown(reason),
        None => Lookup::Found(
            snapshot
                .pods
                .iter()
                .filter(|p| {
                    same_cluster(&p.origin)
                        && p.object.namespace() == Some(ISTIO_NAMESPACE)
                        && p.object.label("app") == Some("istiod")
                })
                .map(|p| p.object.clone())
                .collect(),
        ),
    };
    let mesh_config = match unknown(Kind::ConfigMaps) {
        Some(reason) => Lookup::Unknown(reason),
        None => snapshot
            .config_maps
            .iter()
            .find(|c| {
                same_cluster(&c.origin)
                    && c.object.namespace() == Some(ISTIO_NAMESPACE)
                    && c.object.name() == "istio"
            })
            .map_or(Lookup::Missing, |c| Lookup::Found(c.object.clone())),
    };
    PodContext {
        namespace: ns,
        webhooks,
        istio_endpoint_slices: slices,
        istio_namespace: fetched.istio_namespace,
        network_policies: policies,
        root_cert: fetched.root_cert,
        istiod_pods,
        mesh_config,
        ztunnel_pods: agents(snapshot, &same_cluster, ZTUNNEL_SELECTOR),
        cni_pods: agents(snapshot, &same_cluster, CNI_SELECTOR),
        ambient: ambient_context(snapshot, &same_cluster, namespace),
        now,
    }
}

/// The pods of the snapshot (every namespace) a `key=value` selector picks, of this cluster.
fn agents(
    snapshot: &Snapshot,
    same_cluster: &dyn Fn(&crate::kube::snapshot::Origin) -> bool,
    selector: &str,
) -> Lookup<Vec<Pod>> {
    if let Some(reason) = snapshot.unavailable.get(&Kind::Pods) {
        return Lookup::Unknown(format!("cannot list pods: {reason}"));
    }
    let (key, value) = selector.split_once('=').unwrap_or((selector, ""));
    Lookup::Found(
        snapshot
            .all_pods()
            .filter(|p| same_cluster(&p.origin) && p.object.label(key) == Some(value))
            .map(|p| p.object.clone())
            .collect(),
    )
}

/// An ambient pod's surroundings from the snapshot: the Services of its namespace, the
/// Gateway API Gateways, the pods of Gateways and the AuthorizationPolicies.
fn ambient_context(
    snapshot: &Snapshot,
    same_cluster: &dyn Fn(&crate::kube::snapshot::Origin) -> bool,
    namespace: &str,
) -> AmbientContext {
    let unknown = |kind: Kind| {
        snapshot
            .unavailable
            .get(&kind)
            .map(|reason| format!("cannot list {kind}: {reason}"))
    };
    let config = |list: Kind| match unknown(list) {
        Some(reason) => Lookup::Unknown(reason),
        None => Lookup::Found(
            snapshot
                .config
                .iter()
                .filter(|c| {
                    same_cluster(&c.origin)
                        && crate::istio::config::config_kind(&c.object.api_version, &c.object.kind)
                            == Some(list)
                })
                .map(|c| c.object.clone())
                .collect(),
        ),
    };
    AmbientContext {
        services: match unknown(Kind::Services) {
            Some(reason) => Lookup::Unknown(reason),
            None => Lookup::Found(
                snapshot
                    .all_services()
                    .filter(|s| same_cluster(&s.origin) && s.object.namespace() == Some(namespace))
                    .map(|s| s.object.clone())
                    .collect(),
            ),
        },
        gateways: config(Kind::KubernetesGateways),
        gateway_pods: match unknown(Kind::Pods) {
            Some(reason) => Lookup::Unknown(reason),
            None => Lookup::Found(
                snapshot
                    .all_pods()
                    .filter(|p| {
                        same_cluster(&p.origin) && p.object.label(GATEWAY_NAME_LABEL).is_some()
                    })
                    .map(|p| p.object.clone())
                    .collect(),
            ),
        },
        authorization_policies: config(Kind::AuthorizationPolicies),
        proxy_only_config: match crate::diagnosis::PROXY_ONLY_CONFIG
            .iter()
            .find_map(|kind| unknown(*kind))
        {
            Some(reason) => Lookup::Unknown(reason),
            None => Lookup::Found(
                snapshot
                    .config
                    .iter()
                    .filter(|c| {
                        same_cluster(&c.origin)
                            && crate::istio::config::config_kind(
                                &c.object.api_version,
                                &c.object.kind,
                            )
                            .is_some_and(|k| crate::diagnosis::PROXY_ONLY_CONFIG.contains(&k))
                    })
                    .map(|c| c.object.clone())
                    .collect(),
            ),
        },
        root_namespace: crate::istio::dataplane::root_namespace(snapshot).to_string(),
    }
}

/// The findings of one pod's diagnosis that go into the report: the sidecar runtime family
/// (MD01xx), labelled with the cluster when several are analysed. The injection findings a
/// diagnosis can also make are the injection analyzer's business.
pub fn findings(diagnosis: Diagnosis, cluster: Option<&Arc<str>>) -> Vec<Finding> {
    diagnosis
        .findings
        .into_iter()
        .filter(|f| CODES.iter().any(|m| m.code == f.code()))
        .map(|mut f| {
            if let Some(r) = f.resource.as_mut() {
                r.cluster = cluster.cloned();
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis;
    use crate::kube::snapshot::Origin;
    use serde_json::json;

    fn pod(name: &str, proxy_status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"containers": [{"name": "web"}, {"name": "istio-proxy"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "web", "ready": true, "restartCount": 0, "image": "web", "imageID": "",
                 "state": {"running": {}}},
                proxy_status
            ]}
        }))
        .unwrap()
    }

    fn proxy(
        ready: bool,
        restarts: i32,
        state: serde_json::Value,
        last: serde_json::Value,
    ) -> serde_json::Value {
        json!({"name": "istio-proxy", "ready": ready, "restartCount": restarts,
               "image": "proxyv2", "imageID": "", "state": state, "lastState": last})
    }

    #[test]
    fn flags_what_the_pod_list_shows() {
        let crash = pod(
            "crash",
            proxy(
                false,
                7,
                json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                json!({"terminated": {"exitCode": 255, "reason": "Error"}}),
            ),
        );
        assert_eq!(flag(&crash), Some(Flag::Waiting("CrashLoopBackOff".into())));
        let creating = pod(
            "creating",
            proxy(
                false,
                0,
                json!({"waiting": {"reason": "ContainerCreating"}}),
                json!({}),
            ),
        );
        assert_eq!(
            flag(&creating),
            Some(Flag::Waiting("ContainerCreating".into()))
        );
        let not_ready = pod("wait", proxy(false, 0, json!({"running": {}}), json!({})));
        assert_eq!(flag(&not_ready), Some(Flag::NotReady));
        let restarted = pod(
            "oom",
            proxy(
                true,
                2,
                json!({"running": {}}),
                json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
            ),
        );
        assert_eq!(flag(&restarted), Some(Flag::Restarting { restarts: 2 }));
    }

    #[test]
    fn leaves_healthy_unmeshed_finished_and_unscheduled_pods_alone() {
        let healthy = pod("ok", proxy(true, 0, json!({"running": {}}), json!({})));
        assert_eq!(flag(&healthy), None);
        let mut no_proxy = healthy.clone();
        no_proxy.spec.as_mut().unwrap().containers.pop();
        let mut no_proxy_not_ready = no_proxy.clone();
        no_proxy_not_ready
            .status
            .as_mut()
            .unwrap()
            .container_statuses = None;
        assert_eq!(flag(&no_proxy), None);
        assert_eq!(flag(&no_proxy_not_ready), None);
        let mut done = pod(
            "job",
            proxy(false, 0, json!({"terminated": {"exitCode": 0}}), json!({})),
        );
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert_eq!(flag(&done), None);
        let mut deleting = pod("bye", proxy(false, 0, json!({"running": {}}), json!({})));
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-01-01T00:00:00Z".parse().unwrap(),
            ));
        assert_eq!(flag(&deleting), None);
        let mut unscheduled = pod("pending", json!({"name": "other"}));
        unscheduled.status.as_mut().unwrap().container_statuses = None;
        unscheduled.status.as_mut().unwrap().phase = Some("Pending".into());
        assert_eq!(flag(&unscheduled), None);
    }

    #[test]
    fn native_sidecars_are_flagged_too() {
        let native: Pod = serde_json::from_value(json!({
            "metadata": {"name": "native", "namespace": "shop"},
            "spec": {"initContainers": [{"name": "istio-proxy", "restartPolicy": "Always"}],
                     "containers": [{"name": "web"}]},
            "status": {"phase": "Running", "initContainerStatuses": [
                {"name": "istio-proxy", "ready": false, "restartCount": 0, "image": "proxyv2",
                 "imageID": "", "state": {"running": {}}}
            ]}
        }))
        .unwrap();
        assert_eq!(flag(&native), Some(Flag::NotReady));
    }

    #[test]
    fn selects_flagged_pods_from_the_cluster_only() {
        let mut snapshot = Snapshot::default();
        let wait = pod("wait", proxy(false, 0, json!({"running": {}}), json!({})));
        let ok = pod("ok", proxy(true, 0, json!({"running": {}}), json!({})));
        let mut from_file = Located::new(wait.clone());
        from_file.origin.file = Some(Arc::from("pods.yaml"));
        snapshot.pods = vec![Located::new(ok), Located::new(wait), from_file];
        let names: Vec<&str> = select(&snapshot).iter().map(|p| p.object.name()).collect();
        assert_eq!(names, ["wait"]);
    }

    #[test]
    fn context_comes_from_the_snapshot_of_the_pods_cluster_and_namespace() {
        let mut snapshot = Snapshot::default();
        let ns: Namespace = serde_json::from_value(
            json!({"metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}}),
        )
        .unwrap();
        let policy = |namespace: &str| {
            serde_json::from_value(json!({"metadata": {"name": "deny", "namespace": namespace},
                                           "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}))
            .unwrap()
        };
        snapshot.namespaces.push(Located::new(ns));
        snapshot.network_policies.push(Located::new(policy("shop")));
        snapshot
            .network_policies
            .push(Located::new(policy("other")));
        let mut elsewhere = Located::new(policy("shop"));
        elsewhere.origin = Origin {
            cluster: Some(Arc::from("east")),
            ..Origin::default()
        };
        snapshot.network_policies.push(elsewhere);
        snapshot
            .unavailable
            .insert(Kind::EndpointSlices, "forbidden".into());
        let fetched = Fetched {
            istio_namespace: Lookup::Missing,
            root_cert: Lookup::Missing,
        };
        let ctx = pod_context(&snapshot, None, "shop", fetched, None);
        assert!(ctx.namespace.found().is_some());
        assert_eq!(ctx.network_policies.found().unwrap().len(), 1);
        assert_eq!(
            ctx.istio_endpoint_slices,
            Lookup::Unknown("cannot list endpointslices: forbidden".into())
        );
        assert_eq!(ctx.webhooks.found().unwrap().len(), 0);
    }

    #[test]
    fn keeps_the_runtime_findings_of_a_diagnosis() {
        let crash = pod(
            "crash",
            proxy(
                false,
                7,
                json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                json!({"terminated": {"exitCode": 255, "reason": "Error"}}),
            ),
        );
        let d = diagnosis::diagnose(&crash, &PodContext::default(), None);
        let east: Arc<str> = Arc::from("east");
        let found = findings(d, Some(&east));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].code(), "MD0101");
        let r = found[0].resource.as_ref().unwrap();
        assert_eq!((r.kind.as_str(), r.name.as_str()), ("Pod", "crash"));
        assert_eq!(r.cluster.as_deref(), Some("east"));
    }
}
