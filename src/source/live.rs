//! The live source: reads a cluster with kube-rs into a [`Snapshot`].
//!
//! Each kind is listed once for the whole scope (one namespace, or all), with pagination.
//! A list that RBAC forbids is recorded in `Snapshot::unavailable`, so the analyzers that need it
//! are skipped and the rest still run. An unreachable server fails fast, within the request timeout.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::kube::kind::Kind;
use crate::kube::snapshot::{Located, Origin, SYSTEM_NAMESPACES, Snapshot, Workload, WorkloadKind};

const PAGE_SIZE: u32 = 500;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A list is abandoned after this many pages (10 million objects of a kind): a server that
/// never stops paginating cannot keep the command reading.
pub const MAX_PAGES: usize = 20_000;
/// How many times a request the server throttles (429) or calls unavailable (503, 504) is tried.
pub const TRIES: u32 = 3;

/// A connected cluster.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
    /// The kubeconfig context (or "in-cluster").
    pub name: String,
    pub server: String,
    /// The context's namespace (or "default").
    pub default_namespace: String,
    pub timeout: Duration,
    /// The command's overall deadline (`--timeout`), which every request also stops at.
    pub deadline: Option<std::time::Instant>,
    /// `--timeout` as given, for messages.
    pub overall: Duration,
}

impl Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish()
    }
}

/// How to reach the cluster(s): kubectl's connection flags as plain values.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    pub kubeconfig: Option<PathBuf>,
    /// Every `--context` (analyze and version read several clusters; the others take one).
    pub context: Vec<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    /// `-n`, when given.
    pub namespace: Option<String>,
    pub as_user: Option<String>,
    pub as_group: Vec<String>,
    /// Zero means the default.
    pub request_timeout: Duration,
    /// The whole command's deadline (`--timeout`); zero: none.
    pub timeout: Duration,
    /// When the whole command must be done (`--timeout` after its start); `None` without one.
    pub deadline: Option<std::time::Instant>,
}

/// The kubeconfig files kubectl would read: `--kubeconfig` alone; else every non-empty entry
/// of $KUBECONFIG (`:`-separated); else ~/.kube/config.
pub fn kubeconfig_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    match std::env::var_os("KUBECONFIG") {
        Some(value) if !value.is_empty() => std::env::split_paths(&value)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        // $HOME only: no passwd look-up, which a static binary cannot do without glibc's NSS.
        _ => std::env::var_os("HOME")
            .map(|home| vec![PathBuf::from(home).join(".kube").join("config")])
            .unwrap_or_default(),
    }
}

/// Loads the kubeconfig as kubectl does: a `--kubeconfig` that cannot be read is an error; of
/// $KUBECONFIG's files the missing ones are skipped and the rest merged in order (the first file
/// to set a value or a map key wins). `Ok(None)`: no file exists.
pub fn load_kubeconfig(explicit: Option<&Path>) -> Result<Option<Kubeconfig>> {
    let paths = kubeconfig_paths(explicit);
    let mut merged: Option<Kubeconfig> = None;
    for path in &paths {
        if explicit.is_none() && !path.exists() {
            tracing::debug!(path = %path.display(), "kubeconfig file does not exist, skipped");
            continue;
        }
        let config = Kubeconfig::read_from(path).map_err(|source| Error::KubeconfigFile {
            doing: "read",
            path: path.to_path_buf(),
            source,
        })?;
        merged = Some(match merged {
            None => config,
            Some(m) => m.merge(config).map_err(|source| Error::KubeconfigFile {
                doing: "merge",
                path: path.to_path_buf(),
                source,
            })?,
        });
    }
    Ok(merged)
}

/// The context names of the kubeconfig (for completion); empty when it cannot be read.
pub fn kubeconfig_contexts(explicit: Option<&Path>) -> Vec<String> {
    match load_kubeconfig(explicit) {
        Ok(Some(k)) => k.contexts.into_iter().map(|c| c.name).collect(),
        _ => Vec::new(),
    }
}

/// Builds a client from the kubeconfig (or the in-cluster service account) and kubectl's flags.
pub async fn connect(global: &Connection, context: Option<&str>) -> Result<Cluster> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        cluster: global.cluster.clone(),
        user: global.user.clone(),
    };
    let loaded = load_kubeconfig(global.kubeconfig.as_deref())?;
    let config = match loaded {
        Some(kubeconfig) => {
            let names: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| kubeconfig_error(&e.to_string(), context, &names))?
        }
        None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() && context.is_none() => {
            Config::incluster().map_err(|e| {
                Error::Kubeconfig(format!(
                    "no kubeconfig file exists and the in-cluster configuration failed: {e}"
                ))
            })?
        }
        None => {
            let paths: Vec<String> = kubeconfig_paths(None)
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            return Err(Error::Kubeconfig(format!(
                "no kubeconfig: none of {} exists. Set KUBECONFIG or pass --kubeconfig",
                if paths.is_empty() {
                    "$KUBECONFIG, ~/.kube/config".to_string()
                } else {
                    paths.join(", ")
                }
            )));
        }
    };
    let mut config = config;
    let server_display = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let server_host = config.cluster_url.host().map(str::to_string);
    if let Some(host) = server_host
        && host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_err()
    {
        // Resolved here (/etc/hosts, then DNS from /etc/resolv.conf), not by getaddrinfo: the
        // static release binary has no glibc NSS. TLS still verifies the host name.
        let ip = crate::source::dns::resolve(&host)
            .await
            .map_err(|message| Error::Unreachable {
                server: config
                    .cluster_url
                    .to_string()
                    .trim_end_matches('/')
                    .to_string(),
                message,
            })?;
        if config.tls_server_name.is_none() {
            config.tls_server_name = Some(host.clone());
        }
        config.cluster_url = crate::source::dns::with_host(&config.cluster_url, ip);
    }
    let timeout = if global.request_timeout.is_zero() {
        DEFAULT_TIMEOUT
    } else {
        global.request_timeout
    };
    // kube's own timeouts are a backstop a second later: each request is bounded by
    // `Cluster::request`, whose message names the flag.
    let backstop = timeout + Duration::from_secs(1);
    config.connect_timeout = Some(backstop);
    config.read_timeout = Some(backstop);
    config.write_timeout = Some(backstop);
    // Throttling and unavailability are retried here, a few times and within the deadlines, so
    // the message can say so (kube's own policy retries 15 times, with waits up to 1000s).
    config.default_retry = false;
    // Lets audit logs (and our read-only test) tell mesh-doctor's requests apart.
    if let Ok(agent) =
        http::HeaderValue::from_str(&format!("mesh-doctor/{}", env!("CARGO_PKG_VERSION")))
    {
        config.headers.push((http::header::USER_AGENT, agent));
    }
    if let Some(user) = &global.as_user {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !global.as_group.is_empty() {
        config.auth_info.impersonate_groups = Some(global.as_group.clone());
    }
    let server = server_display;
    let default_namespace = config.default_namespace.clone();
    let name = context
        .map(str::to_string)
        .or_else(|| current_context(global))
        .unwrap_or_else(|| "in-cluster".to_string());
    let client = super::retry_after::build_client(config).map_err(|e| Error::Unreachable {
        server: server.clone(),
        message: e.to_string(),
    })?;
    Ok(Cluster {
        client,
        name,
        server,
        default_namespace,
        timeout,
        deadline: global.deadline,
        overall: global.timeout,
    })
}

/// The namespace a command works in when it is not `-A`: `-n`, else the namespace of the kubeconfig
/// context (of `cluster` when connected, which also covers the in-cluster service account's
/// namespace; else read from the kubeconfig file), else `default`. Every command and every use
/// inside a command (the live scope, the namespace given to file objects without one, the
/// namespace filter, the "no issues" line) calls this one function.
pub fn scope_namespace(global: &Connection, cluster: Option<&Cluster>) -> String {
    if let Some(namespace) = global.namespace.as_deref().filter(|n| !n.is_empty()) {
        return namespace.to_string();
    }
    if let Some(cluster) = cluster {
        return cluster.default_namespace.clone();
    }
    context_namespace(global).unwrap_or_else(|| "default".to_string())
}

/// The namespace of the kubeconfig context (`--context`, else the current one), without connecting.
fn context_namespace(global: &Connection) -> Option<String> {
    let kubeconfig = load_kubeconfig(global.kubeconfig.as_deref())
        .ok()
        .flatten()?;
    let name = global
        .context
        .first()
        .cloned()
        .or_else(|| kubeconfig.current_context.clone())?;
    kubeconfig
        .contexts
        .into_iter()
        .find(|c| c.name == name)?
        .context?
        .namespace
        .filter(|n| !n.is_empty())
}

fn current_context(global: &Connection) -> Option<String> {
    load_kubeconfig(global.kubeconfig.as_deref())
        .ok()
        .flatten()?
        .current_context
}

/// A kubeconfig that does not give a usable configuration: what is wrong, and what to do about
/// it that fits every command (the contexts that exist, the flags that choose them).
fn kubeconfig_error(message: &str, context: Option<&str>, names: &[String]) -> Error {
    let listed = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    match context {
        Some(wanted) if !names.iter().any(|n| n == wanted) => Error::ContextNotFound {
            wanted: wanted.to_string(),
            contexts: names.to_vec(),
        },
        _ if names.is_empty() => Error::Kubeconfig(format!(
            "no usable kubeconfig: {message}; it has no context: pass --kubeconfig or set KUBECONFIG"
        )),
        _ => Error::Kubeconfig(format!(
            "no usable kubeconfig: {message}; choose a context with --context NAME (its contexts: {listed}), or pass --kubeconfig"
        )),
    }
}

/// Why a list failed.
#[derive(Debug)]
pub enum ListError {
    /// RBAC said no (403), or the resource does not exist on this server (404).
    Denied(String),
    /// The server could not be reached or did not answer in time.
    Unreachable(String),
    /// The server answered, but not with the list: an HTTP error status (500, 429 after the
    /// retries), a malformed or cut-off body, a pagination that never ends. The message says which.
    Failed(String),
    /// The command's overall deadline (`--timeout`) passed while reading.
    Deadline(String),
}

impl ListError {
    pub fn reason(&self) -> &str {
        match self {
            ListError::Denied(r)
            | ListError::Unreachable(r)
            | ListError::Failed(r)
            | ListError::Deadline(r) => r,
        }
    }
}

impl Cluster {
    /// Lists every object of a kind in a scope (`None` = all namespaces or cluster-scoped),
    /// following `continue` tokens.
    pub async fn list<K>(&self, namespace: Option<&str>) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let api: Api<K> = match namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        };
        self.paginate(api).await
    }

    /// Lists what `params` selects (labels, fields) through `api`, following `continue` tokens.
    pub async fn list_selected<K>(
        &self,
        api: Api<K>,
        params: &ListParams,
    ) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        self.paginate_with(api, params.clone()).await
    }

    /// Lists every object of a cluster-scoped kind.
    pub async fn list_cluster<K>(&self) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
        K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>,
    {
        self.paginate(Api::all(self.client.clone())).await
    }

    async fn paginate<K>(&self, api: Api<K>) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        self.paginate_with(api, ListParams::default()).await
    }

    async fn paginate_with<K>(&self, api: Api<K>, base: ListParams) -> Result<Vec<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut params = base.clone().limit(PAGE_SIZE);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let page = self.request(|| api.list(&params)).await?;
            items.extend(page.items);
            match page.metadata.continue_ {
                Some(t) if !t.is_empty() => {
                    if !seen.insert(t.clone()) {
                        return Err(ListError::Failed(format!(
                            "the server's pagination does not end: it sent the continue token {:?} twice (after {} objects)",
                            shorten(&t),
                            items.len()
                        )));
                    }
                    token = Some(t);
                }
                _ => return Ok(items),
            }
        }
        Err(ListError::Failed(format!(
            "the server's pagination does not end: still more after {MAX_PAGES} pages ({} objects)",
            items.len()
        )))
    }

    /// One API request, bounded by the request timeout and the overall deadline, tried again
    /// (up to [`TRIES`] times) when the server throttles it (429) or is unavailable (503, 504).
    pub async fn request<T, F, Fut>(&self, mut call: F) -> Result<T, ListError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = kube::Result<T>>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            let (limit, by_deadline) = self.time_left();
            let result = match tokio::time::timeout(limit, call()).await {
                Ok(result) => result,
                Err(_) if by_deadline => return Err(self.deadline_passed()),
                Err(_) => {
                    return Err(ListError::Unreachable(format!(
                        "no answer within {} (--request-timeout)",
                        crate::formats::duration::show_duration(self.timeout)
                    )));
                }
            };
            let error = match result {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            let retryable =
                matches!(&error, kube::Error::Api(s) if matches!(s.code, 429 | 503 | 504));
            if !retryable || tries >= TRIES {
                let mut classified = classify(&error);
                if retryable && let ListError::Failed(text) = &mut classified {
                    text.push_str(&format!(", gave up after {tries} tries"));
                }
                return Err(classified);
            }
            // The server's hint (Status details.retryAfterSeconds), else 1s, 2s; never past a deadline.
            let hint = match &error {
                kube::Error::Api(s) => s
                    .details
                    .as_ref()
                    .map(|d| d.retry_after_seconds)
                    .filter(|&s| s > 0),
                _ => None,
            };
            let wait = Duration::from_secs(hint.map_or(1 << (tries - 1), u64::from).min(10));
            let (left, by_deadline) = self.time_left();
            if wait >= left && by_deadline {
                return Err(self.deadline_passed());
            }
            tokio::time::sleep(wait.min(left)).await;
        }
    }

    /// The time a request may take: the request timeout, or less when the overall deadline is
    /// nearer (then `true`).
    fn time_left(&self) -> (Duration, bool) {
        match self.deadline {
            Some(at) => {
                let left = at.saturating_duration_since(std::time::Instant::now());
                if left < self.timeout {
                    (left, true)
                } else {
                    (self.timeout, false)
                }
            }
            None => (self.timeout, false),
        }
    }

    fn deadline_passed(&self) -> ListError {
        ListError::Deadline(format!(
            "the reads did not finish within the command's deadline of {} (--timeout)",
            crate::formats::duration::show_duration(self.overall)
        ))
    }

    /// The error that ends the command for a failed request: `verb` (`get`, `list`) on
    /// `resource` (`pods`, `pod web-1`), in `namespace` when the request was namespaced.
    pub fn error(
        &self,
        e: ListError,
        verb: &'static str,
        resource: &str,
        namespace: Option<&str>,
    ) -> Error {
        let doing = match verb {
            "get" => "reading",
            "list" => "listing",
            other => other,
        };
        let what = match namespace {
            Some(ns) => format!("{doing} {resource} in {ns}"),
            None => format!("{doing} {resource}"),
        };
        match e {
            ListError::Denied(reason) => Error::AccessDenied(Box::new(crate::error::Denied {
                verb,
                resource: resource.to_string(),
                namespace: namespace.map(str::to_string),
                cluster: format!("{} ({})", self.name, self.server),
                reason,
                hint: None,
            })),
            ListError::Unreachable(reason) => self.unreachable(format!("{what}: {reason}")),
            ListError::Failed(reason) => self.failed(format!("{what}: {reason}")),
            ListError::Deadline(_) => Error::Deadline {
                after: crate::formats::duration::show_duration(self.overall),
                doing: format!("still {what} from {}", self.server),
            },
        }
    }

    /// Gets one object, `Ok(None)` when it does not exist.
    pub async fn get_opt<K>(&self, api: Api<K>, name: &str) -> Result<Option<K>, ListError>
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        self.request(|| api.get_opt(name)).await
    }

    /// The server answered, but not with what was asked (see [`ListError::Failed`]).
    pub fn failed(&self, message: String) -> Error {
        Error::Cluster(format!(
            "the Kubernetes API server {} failed a request: {message}",
            self.server
        ))
    }

    pub fn unreachable(&self, message: String) -> Error {
        Error::Unreachable {
            server: self.server.clone(),
            message,
        }
    }
}

use super::live_errors::shorten;
pub use super::live_errors::{classify, flatten};

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

fn not_system<T: crate::kube::snapshot::Object>(items: Vec<T>) -> Vec<T> {
    items
        .into_iter()
        .filter(|o| !SYSTEM_NAMESPACES.contains(&o.namespace().unwrap_or("")))
        .collect()
}

/// Everything `analyze` needs from one cluster, for one namespace or all of them.
pub async fn snapshot(cluster: &Cluster, namespace: Option<&str>, multi: bool) -> Result<Snapshot> {
    let c = cluster;
    let ns = namespace;
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
        c.list::<Pod>(ns),
        c.list::<Service>(ns),
        c.list::<Deployment>(ns),
        c.list::<StatefulSet>(ns),
        c.list::<DaemonSet>(ns),
        c.list::<CronJob>(ns),
        c.list_cluster::<MutatingWebhookConfiguration>(),
        c.list::<ConfigMap>(Some(ISTIO_NAMESPACE)),
        c.list::<Deployment>(Some(ISTIO_NAMESPACE)),
        c.list::<Service>(Some(ISTIO_NAMESPACE)),
        c.list::<PodDisruptionBudget>(Some(ISTIO_NAMESPACE)),
        c.list::<EndpointSlice>(Some(ISTIO_NAMESPACE)),
        c.list::<Event>(ns),
        c.list::<NetworkPolicy>(ns),
    );

    let mut snapshot = Snapshot::default();
    let mut read_any = false;
    let mut unreachable: Option<String> = None;
    let mut failed: Option<String> = None;
    let mut late: Option<&str> = None;
    let name: Arc<str> = Arc::from(cluster.name.as_str());
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
    take!(pods, Kind::Pods, |items| snapshot.pods =
        located(not_system(items), &name, multi));
    take!(services, Kind::Services, |items| snapshot.services =
        located(not_system(items), &name, multi));
    let mut workloads = Vec::new();
    take!(deployments, Kind::Deployments, |items| workloads
        .extend(items.into_iter().map(from_deployment)));
    take!(statefulsets, Kind::StatefulSets, |items| workloads
        .extend(items.into_iter().map(from_statefulset)));
    take!(daemonsets, Kind::DaemonSets, |items| workloads
        .extend(items.into_iter().map(from_daemonset)));
    take!(cronjobs, Kind::CronJobs, |items| workloads
        .extend(items.into_iter().map(from_cronjob)));
    // istiod's Deployments are needed even when the scope is another namespace.
    take!(istio_deployments, Kind::Deployments, |items| {
        if ns.is_some_and(|n| n != ISTIO_NAMESPACE) {
            workloads.extend(items.into_iter().map(from_deployment));
        }
    });
    snapshot.workloads = located(not_system(workloads), &name, multi);
    // And the Services the injection webhooks call (control-plane checks).
    take!(istio_services, Kind::Services, |items| {
        if ns.is_some_and(|n| n != ISTIO_NAMESPACE) {
            snapshot.services.extend(located(items, &name, multi));
        }
    });
    take!(webhooks, Kind::MutatingWebhookConfigurations, |items| {
        snapshot.webhooks = located(items, &name, multi)
    });
    take!(config_maps, Kind::ConfigMaps, |items| {
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
        snapshot.config_maps = located(items, &name, multi);
    });
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
    // A core list that failed ends the read here: the Istio reads after it would only wait
    // on the same server (and past the deadline), and the answer is an error either way.
    if late.is_none() && unreachable.is_none() && failed.is_none() {
        let istio = super::live_config::list(c, multi).await;
        snapshot.config = istio.objects;
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
        super::live_config::beyond_scope(c, ns, &mut snapshot).await;
        super::live_config::gateway_secrets(c, &mut snapshot).await;
        super::live_config::nodes(c, &mut snapshot).await;
        super::live_mesh::remote_secrets(c, &mut snapshot).await;
        super::live_admission::read(c, multi, &mut snapshot).await;
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
    Ok(snapshot)
}

/// The snapshot `analyze` reads: every `--context` (or the current one), in the chosen scope,
/// and the namespace of that scope in the first cluster (`None` with `-A`).
pub async fn snapshot_for_analyze(
    global: &Connection,
    all_namespaces: bool,
) -> Result<(Snapshot, Option<String>)> {
    let contexts: Vec<Option<&str>> = if global.context.is_empty() {
        vec![None]
    } else {
        global.context.iter().map(|c| Some(c.as_str())).collect()
    };
    let multi = contexts.len() > 1;
    let mut merged = Snapshot::default();
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
        let snapshot = snapshot(&cluster, namespace.as_deref(), multi).await?;
        for (kind, reason) in &snapshot.unavailable {
            eprintln!("warning: cannot list {kind} in {}: {reason}", cluster.name);
        }
        merged.extend(snapshot);
    }
    Ok((merged, first_namespace))
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
