//! The live source: reads a cluster with kube-rs into a [`Snapshot`].
//!
//! Each kind is listed once for the whole scope (one namespace, or all), with pagination.
//! A list that RBAC forbids is recorded in `Snapshot::unavailable`, so the analyzers that need it
//! are skipped and the rest still run. An unreachable server fails fast, within the request timeout.

pub mod admission;
pub mod config;
pub mod mesh;
pub mod path;

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::Api;

use crate::error::{Error, Result};
use crate::istio::config::TypedSpecs;
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::kube::kind::Kind;
use crate::kube::snapshot::{
    Located, Origin, SYSTEM_NAMESPACES, SecretKeys, Snapshot, Workload, WorkloadKind,
};
use crate::source::cluster::{Cluster, Connection, ListError, connect, scope_namespace};

fn located<T>(items: Vec<T>, cluster: &Arc<str>, multi: bool) -> Vec<Located<T>> {
    items
        .into_iter()
        .map(|object| Located {
            object,
            origin: Origin {
                cluster: multi.then(|| cluster.clone()),
                ..Origin::default()
            },
        })
        .collect()
}

/// What a read that depends on the first batch found (Secrets and ConfigMaps Gateways name,
/// remote secrets, Services webhooks call): these reads run at once, each beside the others,
/// and what they found is put into the snapshot after, in a fixed order.
#[derive(Default)]
pub struct Found {
    pub secrets: Vec<Located<SecretKeys>>,
    pub config_maps: Vec<Located<ConfigMap>>,
    pub services_beyond_scope: Vec<Located<Service>>,
    /// The kinds that could not be got, with the reason.
    pub unavailable: Vec<(Kind, String)>,
}

impl Found {
    fn put_into(self, snapshot: &mut Snapshot) {
        snapshot.secrets.extend(self.secrets);
        snapshot.config_maps.extend(self.config_maps);
        snapshot
            .services_beyond_scope
            .extend(self.services_beyond_scope);
        snapshot.unavailable.extend(self.unavailable);
    }
}

/// Gets the objects named (namespace, name) all at once, one round trip for all of them: those
/// that exist, in the order asked, and the reason of each get that failed.
async fn get_named<K>(cluster: &Cluster, names: &[(String, String)]) -> (Vec<K>, Vec<String>)
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let answers = futures::future::join_all(names.iter().map(|(ns, name)| {
        let api: Api<K> = Api::namespaced(cluster.client.clone(), ns);
        cluster.get_opt(api, name)
    }))
    .await;
    let mut found = Vec::new();
    let mut failed = Vec::new();
    for answer in answers {
        match answer {
            Ok(Some(object)) => found.push(object),
            Ok(None) => {}
            Err(e) => failed.push(e.reason().to_string()),
        }
    }
    (found, failed)
}

/// `object` located, unless it is in one of the system namespaces.
/// [`located_outside_system`] for an object decoded as `Located` already: its origin set, and
/// false for an object of a system namespace.
fn keep_outside_system<T: crate::kube::snapshot::Object>(
    located: &mut Located<T>,
    origin: &Origin,
) -> bool {
    if SYSTEM_NAMESPACES.contains(&located.object.namespace().unwrap_or("")) {
        return false;
    }
    located.origin = origin.clone();
    true
}

fn located_outside_system<T: crate::kube::snapshot::Object>(
    object: T,
    origin: &Origin,
) -> Option<Located<T>> {
    (!SYSTEM_NAMESPACES.contains(&object.namespace().unwrap_or(""))).then(|| Located {
        object,
        origin: origin.clone(),
    })
}

/// The workloads of one kind in a scope, outside the system namespaces: each made (`make`) and
/// located page by page as its list comes (a Deployment's template is most of it: not moved once
/// more after the last list).
async fn workloads<K>(
    c: &Cluster,
    namespace: Option<&str>,
    origin: &Origin,
    make: fn(K) -> Workload,
) -> std::result::Result<Vec<Located<Workload>>, ListError>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    c.list_kept(namespace, |k: K| located_outside_system(make(k), origin))
        .await
}

/// Everything `analyze` needs from one cluster, for one namespace or all of them.
pub async fn snapshot(
    cluster: &Cluster,
    namespace: Option<&str>,
    multi: bool,
) -> Result<(Snapshot, TypedSpecs)> {
    let c = cluster;
    let ns = namespace;
    let name: Arc<str> = Arc::from(cluster.name.as_str());
    let origin = Origin {
        cluster: multi.then(|| name.clone()),
        ..Origin::default()
    };
    // One batch, so a hung server costs one request timeout (or the overall deadline), not two.
    let (
        namespaces,
        pods,
        services,
        deployments,
        statefulsets,
        daemonsets,
        cronjobs,
        webhooks,
        config_maps,
        istio_deployments,
        istio_services,
        pdbs,
        slices,
        events,
        policies,
        (istio, nodes, beyond_scope),
        admission_lists,
    ) = tokio::join!(
        async {
            match ns {
                Some(name) => c
                    .get_opt(Api::<Namespace>::all(c.client.clone()), name)
                    .await
                    .map(|n| n.into_iter().collect::<Vec<_>>()),
                None => c.list_cluster::<Namespace>().await,
            }
        },
        c.list_located(ns, |o: &mut Located<Pod>| keep_outside_system(o, &origin)),
        c.list_located(ns, |o: &mut Located<Service>| keep_outside_system(
            o, &origin
        )),
        workloads(c, ns, &origin, from_deployment),
        workloads(c, ns, &origin, from_statefulset),
        workloads(c, ns, &origin, from_daemonset),
        workloads(c, ns, &origin, from_cronjob),
        c.list_cluster::<MutatingWebhookConfiguration>(),
        c.list::<ConfigMap>(Some(ISTIO_NAMESPACE)),
        workloads(c, Some(ISTIO_NAMESPACE), &origin, from_deployment),
        c.list::<Service>(Some(ISTIO_NAMESPACE)),
        c.list::<PodDisruptionBudget>(Some(ISTIO_NAMESPACE)),
        c.list::<EndpointSlice>(Some(ISTIO_NAMESPACE)),
        c.list::<Event>(ns),
        c.list::<NetworkPolicy>(ns),
        // Istio's config and the admission objects need nothing of the lists above: read
        // beside them, so the read takes as long as its slowest list, not the sum of batches.
        // So are the reads that need only the config: the Nodes for DestinationRules, and with
        // `-n` the Pods and Services beyond the scope.
        async {
            // The Nodes as soon as the DestinationRules are listed, not after the last config
            // list.
            let (rules_found, rules_listed) = tokio::sync::oneshot::channel();
            let nodes = async {
                rules_listed.await.ok()?;
                Some(config::nodes(c).await)
            };
            let config_then_beyond = async {
                let istio = config::list_typed_for_analysis(c, multi, rules_found).await;
                let beyond = config::beyond_scope(c, ns, &istio.objects).await;
                (istio, beyond)
            };
            let ((istio, beyond), nodes) = tokio::join!(config_then_beyond, nodes);
            // The Nodes serve the DestinationRules only: not kept when, after all, the config
            // holds none.
            let nodes = nodes.filter(|_| {
                istio
                    .objects
                    .iter()
                    .any(|o| o.object.kind == "DestinationRule")
            });
            (istio, nodes, beyond)
        },
        admission::fetch(c),
    );

    let mut snapshot = Snapshot {
        // The clock the certificates read are judged against.
        read_at: Some(jiff::Timestamp::now()),
        ..Snapshot::default()
    };
    // The config's specs typed as it was read, when the config is the snapshot's.
    let mut typed_config = TypedSpecs::default();
    let mut read_any = false;
    let mut unreachable: Option<String> = None;
    let mut failed: Option<String> = None;
    let mut late: Option<&str> = None;
    macro_rules! take {
        ($result:expr, $kind:expr, |$items:ident| $body:expr) => {
            match $result {
                Ok($items) => {
                    read_any = true;
                    $body
                }
                Err(ListError::Denied(reason)) => {
                    snapshot.unavailable.insert($kind, reason);
                }
                Err(ListError::Unreachable(reason)) => {
                    unreachable.get_or_insert(format!("cannot list {}: {reason}", $kind));
                }
                Err(ListError::Failed(reason)) => {
                    failed.get_or_insert(format!("cannot list {}: {reason}", $kind));
                }
                Err(ListError::Deadline(_)) => {
                    late.get_or_insert($kind.list_name());
                }
            }
        };
    }
    if let (Some(name), Ok(found)) = (ns, &namespaces)
        && found.is_empty()
    {
        return Err(Error::NamespaceNotFound {
            namespace: name.to_string(),
            cluster: cluster.name.clone(),
            server: cluster.server.clone(),
        });
    }
    take!(namespaces, Kind::Namespaces, |items| snapshot.namespaces =
        located(
            items
                .into_iter()
                .filter(|n| !SYSTEM_NAMESPACES.contains(&crate::kube::snapshot::Object::name(n)))
                .collect(),
            &name,
            multi
        ));
    take!(pods, Kind::Pods, |items| snapshot.pods = items);
    take!(services, Kind::Services, |items| snapshot.services = items);
    let mut workloads = Vec::new();
    take!(deployments, Kind::Deployments, |items| workloads = items);
    take!(statefulsets, Kind::StatefulSets, |items| workloads
        .extend(items));
    take!(daemonsets, Kind::DaemonSets, |items| workloads
        .extend(items));
    take!(cronjobs, Kind::CronJobs, |items| workloads.extend(items));
    // istiod's Deployments are needed even when the scope is another namespace.
    take!(istio_deployments, Kind::Deployments, |items| {
        if ns.is_some_and(|n| n != ISTIO_NAMESPACE) {
            workloads.extend(items);
        }
    });
    snapshot.workloads = workloads;
    // And the Services the injection webhooks call (control-plane checks).
    take!(istio_services, Kind::Services, |items| {
        if ns.is_some_and(|n| n != ISTIO_NAMESPACE) {
            snapshot.services.extend(located(items, &name, multi));
        }
    });
    take!(webhooks, Kind::MutatingWebhookConfigurations, |items| {
        snapshot.webhooks = located(items, &name, multi)
    });
    take!(config_maps, Kind::ConfigMaps, |items| set_config_maps(
        &mut snapshot,
        items,
        &name,
        multi
    ));
    take!(pdbs, Kind::PodDisruptionBudgets, |items| snapshot
        .pod_disruption_budgets =
        located(items, &name, multi));
    take!(slices, Kind::EndpointSlices, |items| snapshot
        .endpoint_slices =
        located(items, &name, multi));
    take!(events, Kind::Events, |items| snapshot.events =
        located(items, &name, multi));
    take!(policies, Kind::NetworkPolicies, |items| snapshot
        .network_policies =
        located(items, &name, multi));
    // A core list that failed ends the read here: the reads that depend on what was listed
    // would only wait on the same server (and past the deadline), and the answer is an error
    // either way.
    if late.is_none() && unreachable.is_none() && failed.is_none() {
        snapshot.config = istio.objects;
        typed_config = istio.typed;
        snapshot.proxy_configs = istio.proxy_configs;
        if istio.istio_absent {
            snapshot.istio_absent.push(cluster.name.clone());
        }
        snapshot.unavailable.extend(istio.unavailable);
        if let Some(reason) = istio.unreachable {
            unreachable.get_or_insert(reason);
        }
        if let Some(reason) = istio.failed {
            failed.get_or_insert(reason);
        }
        if let Some(kind) = istio.late {
            late.get_or_insert(kind);
        }
        match nodes {
            Some(Ok(items)) => snapshot.nodes = items,
            Some(Err(e)) => {
                snapshot
                    .unavailable
                    .insert(Kind::Nodes, e.reason().to_string());
            }
            None => {}
        }
        beyond_scope.put_into(&mut snapshot);
        admission::put(c, multi, admission_lists, &mut snapshot);
        // The reads that need the whole first batch, all at once.
        let (gateway, remote, webhook) = tokio::join!(
            config::gateway_secrets(c, &snapshot),
            mesh::remote_secrets(c, &snapshot),
            admission::webhook_services(c, &snapshot)
        );
        for found in [gateway, remote, webhook] {
            found.put_into(&mut snapshot);
        }
    }

    if let Some(kind) = late {
        return Err(cluster.error(ListError::Deadline(String::new()), "list", kind, ns));
    }
    if let Some(reason) = unreachable {
        return Err(cluster.unreachable(reason));
    }
    if let Some(reason) = failed {
        return Err(Error::Cluster(format!(
            "the Kubernetes API server {} ({}) failed a read, so the analysis would be incomplete: {reason}",
            cluster.server, cluster.name
        )));
    }
    if !read_any {
        let reasons: Vec<String> = snapshot
            .unavailable
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        return Err(Error::Cluster(format!(
            "nothing could be read from {} ({}): {}",
            cluster.name,
            cluster.server,
            reasons.join("; ")
        )));
    }
    // What could not be listed is said once, by the caller (`warning: cannot list ...`).
    Ok((snapshot, typed_config))
}

/// Keeps Istio's ConfigMaps of istio-system (`istio*`) and reads the mesh config (and checks the
/// mesh networks) of the `istio` one.
pub fn set_config_maps(
    snapshot: &mut Snapshot,
    items: Vec<ConfigMap>,
    cluster: &Arc<str>,
    multi: bool,
) {
    let items: Vec<ConfigMap> = items
        .into_iter()
        .filter(|cm| crate::kube::snapshot::Object::name(cm).starts_with("istio"))
        .collect();
    for cm in &items {
        if crate::kube::snapshot::Object::name(cm) != "istio" {
            continue;
        }
        let data = cm.data.as_ref();
        if let Some(mesh) = data.and_then(|d| d.get("mesh"))
            && let Ok(docs) = crate::formats::yaml::parse_stream(mesh)
        {
            snapshot.mesh_config = docs.into_iter().next().map(|d| d.value);
        }
        // A meshNetworks value that is not MeshNetworks cannot be checked: said, and the
        // mesh networks analyzer is skipped (a file with it is exit 65).
        if let Some(problem) = data
            .and_then(|d| d.get("meshNetworks"))
            .and_then(|text| crate::istio::mesh_networks::problem_in_text(text))
        {
            snapshot.unavailable.insert(
                Kind::MeshNetworks,
                format!(
                    "the meshNetworks key of ConfigMap {}/istio is not MeshNetworks: {problem}",
                    crate::kube::snapshot::Object::namespace(cm).unwrap_or_default()
                ),
            );
        }
    }
    snapshot.config_maps = located(items, cluster, multi);
}

/// The snapshot `analyze` reads: every `--context` (or the current one), in the chosen scope,
/// and the namespace of that scope in the first cluster (`None` with `-A`).
pub async fn snapshot_for_analyze(
    global: &Connection,
    all_namespaces: bool,
) -> Result<(Snapshot, Option<String>, TypedSpecs)> {
    let contexts: Vec<Option<&str>> = if global.context.is_empty() {
        vec![None]
    } else {
        global.context.iter().map(|c| Some(c.as_str())).collect()
    };
    let multi = contexts.len() > 1;
    let mut merged = Snapshot::default();
    let mut typed = TypedSpecs::default();
    let mut first_namespace = None;
    for context in contexts {
        let cluster = connect(global, context).await?;
        let namespace = (!all_namespaces).then(|| scope_namespace(global, Some(&cluster)));
        if first_namespace.is_none() {
            first_namespace.clone_from(&namespace);
        }
        tracing::info!(
            cluster = %cluster.name,
            server = %cluster.server,
            namespace = %namespace.as_deref().unwrap_or("(all)"),
            "reading cluster"
        );
        let (snapshot, specs) = snapshot(&cluster, namespace.as_deref(), multi).await?;
        for (kind, reason) in &snapshot.unavailable {
            eprintln!("warning: cannot list {kind} in {}: {reason}", cluster.name);
        }
        // Each cluster's specs name positions in its own config, which the merged snapshot's
        // follows the clusters' before it; any gap, and the analysis types the rest.
        if typed.covers() == merged.config.len() && specs.covers() == snapshot.config.len() {
            typed.append(specs);
        }
        merged.extend(snapshot);
    }
    Ok((merged, first_namespace, typed))
}

fn workload(
    kind: WorkloadKind,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    replicas: Option<i32>,
    selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    template: k8s_openapi::api::core::v1::PodTemplateSpec,
) -> Workload {
    let owner = metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.first())
        .map(|o| format!("{} {}", o.kind, o.name));
    Workload {
        kind,
        metadata,
        replicas,
        selector,
        template,
        owner,
    }
}

pub fn from_deployment(d: Deployment) -> Workload {
    let spec = d.spec.unwrap_or_default();
    workload(
        WorkloadKind::Deployment,
        d.metadata,
        spec.replicas,
        Some(spec.selector),
        spec.template,
    )
}

fn from_statefulset(d: StatefulSet) -> Workload {
    let spec = d.spec.unwrap_or_default();
    workload(
        WorkloadKind::StatefulSet,
        d.metadata,
        spec.replicas,
        Some(spec.selector),
        spec.template,
    )
}

fn from_daemonset(d: DaemonSet) -> Workload {
    let spec = d.spec.unwrap_or_default();
    workload(
        WorkloadKind::DaemonSet,
        d.metadata,
        None,
        Some(spec.selector),
        spec.template,
    )
}

fn from_cronjob(d: CronJob) -> Workload {
    let template = d
        .spec
        .and_then(|s| s.job_template.spec)
        .map(|s| s.template)
        .unwrap_or_default();
    workload(WorkloadKind::CronJob, d.metadata, None, None, template)
}
