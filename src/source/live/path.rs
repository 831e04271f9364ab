//! What `path` reads from a cluster: no more than one request's walk needs. Every namespace's
//! Namespaces, Services and Istio config (hosts, exportTo and routes cross namespaces); the
//! client namespace's Pods, workloads and NetworkPolicies; the mesh config; then, once the
//! target is known, the target namespace's Pods and NetworkPolicies and the target Service's
//! EndpointSlices. Not the Pods, workloads or Events of every namespace, as `analyze -A` does:
//! on a cluster of a thousand namespaces the walk reads a few of them.
//!
//! A list that RBAC forbids is recorded in `Snapshot::unavailable` (the hop that needs it is then
//! unknown); an unreachable or failing server, or the deadline, ends the read with its error.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, ListParams};

use super::{config, from_cronjob, from_daemonset, from_deployment, from_statefulset, located};
use crate::error::{Error, Result};
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::kube::kind::Kind;
use crate::kube::snapshot::{Located, SYSTEM_NAMESPACES, Snapshot};
use crate::source::cluster::{Cluster, ListError};

/// Records a list's outcome: its items through `keep`, a denial in `unavailable`, any other
/// error as the first one (it ends the read).
struct Reader<'s> {
    snapshot: &'s mut Snapshot,
    first_error: Option<(Kind, ListError)>,
}

impl Reader<'_> {
    fn take<T>(&mut self, kind: Kind, result: std::result::Result<Vec<T>, ListError>) -> Vec<T> {
        match result {
            Ok(items) => items,
            Err(ListError::Denied(reason)) => {
                self.snapshot.unavailable.insert(kind, reason);
                Vec::new()
            }
            Err(e) => {
                self.first_error.get_or_insert((kind, e));
                Vec::new()
            }
        }
    }

    fn finish(self, cluster: &Cluster, namespace: Option<&str>) -> Result<()> {
        match self.first_error {
            None => Ok(()),
            Some((_, ListError::Unreachable(reason))) => Err(cluster.unreachable(reason)),
            Some((kind, ListError::Failed(reason))) => Err(Error::Cluster(format!(
                "the Kubernetes API server {} ({}) failed a read, so the walk would be incomplete: cannot list {kind}: {reason}",
                cluster.server, cluster.name
            ))),
            Some((kind, e)) => Err(cluster.error(e, "list", kind.list_name(), namespace)),
        }
    }
}

/// The first read: everything but the target namespace's pods, network policies and endpoints.
pub async fn snapshot(cluster: &Cluster, client_ns: &str) -> Result<Snapshot> {
    let c = cluster;
    let ns = Some(client_ns);
    let (
        namespaces,
        services,
        pods,
        deployments,
        statefulsets,
        daemonsets,
        cronjobs,
        policies,
        maps,
    ) = tokio::join!(
        c.list_cluster::<Namespace>(),
        c.list::<Service>(None),
        c.list::<Pod>(ns),
        c.list::<Deployment>(ns),
        c.list::<StatefulSet>(ns),
        c.list::<DaemonSet>(ns),
        c.list::<CronJob>(ns),
        c.list::<NetworkPolicy>(ns),
        c.list::<ConfigMap>(Some(ISTIO_NAMESPACE)),
    );
    let mut snapshot = Snapshot {
        read_at: Some(jiff::Timestamp::now()),
        ..Snapshot::default()
    };
    let name: Arc<str> = Arc::from(cluster.name.as_str());
    let mut r = Reader {
        snapshot: &mut snapshot,
        first_error: None,
    };
    let namespaces = r.take(Kind::Namespaces, namespaces);
    let services = r.take(Kind::Services, services);
    let pods = r.take(Kind::Pods, pods);
    let mut workloads = Vec::new();
    workloads.extend(
        r.take(Kind::Deployments, deployments)
            .into_iter()
            .map(from_deployment),
    );
    workloads.extend(
        r.take(Kind::StatefulSets, statefulsets)
            .into_iter()
            .map(from_statefulset),
    );
    workloads.extend(
        r.take(Kind::DaemonSets, daemonsets)
            .into_iter()
            .map(from_daemonset),
    );
    workloads.extend(
        r.take(Kind::CronJobs, cronjobs)
            .into_iter()
            .map(from_cronjob),
    );
    let policies = r.take(Kind::NetworkPolicies, policies);
    let maps = r.take(Kind::ConfigMaps, maps);
    r.finish(cluster, Some(client_ns))?;
    if !namespaces
        .iter()
        .any(|n| n.metadata.name.as_deref() == Some(client_ns))
        && !snapshot.unavailable.contains_key(&Kind::Namespaces)
    {
        return Err(Error::NamespaceNotFound {
            namespace: client_ns.to_string(),
            cluster: cluster.name.clone(),
            server: cluster.server.clone(),
        });
    }
    let system = |ns: Option<&str>| SYSTEM_NAMESPACES.contains(&ns.unwrap_or(""));
    snapshot.namespaces = located(
        namespaces
            .into_iter()
            .filter(|n| !system(n.metadata.name.as_deref()))
            .collect(),
        &name,
        false,
    );
    snapshot.services = located(services, &name, false);
    snapshot.pods = located(pods, &name, false);
    snapshot.workloads = located(workloads, &name, false);
    snapshot.network_policies = located(policies, &name, false);
    super::set_config_maps(&mut snapshot, maps, &name, false);

    let istio = config::list(c, false).await;
    snapshot.config = istio.objects;
    snapshot.proxy_configs = istio.proxy_configs;
    if istio.istio_absent {
        snapshot.istio_absent.push(cluster.name.clone());
    }
    snapshot.unavailable.extend(istio.unavailable);
    if let Some(reason) = istio.unreachable {
        return Err(cluster.unreachable(reason));
    }
    if let Some(reason) = istio.failed {
        return Err(Error::Cluster(format!(
            "the Kubernetes API server {} ({}) failed a read, so the walk would be incomplete: {reason}",
            cluster.server, cluster.name
        )));
    }
    if let Some(kind) = istio.late {
        return Err(cluster.error(ListError::Deadline(String::new()), "list", kind, None));
    }
    Ok(snapshot)
}

/// The second read, once the target is known: the Pods and NetworkPolicies of a namespace the
/// walk reaches (nothing when it is the client's, read already), and with `service` the
/// Service's EndpointSlices.
pub async fn target(
    cluster: &Cluster,
    snapshot: &mut Snapshot,
    client_ns: &str,
    target_ns: &str,
    service: Option<&str>,
) -> Result<()> {
    let other = target_ns != client_ns;
    let c = cluster;
    let (pods, policies, slices) = tokio::join!(
        async {
            if other {
                c.list::<Pod>(Some(target_ns)).await
            } else {
                Ok(Vec::new())
            }
        },
        async {
            if other {
                c.list::<NetworkPolicy>(Some(target_ns)).await
            } else {
                Ok(Vec::new())
            }
        },
        async {
            match service {
                Some(name) => {
                    let api: Api<EndpointSlice> = Api::namespaced(c.client.clone(), target_ns);
                    let params =
                        ListParams::default().labels(&format!("kubernetes.io/service-name={name}"));
                    c.list_selected(api, &params).await
                }
                None => Ok(Vec::new()),
            }
        },
    );
    let mut r = Reader {
        snapshot,
        first_error: None,
    };
    let pods = r.take(Kind::Pods, pods);
    let policies = r.take(Kind::NetworkPolicies, policies);
    let slices = r.take(Kind::EndpointSlices, slices);
    r.finish(cluster, Some(target_ns))?;
    snapshot.pods.extend(pods.into_iter().map(Located::new));
    snapshot
        .network_policies
        .extend(policies.into_iter().map(Located::new));
    snapshot
        .endpoint_slices
        .extend(slices.into_iter().map(Located::new));
    Ok(())
}

/// The EndpointSlices of the Service `name` in `namespace`.
pub async fn endpoints(
    cluster: &Cluster,
    snapshot: &mut Snapshot,
    namespace: &str,
    name: &str,
) -> Result<()> {
    target(cluster, snapshot, namespace, namespace, Some(name)).await
}
