//! The live source for Istio's config kinds: which of them the cluster serves (discovery),
//! one paginated list per served kind for the scope, and the Secrets Gateways name (Istio
//! Gateways' `credentialName`, Gateway API listeners' `certificateRefs`; got by name, never
//! listed; type, key names and public certificates' facts only).
//!
//! A kind whose CRD is not installed is skipped quietly (there is nothing to analyse); a list
//! RBAC forbids goes into `Snapshot::unavailable`, so the analyzers that need it are skipped and
//! the report says so.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::Discovery;
use serde::Deserialize;

use crate::istio::config::{self, Gateway, TypedSpecs};
use crate::kube::kind::{Kind, KindInfo};
use crate::kube::label_index::PodsByLabel;
use crate::kube::snapshot::{ConfigObject, Located, Object, Origin, SecretKeys, Snapshot};
use crate::source::cluster::{Cluster, ListError, mapped};
use crate::source::live::Found;
use futures::stream::{FuturesUnordered, StreamExt};

/// The kind of the table a served resource is, when it is one of those read.
fn table_kind(group: &str, kind: &str) -> Option<Kind> {
    Kind::of_manifest(group, kind)
}

/// What was read: the objects, and the kinds that could not be listed with the reason.
#[derive(Default)]
pub struct Read {
    pub objects: Vec<Located<ConfigObject>>,
    pub unavailable: BTreeMap<Kind, String>,
    pub unreachable: Option<String>,
    /// The server answered a list with an error (500, malformed body...): the message.
    pub failed: Option<String>,
    /// The command's deadline (`--timeout`) passed while listing this kind.
    pub late: Option<&'static str>,
    /// Discovery answered, and the cluster serves none of the `networking.istio.io` kinds
    /// (Istio's CRDs are not installed).
    pub istio_absent: bool,
    /// `ProxyConfig`s (`networking.istio.io/v1beta1`), kept as JSON for the proxy-image and
    /// schema analyzers.
    pub proxy_configs: Vec<Located<serde_json::Value>>,
    /// The specs of `objects`, typed as each list arrived.
    pub typed: TypedSpecs,
}

/// Which of `groups` the server serves, and their kinds. Aggregated discovery (Kubernetes 1.26
/// and later) answers in one request, where the group-by-group discovery needs one for the group
/// list and one per version of each group, one after the other, while the server is busiest
/// with the other lists. A server without it answers with the plain group list, in which the
/// aggregated form finds no group; so does a proxy that drops the media type, or a cluster
/// without Istio: the group-by-group discovery then says which it is.
async fn served_kinds(cluster: &Cluster, groups: &[&str]) -> kube::Result<Discovery> {
    let discovery = || Discovery::new(cluster.client.clone()).filter(groups);
    match discovery().run_aggregated().await {
        Ok(found) if found.groups().next().is_some() => Ok(found),
        Ok(_) => discovery().run().await,
        // Refused, throttled or unreachable: said (or retried) like any other request.
        Err(kube::Error::Api(status)) if matches!(status.code, 401 | 403 | 429 | 503 | 504) => {
            Err(kube::Error::Api(status))
        }
        Err(e @ (kube::Error::HyperError(_) | kube::Error::Service(_))) => Err(e),
        // Any other answer to the aggregated form (406 from a proxy, a body that does not
        // parse): the group-by-group discovery.
        Err(_) => discovery().run().await,
    }
}

/// Lists every served Istio config kind in every namespace: Istio's config crosses namespaces
/// (exportTo, hosts two VirtualServices share, a Gateway in another namespace), so a `-n`
/// scope limits the findings, not what is read (as istioctl does).
pub async fn list(cluster: &Cluster, multi: bool) -> Read {
    list_with(cluster, multi, None).await
}

/// [`list`] for the analysis: each list's specs typed as soon as it has arrived (`Read::typed`),
/// and `rules_found` told as soon as a list of DestinationRules with objects has (the Nodes are
/// read for them).
pub async fn list_typed_for_analysis(
    cluster: &Cluster,
    multi: bool,
    rules_found: tokio::sync::oneshot::Sender<()>,
) -> Read {
    list_with(
        cluster,
        multi,
        Some(&std::sync::Mutex::new(Some(rules_found))),
    )
    .await
}

/// Who is told that DestinationRules were listed, when the lists are typed as they arrive.
type RulesFound<'a> = Option<&'a std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>>;

async fn list_with(cluster: &Cluster, multi: bool, typing: RulesFound<'_>) -> Read {
    let namespace: Option<&str> = None;
    let mut read = Read::default();
    let groups: &[&str] = config::GROUPS;
    let name: Arc<str> = Arc::from(cluster.name.as_str());
    let origin = Origin {
        cluster: multi.then(|| name.clone()),
        ..Origin::default()
    };
    // Every kind of the table is asked for at once at its newest version, while discovery says
    // which are served: the lists do not wait for discovery's round trip, on a server that is
    // busiest then. A guess discovery confirms is kept; one it does not (a kind not served, or
    // served at another version) is cancelled, or its answer (a 404) thrown away.
    let guesses: Vec<ApiResource> = groups
        .iter()
        .flat_map(|group| Kind::of_group(group))
        .filter_map(guess)
        .collect();
    let mut guessed: Vec<Option<Result<TypedList, ListError>>> =
        guesses.iter().map(|_| None).collect();
    let mut early: FuturesUnordered<_> = guesses
        .iter()
        .enumerate()
        .map(|(i, resource)| {
            let origin = &origin;
            async move { (i, list_typed(cluster, resource, origin, typing).await) }
        })
        .collect();
    // Bounded like every other request: the request timeout, the command's deadline, retries.
    let discovered = {
        let discovery = cluster.request(|| served_kinds(cluster, groups));
        tokio::pin!(discovery);
        loop {
            tokio::select! {
                found = &mut discovery => break found,
                Some((i, listed)) = early.next() => guessed[i] = Some(listed),
            }
        }
    };
    let discovery = match discovered {
        Err(ListError::Denied(reason)) => {
            for group in config::GROUPS {
                for info in Kind::of_group(group) {
                    read.unavailable.insert(info.kind, reason.clone());
                }
            }
            return read;
        }
        Err(ListError::Unreachable(reason)) => {
            read.unreachable = Some(reason);
            return read;
        }
        Err(ListError::Failed(reason)) => {
            read.failed = Some(format!("cannot discover the served Istio kinds: {reason}"));
            return read;
        }
        Err(ListError::Deadline(_)) => {
            read.late = Some("the served Istio kinds");
            return read;
        }
        Ok(d) => d,
    };
    let mut lists = Vec::new();
    read.istio_absent = discovery.get(config::NETWORKING_GROUP).is_none_or(|g| {
        !g.resources_by_stability()
            .iter()
            .any(|(r, _)| config::networking_kinds().any(|k| k == r.kind))
    });
    let mut proxy_config = None;
    if let Some(g) = discovery.get(config::NETWORKING_GROUP) {
        proxy_config = g
            .resources_by_stability()
            .into_iter()
            .find(|(r, _)| r.kind == "ProxyConfig" && r.version == "v1beta1")
            .map(|(r, _)| r);
    }
    for group in config::GROUPS {
        let Some(api_group) = discovery.get(group) else {
            continue; // Istio's CRDs are not installed: nothing to read.
        };
        for (resource, _) in api_group.resources_by_stability() {
            if table_kind(group, &resource.kind)
                .is_some_and(|k| k.versions().contains(&resource.version.as_str()))
            {
                lists.push(resource);
            }
        }
    }
    let proxy_configs = async {
        match &proxy_config {
            Some(resource) => Some(list_kind(cluster, resource, namespace, &origin).await),
            None => None,
        }
    };
    let guess_of = |resource: &ApiResource| {
        guesses.iter().position(|g| {
            (&g.group, &g.version, &g.kind, &g.plural)
                == (
                    &resource.group,
                    &resource.version,
                    &resource.kind,
                    &resource.plural,
                )
        })
    };
    let needed: Vec<usize> = lists.iter().filter_map(&guess_of).collect();
    let (fresh, proxy_configs, ()) = futures::future::join3(
        futures::future::join_all(
            lists
                .iter()
                .filter(|resource| guess_of(resource).is_none())
                .map(|resource| list_typed(cluster, resource, &origin, typing)),
        ),
        proxy_configs,
        // Until every guess discovery confirmed has answered; the others are dropped with
        // `early` (cancelled, so a slow answer to a list thrown away makes no one wait).
        async {
            while needed.iter().any(|&i| guessed[i].is_none()) {
                match early.next().await {
                    Some((i, listed)) => guessed[i] = Some(listed),
                    None => break,
                }
            }
        },
    )
    .await;
    let mut fresh = fresh.into_iter();
    let results: Vec<Result<TypedList, ListError>> = lists
        .iter()
        .map(|resource| {
            let listed = guess_of(resource).and_then(|i| guessed[i].take());
            listed.or_else(|| fresh.next()).unwrap_or_else(|| {
                Err(ListError::Failed(format!(
                    "{} was not listed",
                    resource.plural
                )))
            })
        })
        .collect();
    drop(early);
    for (i, g) in guesses.iter().enumerate() {
        if !needed.contains(&i) {
            // Listed early but not among what discovery says to read: thrown away.
            tracing::debug!(resource = %format!("{}/{}", g.api_version, g.plural), "guessed list not served");
        }
    }
    match proxy_configs {
        None => {}
        Some(Ok(items)) => {
            read.proxy_configs = items
                .into_iter()
                .map(|l| Located {
                    object: proxy_config_json(l.object),
                    origin: l.origin,
                })
                .collect()
        }
        Some(Err(ListError::Denied(reason))) => {
            read.unavailable.insert(Kind::ProxyConfigs, reason);
        }
        Some(Err(ListError::Unreachable(reason))) => {
            read.unreachable.get_or_insert(reason);
        }
        Some(Err(ListError::Failed(reason))) => {
            read.failed
                .get_or_insert(format!("cannot list proxyconfigs: {reason}"));
        }
        Some(Err(ListError::Deadline(_))) => {
            read.late.get_or_insert("Istio configuration");
        }
    }
    // Sized once: thousands of objects, copied again at each growth.
    read.objects.reserve(
        results
            .iter()
            .map(|r| r.as_ref().map_or(0, |(items, _)| items.len()))
            .sum(),
    );
    for (resource, result) in lists.iter().zip(results) {
        // Every resource listed is a kind of the table (the filter above).
        let kind = table_kind(&resource.group, &resource.kind);
        match result {
            // The specs name positions in the objects read so far (the lists' in this order).
            Ok((items, specs)) => {
                read.typed.append(specs);
                read.objects.extend(items);
            }
            Err(ListError::Denied(reason)) => {
                if let Some(kind) = kind {
                    read.unavailable.insert(kind, reason);
                }
            }
            Err(ListError::Unreachable(reason)) => {
                read.unreachable.get_or_insert(reason);
            }
            Err(ListError::Failed(reason)) => {
                read.failed.get_or_insert(format!(
                    "cannot list {}: {reason}",
                    kind.map_or(resource.plural.as_str(), |k| k.list_name())
                ));
            }
            Err(ListError::Deadline(_)) => {
                read.late.get_or_insert("Istio configuration");
            }
        }
    }
    read
}

/// The kinds Istio serves at an older version than their group's newest (the guess of
/// [`guess`]; tested against the CRD schemas compiled in).
const OLDER_VERSIONS: &[(&str, &str)] = &[("EnvoyFilter", "v1alpha3")];

/// A kind of the table at the newest version its group is read at (`v1` for most of Istio's),
/// as the resource the API server would serve it as; `None` for a kind of no CRD group.
fn guess(info: &KindInfo) -> Option<ApiResource> {
    let (group, versions, kind) = info.crd?;
    let version = OLDER_VERSIONS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| v)
        .or(versions.first())?;
    // The list name is the plural, or `PLURAL.GROUP` where two groups share a kind's name.
    let plural = info.list.split('.').next()?;
    Some(ApiResource {
        group: group.to_string(),
        version: version.to_string(),
        api_version: format!("{group}/{version}"),
        kind: kind.to_string(),
        plural: plural.to_string(),
    })
}

/// A listed ProxyConfig as the JSON document the files give (`metadata`, `spec`).
fn proxy_config_json(o: ConfigObject) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": o.api_version,
        "kind": o.kind,
        "metadata": serde_json::to_value(&o.metadata).unwrap_or_default(),
        "spec": o.spec,
    })
}

/// A config kind's objects, and their specs typed.
type TypedList = (Vec<Located<ConfigObject>>, TypedSpecs);

/// Lists a config kind in every namespace; with `typing`, types its specs as soon as it is
/// listed, on a thread of their own: the other lists (the Pods, most of the time) still arrive
/// meanwhile, and the analysis waits only for the list that came last.
async fn list_typed(
    cluster: &Cluster,
    resource: &ApiResource,
    origin: &Origin,
    typing: RulesFound<'_>,
) -> Result<TypedList, ListError> {
    let items = list_kind(cluster, resource, None, origin).await?;
    let Some(rules_found) = typing.filter(|_| !items.is_empty()) else {
        return Ok((items, TypedSpecs::default()));
    };
    if resource.group == config::NETWORKING_GROUP
        && resource.kind == "DestinationRule"
        && let Some(found) = rules_found.lock().ok().and_then(|mut f| f.take())
    {
        // Nobody waiting is no error.
        let _ = found.send(());
    }
    let kind = resource.kind.clone();
    let typing = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let specs = TypedSpecs::of(&items);
        tracing::debug!(
            %kind,
            objects = items.len(),
            us = started.elapsed().as_micros() as u64,
            "typed a config list"
        );
        (items, specs)
    });
    match typing.await {
        Ok(typed) => Ok(typed),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(ListError::Failed(format!(
            "{} were listed but not typed: {e}",
            resource.plural
        ))),
    }
}

async fn list_kind(
    cluster: &Cluster,
    resource: &ApiResource,
    namespace: Option<&str>,
    origin: &Origin,
) -> Result<Vec<Located<ConfigObject>>, ListError> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(cluster.client.clone(), ns, resource),
        None => Api::all_with(cluster.client.clone(), resource),
    };
    cluster
        .paginate(
            &ListParams::default(),
            |params, early| cluster.page(&api, params, early),
            mapped(|o: ListedConfig| {
                Some(Located {
                    object: ConfigObject {
                        api_version: resource.api_version.clone(),
                        kind: resource.kind.clone(),
                        spec: o.spec,
                        status: o.status,
                        metadata: o.metadata,
                    },
                    origin: origin.clone(),
                })
            }),
        )
        .await
}

/// A listed custom resource, decoded as far as [`ConfigObject`] keeps it. (kube's
/// `DynamicObject` buffers every object whole to split it into its metadata and the rest.)
#[derive(Clone, serde::Deserialize)]
struct ListedConfig {
    #[serde(default)]
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    #[serde(default)]
    spec: serde_json::Value,
    #[serde(default)]
    status: serde_json::Value,
}

/// Gets the Secrets the snapshot's Gateways name, in the namespace of the workload each
/// Gateway selects (as Istio resolves `credentialName`), else the Gateway's own, and for a
/// server that verifies clients the Secret `<credentialName>-cacert` istiod reads its CA
/// certificate from first (absent is normal: istiod then takes the credential's own). Only the
/// type, the key names and the public certificates' facts are kept. Also the ConfigMaps Gateway
/// API Gateways name as client CA.
pub async fn gateway_secrets(cluster: &Cluster, snapshot: &Snapshot) -> Found {
    let mut wanted: Vec<(String, String)> = Vec::new();
    // Indexed only when a Gateway names a credential: most clusters have none.
    let mut pods_by_label: Option<PodsByLabel> = None;
    for resource in snapshot
        .config
        .iter()
        .filter(|c| c.object.kind == "Gateway" && !config::gateway_api::is_gateway_api(&c.object))
    {
        let Ok(gw) = Gateway::deserialize(&resource.object.spec) else {
            continue;
        };
        if !gw.servers.iter().any(|s| {
            s.tls
                .as_ref()
                .is_some_and(|t| !t.credential_name.is_empty())
        }) {
            continue;
        }
        let selector = gw.selector.clone().unwrap_or_default();
        let ns = pods_by_label
            .get_or_insert_with(|| PodsByLabel::new(snapshot))
            .first(&selector)
            .and_then(|p| p.object.namespace())
            .or(resource.object.namespace())
            .unwrap_or("")
            .to_string();
        for server in &gw.servers {
            let Some(tls) = &server.tls else { continue };
            if tls.credential_name.is_empty() {
                continue;
            }
            let mut names = vec![tls.credential_name.clone()];
            if crate::istio::credentials::verifies_clients(&tls.mode) {
                // Where istiod looks for the CA certificate first.
                names.push(crate::istio::credentials::ca_secret_name(
                    &tls.credential_name,
                ));
            }
            for credential in names {
                let (ns, name) = match credential.split_once('/') {
                    Some((n, s)) => (n.to_string(), s.to_string()),
                    None => (ns.clone(), credential),
                };
                if !wanted.contains(&(ns.clone(), name.clone())) {
                    wanted.push((ns, name));
                }
            }
        }
    }
    let (api_secrets, api_maps) = gateway_api_secrets(snapshot);
    for wanted_here in api_secrets {
        if !wanted.contains(&wanted_here) {
            wanted.push(wanted_here);
        }
    }
    // Got all at once (a cluster with fifty TLS Gateways waits for one round trip, not fifty);
    // kept in the order they were wanted.
    let (mut found, (secrets, failed)) = tokio::join!(
        client_ca_config_maps(cluster, snapshot, api_maps),
        super::get_named::<Secret>(cluster, &wanted)
    );
    for secret in secrets {
        // Reduced at once: the public certificates' facts and the key names; the private
        // key's value is dropped here, never printed, logged or kept.
        let data = secret.data.unwrap_or_default();
        found.secrets.push(Located::new(SecretKeys::reduce(
            secret.metadata,
            secret.type_.unwrap_or_default(),
            data.into_iter().map(|(k, v)| (k, v.0)),
            crate::istio::credentials::PUBLIC_KEYS,
        )));
    }
    found
        .unavailable
        .extend(failed.into_iter().map(|reason| (Kind::Secrets, reason)));
    found
}

/// The Secrets the listeners of Gateway API Gateways of Istio's classes name in
/// `tls.certificateRefs` (core Secrets, in the reference's namespace, else the Gateway's), and
/// for a `MUTUAL` or `OPTIONAL_MUTUAL` listener `<first reference>-cacert`, which istiod reads
/// the CA certificate from first. A cross-namespace reference is got too: Istio looks the
/// Secret up before it checks the ReferenceGrant.
/// Objects to get, as (namespace, name).
type Names = Vec<(String, String)>;

/// Also the ConfigMaps their `spec.tls.frontend` names as client CA (second list).
fn gateway_api_secrets(snapshot: &Snapshot) -> (Names, Names) {
    use config::gateway_api::{GatewayClass, KubernetesGateway, is_gateway_api};
    let of_kind = |kind: &'static str| {
        snapshot
            .config
            .iter()
            .filter(move |c| c.object.kind == kind && is_gateway_api(&c.object))
    };
    let classes: Vec<(&str, GatewayClass)> = of_kind("GatewayClass")
        .filter_map(|c| {
            Some((
                c.object.name(),
                serde_json::from_value(c.object.spec.clone()).ok()?,
            ))
        })
        .collect();
    let mut wanted = Vec::new();
    let mut maps = Vec::new();
    for resource in of_kind("Gateway") {
        let Ok(gw) = serde_json::from_value::<KubernetesGateway>(resource.object.spec.clone())
        else {
            continue;
        };
        if !gw.is_istios(classes.iter().map(|(n, c)| (*n, c))) {
            continue;
        }
        let gw_ns = resource.object.namespace().unwrap_or("");
        for listener in &gw.listeners {
            let Some(tls) = listener.tls_config() else {
                continue;
            };
            // More than two references: Istio refuses the listener before it reads any.
            if !tls.reads_certificate_refs() || tls.certificate_refs.len() > 2 {
                continue;
            }
            for (j, r) in tls.certificate_refs.iter().enumerate() {
                if !r.is_secret() {
                    continue;
                }
                let ns = r.namespace_or(gw_ns).to_string();
                wanted.push((ns.clone(), r.name.clone()));
                let verifies = tls
                    .terminate_mode()
                    .is_some_and(crate::istio::credentials::verifies_clients);
                if j == 0 && verifies && !gw.frontend_validation(listener.port) {
                    wanted.push((ns, crate::istio::credentials::ca_secret_name(&r.name)));
                }
            }
            // The CA certificate of `spec.tls.frontend`: a Secret and the `-cacert` one istiod
            // reads first, or a ConfigMap.
            if let Some(v) = gw.frontend_ca(listener.port)
                && let Some(r) = v.ca_certificate_refs.first()
            {
                let ns = r.namespace_or(gw_ns).to_string();
                match r.core_kind() {
                    Some("Secret") => {
                        let cacert = crate::istio::credentials::ca_secret_name(&r.name);
                        wanted.push((ns.clone(), r.name.clone()));
                        wanted.push((ns, cacert));
                    }
                    Some(_) => maps.push((ns, r.name.clone())),
                    None => {}
                }
            }
        }
    }
    (wanted, maps)
}

/// Gets the ConfigMaps Gateway API Gateways name as client CA (`spec.tls.frontend`), by name,
/// all at once: public CA certificates, read whole (as istiod reads their `data`). One already
/// read (istio-system's `istio*`) is not got again.
async fn client_ca_config_maps(cluster: &Cluster, snapshot: &Snapshot, wanted: Names) -> Found {
    use crate::kube::snapshot::Object as _;
    let mut names: Names = Vec::new();
    for (ns, name) in wanted {
        let have = snapshot
            .config_maps
            .iter()
            .any(|c| c.object.namespace().unwrap_or("") == ns && c.object.name() == name);
        if !have && !names.contains(&(ns.clone(), name.clone())) {
            names.push((ns, name));
        }
    }
    let (maps, failed) =
        super::get_named::<k8s_openapi::api::core::v1::ConfigMap>(cluster, &names).await;
    Found {
        config_maps: maps.into_iter().map(Located::new).collect(),
        unavailable: failed
            .into_iter()
            .map(|reason| (Kind::ConfigMaps, reason))
            .collect(),
        ..Found::default()
    }
}

/// Lists the Nodes (their labels give pods their locality, which DestinationRules read).
pub async fn nodes(cluster: &Cluster) -> Result<Vec<Located<Node>>, ListError> {
    cluster.list_cluster::<Node>().await.map(|items| {
        items
            .into_iter()
            .map(|mut n| {
                // Only the labels matter; drop the rest of the Node.
                n.status = None;
                Located::new(n)
            })
            .collect()
    })
}

/// Live with `-n`: the Pods and Services of the other namespaces (and the Namespaces, for the
/// AuthorizationPolicies), when there is Istio config to resolve against them.
pub async fn beyond_scope(
    cluster: &Cluster,
    namespace: Option<&str>,
    config: &[Located<ConfigObject>],
) -> BeyondScope {
    let mut found = BeyondScope::default();
    let Some(scope) = namespace else {
        return found;
    };
    if config.is_empty() {
        return found;
    }
    let wants_namespaces = config
        .iter()
        .any(|c| c.object.kind == "AuthorizationPolicy");
    let (pods, services, namespaces) = tokio::join!(
        cluster.list::<k8s_openapi::api::core::v1::Pod>(None),
        cluster.list::<k8s_openapi::api::core::v1::Service>(None),
        async {
            if wants_namespaces {
                Some(
                    cluster
                        .list_cluster::<k8s_openapi::api::core::v1::Namespace>()
                        .await,
                )
            } else {
                None
            }
        }
    );
    match namespaces {
        Some(Ok(items)) => {
            found.namespaces = items
                .into_iter()
                .filter(|n| {
                    let name = n.name();
                    name != scope && !crate::kube::snapshot::SYSTEM_NAMESPACES.contains(&name)
                })
                .map(Located::new)
                .collect()
        }
        Some(Err(e)) => {
            let reason = e.reason().to_string();
            found
                .unavailable
                .push((Kind::NamespacesBeyondScope, reason));
        }
        None => {}
    }
    match pods {
        Ok(items) => {
            found.pods = items
                .into_iter()
                .filter(|p| p.namespace() != Some(scope))
                .map(Located::new)
                .collect()
        }
        Err(e) => {
            let reason = e.reason().to_string();
            found.unavailable.push((Kind::PodsBeyondScope, reason));
        }
    }
    match services {
        Ok(items) => {
            found.services = items
                .into_iter()
                .filter(|s| s.namespace() != Some(scope))
                .map(Located::new)
                .collect()
        }
        Err(e) => {
            let reason = e.reason().to_string();
            found.unavailable.push((Kind::ServicesBeyondScope, reason));
        }
    }
    found
}

/// What [`beyond_scope`] read.
#[derive(Default)]
pub struct BeyondScope {
    pods: Vec<Located<k8s_openapi::api::core::v1::Pod>>,
    services: Vec<Located<k8s_openapi::api::core::v1::Service>>,
    namespaces: Vec<Located<k8s_openapi::api::core::v1::Namespace>>,
    unavailable: Vec<(Kind, String)>,
}

impl BeyondScope {
    pub fn put_into(self, snapshot: &mut Snapshot) {
        snapshot.pods_beyond_scope = self.pods;
        snapshot.services_beyond_scope = self.services;
        snapshot.namespaces_beyond_scope = self.namespaces;
        snapshot.unavailable.extend(self.unavailable);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind is guessed at a version the releases whose CRDs are compiled in serve, so
    /// that on a current cluster every list starts before discovery answers.
    #[test]
    fn every_kind_is_guessed_at_a_version_its_crds_serve() {
        let mut guessed = 0;
        for group in config::GROUPS {
            for info in Kind::of_group(group) {
                let g = guess(info).expect("a kind of a CRD group");
                assert!(
                    crate::kube::openapi::schema_of(&g.api_version, &g.kind).is_some(),
                    "{}/{} is served by none of the compiled-in CRDs",
                    g.api_version,
                    g.kind
                );
                assert!(!g.plural.contains('.'), "{}", g.plural);
                guessed += 1;
            }
        }
        assert!(guessed >= 13, "{guessed} kinds guessed");
        let vs = guess(Kind::VirtualServices.info()).unwrap();
        assert_eq!(
            (vs.api_version.as_str(), vs.plural.as_str()),
            ("networking.istio.io/v1", "virtualservices")
        );
        let route = guess(Kind::HttpRoutes.info()).unwrap();
        assert_eq!(
            (route.api_version.as_str(), route.plural.as_str()),
            ("gateway.networking.k8s.io/v1", "httproutes")
        );
        let filter = guess(Kind::EnvoyFilters.info()).unwrap();
        assert_eq!(filter.api_version, "networking.istio.io/v1alpha3");
    }
}
