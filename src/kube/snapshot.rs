//! The Snapshot: plain typed data about one cluster (or one set of files), the only thing the
//! analyzers see. The live source and the file source both produce it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Event, Namespace, Node, Pod, PodTemplateSpec, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::formats::yaml::LineTree;

/// The field paths whose lines findings cite (`*` any key, `[]` any item). Only these lines are
/// kept for an object read from a file, so memory follows what the analyzers need rather than
/// every node of every document.
pub const LINE_PATHS: &[&[&str]] = &[
    &["metadata", "name"],
    &["metadata", "labels", "*"],
    &["metadata", "annotations", "*"],
    &["data", "meshNetworks"],
    &["data", "root-cert.pem"],
    &["spec", "replicas"],
    &["spec", "ports", "[]", "port"],
    &["spec", "template", "metadata", "labels", "*"],
];

/// Where an object came from: a file (with the document's first line and the line of every
/// field) or a live cluster (with the cluster's name when several are analysed together).
#[derive(Clone, Debug, Default)]
pub struct Origin {
    pub file: Option<Arc<str>>,
    pub line: Option<u32>,
    pub lines: Option<LineTree>,
    pub cluster: Option<Arc<str>>,
}

impl Origin {
    /// The line of a field path such as `metadata.name`, when the object came from a YAML file.
    pub fn line_of(&self, path: &str) -> Option<u32> {
        self.lines.as_ref().and_then(|t| t.line_of(path))
    }
}

/// An object together with where it came from.
#[derive(Clone, Debug)]
pub struct Located<T> {
    pub object: T,
    pub origin: Origin,
}

/// An object of a cluster's answer decoded straight into the snapshot's type, from nowhere yet
/// (the reader sets its origin): a list of thousands of objects need not be moved into `Located`
/// ones afterwards.
impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Located<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Located::new)
    }
}

impl<T> Located<T> {
    pub fn new(object: T) -> Self {
        Located {
            object,
            origin: Origin::default(),
        }
    }
}

/// Anything with a kind and Kubernetes metadata.
pub trait Object {
    fn kind(&self) -> &str;
    fn meta(&self) -> &ObjectMeta;

    fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or("")
    }
    fn namespace(&self) -> Option<&str> {
        self.meta().namespace.as_deref().filter(|s| !s.is_empty())
    }
    fn label(&self, key: &str) -> Option<&str> {
        self.meta().labels.as_ref()?.get(key).map(String::as_str)
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.meta()
            .annotations
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }
}

impl<T> Object for T
where
    T: k8s_openapi::Resource + k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    fn kind(&self) -> &str {
        T::KIND
    }
    fn meta(&self) -> &ObjectMeta {
        self.metadata()
    }
}

/// The kinds of objects that create pods from a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
    ReplicaSet,
    Job,
    CronJob,
}

impl WorkloadKind {
    pub fn parse(kind: &str) -> Option<Self> {
        Some(match kind {
            "Deployment" => Self::Deployment,
            "StatefulSet" => Self::StatefulSet,
            "DaemonSet" => Self::DaemonSet,
            "ReplicaSet" => Self::ReplicaSet,
            "Job" => Self::Job,
            "CronJob" => Self::CronJob,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
            Self::ReplicaSet => "ReplicaSet",
            Self::Job => "Job",
            Self::CronJob => "CronJob",
        }
    }
}

/// A workload, reduced to what the analyzers need: its metadata, replica count and pod template.
/// The template is what the API server receives, i.e. *before* the injection webhook runs.
#[derive(Clone, Debug)]
pub struct Workload {
    pub kind: WorkloadKind,
    pub metadata: ObjectMeta,
    pub replicas: Option<i32>,
    pub selector: Option<LabelSelector>,
    pub template: PodTemplateSpec,
    /// The owner, for a ReplicaSet created by a Deployment.
    pub owner: Option<String>,
}

impl Object for Workload {
    fn kind(&self) -> &str {
        self.kind.as_str()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// A custom resource kept as its spec (Istio's config kinds): the layer that knows the kind reads
/// the spec into its own types.
#[derive(Clone, Debug, Default)]
pub struct ConfigObject {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: serde_json::Value,
    pub status: serde_json::Value,
}

impl Object for ConfigObject {
    fn kind(&self) -> &str {
        &self.kind
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// A Secret reduced to its type, the names of its keys with a value, and the facts of its public
/// certificates: no value is kept, and a private key is never read beyond its length.
#[derive(Clone, Debug, Default)]
pub struct SecretKeys {
    pub metadata: ObjectMeta,
    pub type_: String,
    /// The keys whose value is not empty, sorted.
    pub keys: Vec<String>,
    /// The keys whose value is empty, sorted (Istio's messages name them).
    pub empty_keys: Vec<String>,
    /// For the keys named public when the Secret was read (a Gateway credential's `tls.crt`,
    /// `cert`, `ca.crt`, `cacert`), what their PEM holds: subjects and validity only.
    pub certificates: BTreeMap<String, crate::kube::certificate::PemCertificates>,
}

impl SecretKeys {
    /// Reduces a Secret's data as it is read: the key names with a value, and the certificate
    /// facts of the keys in `public`. Every value is dropped here, once looked at; the others
    /// (private keys among them) only for whether they are empty.
    pub fn reduce(
        metadata: ObjectMeta,
        type_: String,
        data: impl IntoIterator<Item = (String, Vec<u8>)>,
        public: &[&str],
    ) -> SecretKeys {
        let mut keys = Vec::new();
        let mut empty_keys = Vec::new();
        let mut certificates = BTreeMap::new();
        for (key, mut value) in data {
            if value.is_empty() {
                empty_keys.push(key);
                continue;
            }
            if public.contains(&key.as_str()) {
                certificates.insert(key.clone(), crate::kube::certificate::read_pem(&value));
            }
            // Zeroed before it is freed (best effort: the reader's own buffers are not ours).
            value.fill(0);
            std::hint::black_box(&value);
            drop(value);
            keys.push(key);
        }
        keys.sort();
        keys.dedup();
        empty_keys.sort();
        empty_keys.dedup();
        empty_keys.retain(|k| !keys.contains(k));
        SecretKeys {
            metadata,
            type_,
            keys,
            empty_keys,
            certificates,
        }
    }
}

impl Object for SecretKeys {
    fn kind(&self) -> &str {
        "Secret"
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// A CustomResourceDefinition reduced to its metadata (name, labels, annotations): the
/// schema is never kept (the Gateway API CRDs alone are megabytes of it).
#[derive(Clone, Debug, Default)]
pub struct CrdMeta {
    pub metadata: ObjectMeta,
}

impl Object for crate::kube::object_rules::Rejection {
    fn kind(&self) -> &str {
        &self.kind
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl Object for CrdMeta {
    fn kind(&self) -> &str {
        "CustomResourceDefinition"
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// Objects of the snapshot grouped by a name (their namespace, their own name), each group in
/// the snapshot's order, for the lookups of an analysis over every workload or pod.
#[derive(Debug)]
pub struct ObjectsBy<'s, T> {
    groups: std::collections::HashMap<&'s str, Vec<&'s Located<T>>>,
}

impl<T> Default for ObjectsBy<'_, T> {
    fn default() -> Self {
        ObjectsBy {
            groups: Default::default(),
        }
    }
}

impl<'s, T> ObjectsBy<'s, T> {
    fn group(
        objects: impl IntoIterator<Item = &'s Located<T>>,
        key: impl Fn(&'s Located<T>) -> &'s str,
    ) -> Self {
        let mut groups: std::collections::HashMap<&'s str, Vec<&'s Located<T>>> =
            Default::default();
        for o in objects {
            groups.entry(key(o)).or_default().push(o);
        }
        ObjectsBy { groups }
    }

    /// The objects of `name`, in the snapshot's order.
    pub fn of(&self, name: &str) -> &[&'s Located<T>] {
        self.groups.get(name).map(Vec::as_slice).unwrap_or_default()
    }
}

/// The Services of the snapshot by namespace (each workload asks for the Services of its
/// namespace, not for all of them).
pub type ServicesByNamespace<'s> = ObjectsBy<'s, Service>;

impl<'s> ObjectsBy<'s, Service> {
    pub fn new(snapshot: &'s Snapshot) -> Self {
        Self::group(&snapshot.services, |svc| {
            svc.object.namespace().unwrap_or("")
        })
    }
}

/// The Namespace objects of the snapshot (in and beyond the scope) by name (files may hold two
/// of one name).
pub type NamespacesByName<'s> = ObjectsBy<'s, Namespace>;

impl<'s> ObjectsBy<'s, Namespace> {
    pub fn new(snapshot: &'s Snapshot) -> Self {
        Self::group(snapshot.all_namespaces(), |n| n.object.name())
    }

    /// The labels of the first Namespace named `name`.
    pub fn labels(&self, name: &str) -> Option<&'s BTreeMap<String, String>> {
        self.of(name)
            .first()
            .and_then(|n| n.object.metadata.labels.as_ref())
    }
}

/// Everything the analyzers may look at.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub namespaces: Vec<Located<Namespace>>,
    pub pods: Vec<Located<Pod>>,
    pub services: Vec<Located<Service>>,
    pub workloads: Vec<Located<Workload>>,
    pub config_maps: Vec<Located<ConfigMap>>,
    pub webhooks: Vec<Located<MutatingWebhookConfiguration>>,
    pub validating_webhooks: Vec<Located<ValidatingWebhookConfiguration>>,
    /// CustomResourceDefinitions, metadata only.
    pub crds: Vec<Located<CrdMeta>>,
    pub pod_disruption_budgets: Vec<Located<PodDisruptionBudget>>,
    pub events: Vec<Located<Event>>,
    pub endpoint_slices: Vec<Located<EndpointSlice>>,
    pub network_policies: Vec<Located<NetworkPolicy>>,
    /// Istio `ProxyConfig` resources, kept as JSON (only `selector` and `image` are read).
    pub proxy_configs: Vec<Located<serde_json::Value>>,
    /// Istio's config resources (VirtualService, DestinationRule, Gateway, ...), untyped.
    pub config: Vec<Located<ConfigObject>>,
    /// Live with `-n`: the Pods and Services of the other namespaces, read because Istio's
    /// config crosses namespaces (a Gateway selecting `istio-system`'s ingress pods, a route to
    /// `svc.other.svc.cluster.local`). Only the Istio config analyzers read them; findings stay
    /// limited to the scope.
    pub pods_beyond_scope: Vec<Located<Pod>>,
    pub services_beyond_scope: Vec<Located<Service>>,
    /// Live with `-n`: the other Namespaces (an AuthorizationPolicy's source namespaces may
    /// name any of them).
    pub namespaces_beyond_scope: Vec<Located<Namespace>>,
    /// Nodes (their labels give pods their locality).
    pub nodes: Vec<Located<Node>>,
    /// Secrets, type, key names and the facts of their public certificates only (live: only
    /// those a Gateway names, got by name).
    pub secrets: Vec<Located<SecretKeys>>,
    /// When the source was read: the time certificates are judged against (analyzers read no
    /// clock). `None` leaves the checks that need a time out.
    pub read_at: Option<jiff::Timestamp>,
    /// The mesh configuration (`--mesh-config`, or the `istio` ConfigMap's `mesh` key).
    pub mesh_config: Option<serde_json::Value>,
    /// Live: the clusters (kubeconfig contexts) that serve none of Istio's `networking.istio.io`
    /// kinds, i.e. Istio is not installed there.
    pub istio_absent: Vec<String>,
    /// The MeshNetworks given with `--mesh-networks` (its file and lines kept). Without it, the
    /// `istio` ConfigMap's `meshNetworks` key among `config_maps` is read.
    pub mesh_networks: Option<Located<serde_json::Value>>,
    /// Files: the objects `kubectl apply` would refuse for their identity or metadata (of
    /// every kind, analysed or not), with the rules they break.
    pub rejections: Vec<Located<crate::kube::object_rules::Rejection>>,
    /// Which kinds are present at all. An analyzer whose inputs are missing is skipped, and
    /// the report says so (for example when RBAC forbids listing a kind).
    pub unavailable: BTreeMap<crate::kube::kind::Kind, String>,
}

/// The labels of a pod that exists or that a workload will create.
#[derive(Debug)]
pub struct PodLabels<'a> {
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// The pod's name, or `None` for a workload's template.
    pub pod: Option<&'a str>,
}

impl Snapshot {
    /// The pods in scope and, live with `-n`, those beyond it.
    pub fn all_pods(&self) -> impl Iterator<Item = &Located<Pod>> {
        self.pods.iter().chain(&self.pods_beyond_scope)
    }

    /// The Services in scope and, live with `-n`, those beyond it.
    pub fn all_services(&self) -> impl Iterator<Item = &Located<Service>> {
        self.services.iter().chain(&self.services_beyond_scope)
    }
    /// The label sets of every pod and of every workload's pod template, so that a selector
    /// over manifests with Deployments and no Pods still finds its workloads. ReplicaSets owned
    /// by a Deployment are left out (the Deployment's template is the same).
    pub fn pod_labels(&self) -> Vec<PodLabels<'_>> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        let pods = self.all_pods().map(|p| PodLabels {
            namespace: p.object.namespace().unwrap_or(""),
            labels: p.object.metadata.labels.as_ref().unwrap_or(&EMPTY),
            pod: Some(p.object.name()),
        });
        let templates = self
            .workloads
            .iter()
            .filter(|w| w.object.owner.is_none())
            .map(|w| PodLabels {
                namespace: w.object.namespace().unwrap_or(""),
                labels: w
                    .object
                    .template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.as_ref())
                    .unwrap_or(&EMPTY),
                pod: None,
            });
        pods.chain(templates).collect()
    }

    /// Makes `namespace` the scope: the Namespaces and Services of the other namespaces move
    /// beyond it (the Istio config analyzers still see them; findings about the scope only).
    pub fn narrow_to(&mut self, namespace: &str) {
        let (inside, beyond): (Vec<_>, Vec<_>) = std::mem::take(&mut self.namespaces)
            .into_iter()
            .partition(|n| n.object.name() == namespace);
        self.namespaces = inside;
        self.namespaces_beyond_scope.extend(beyond);
        let (inside, beyond): (Vec<_>, Vec<_>) = std::mem::take(&mut self.services)
            .into_iter()
            .partition(|s| s.object.namespace() == Some(namespace));
        self.services = inside;
        self.services_beyond_scope.extend(beyond);
    }

    /// The Namespaces in scope and, live with `-n`, the others.
    pub fn all_namespaces(&self) -> impl Iterator<Item = &Located<Namespace>> {
        self.namespaces.iter().chain(&self.namespaces_beyond_scope)
    }

    /// The names of the namespaces known to exist: those of the Namespace objects, and every
    /// namespace an object of the snapshot lives in (files put objects in a namespace without a
    /// Namespace object for it; a cluster has none in a namespace that does not exist).
    pub fn existing_namespace_names(&self) -> std::collections::BTreeSet<&str> {
        fn add<'a, T: Object>(
            set: &mut std::collections::BTreeSet<&'a str>,
            items: &'a [Located<T>],
        ) {
            set.extend(items.iter().filter_map(|o| o.object.namespace()));
        }
        let mut set: std::collections::BTreeSet<&str> =
            self.all_namespaces().map(|n| n.object.name()).collect();
        add(&mut set, &self.pods);
        add(&mut set, &self.pods_beyond_scope);
        add(&mut set, &self.services);
        add(&mut set, &self.services_beyond_scope);
        add(&mut set, &self.workloads);
        add(&mut set, &self.config_maps);
        add(&mut set, &self.config);
        add(&mut set, &self.network_policies);
        add(&mut set, &self.endpoint_slices);
        add(&mut set, &self.pod_disruption_budgets);
        set.remove("");
        set
    }

    /// The namespace object with this name, if it is in the snapshot.
    pub fn namespace(&self, name: &str) -> Option<&Located<Namespace>> {
        self.namespaces.iter().find(|n| n.object.name() == name)
    }

    /// Moves every object of `other` into `self` (files overlaid on a cluster, several files).
    /// [`Snapshot::extend`] by every part in turn, each list grown once.
    pub fn extend_all(&mut self, mut parts: Vec<Snapshot>) {
        // The pods (the largest objects) are moved on another core meanwhile.
        let pods = take_all(&mut parts, |p| &mut p.pods);
        let mut all_pods = std::mem::take(&mut self.pods);
        crate::parallel::join(
            || append_all(&mut all_pods, pods),
            || {
                append_all(
                    &mut self.services,
                    take_all(&mut parts, |p| &mut p.services),
                );
                append_all(
                    &mut self.workloads,
                    take_all(&mut parts, |p| &mut p.workloads),
                );
                append_all(&mut self.config, take_all(&mut parts, |p| &mut p.config));
                append_all(
                    &mut self.namespaces,
                    take_all(&mut parts, |p| &mut p.namespaces),
                );
            },
        );
        self.pods = all_pods;
        for part in parts {
            self.extend(part);
        }
    }

    pub fn extend(&mut self, other: Snapshot) {
        append(&mut self.namespaces, other.namespaces);
        append(&mut self.pods, other.pods);
        append(&mut self.services, other.services);
        append(&mut self.workloads, other.workloads);
        append(&mut self.config_maps, other.config_maps);
        append(&mut self.webhooks, other.webhooks);
        append(&mut self.validating_webhooks, other.validating_webhooks);
        append(&mut self.crds, other.crds);
        append(
            &mut self.pod_disruption_budgets,
            other.pod_disruption_budgets,
        );
        append(&mut self.events, other.events);
        append(&mut self.endpoint_slices, other.endpoint_slices);
        append(&mut self.network_policies, other.network_policies);
        append(&mut self.proxy_configs, other.proxy_configs);
        append(&mut self.istio_absent, other.istio_absent);
        append(&mut self.config, other.config);
        append(&mut self.secrets, other.secrets);
        append(&mut self.nodes, other.nodes);
        append(&mut self.rejections, other.rejections);
        append(&mut self.pods_beyond_scope, other.pods_beyond_scope);
        append(&mut self.services_beyond_scope, other.services_beyond_scope);
        append(
            &mut self.namespaces_beyond_scope,
            other.namespaces_beyond_scope,
        );
        if other.mesh_config.is_some() {
            self.mesh_config = other.mesh_config;
        }
        if other.mesh_networks.is_some() {
            self.mesh_networks = other.mesh_networks;
        }
        self.read_at = self.read_at.or(other.read_at);
        self.unavailable.extend(other.unavailable);
    }
}

/// Every part's `field`, taken out of it.
fn take_all<T>(
    parts: &mut [Snapshot],
    field: impl Fn(&mut Snapshot) -> &mut Vec<T>,
) -> Vec<Vec<T>> {
    parts.iter_mut().map(|p| std::mem::take(field(p))).collect()
}

/// Moves the items of `lists` into `into`, room for all of them made at once (a large list is
/// moved once, not again each time it outgrows its room).
fn append_all<T>(into: &mut Vec<T>, lists: Vec<Vec<T>>) {
    into.reserve_exact(lists.iter().map(Vec::len).sum());
    for mut list in lists {
        into.append(&mut list);
    }
}

/// Moves `from` into `into`: the vector itself when `into` is empty (no copy of a large file's
/// objects beside the originals), else its items.
fn append<T>(into: &mut Vec<T>, mut from: Vec<T>) {
    if into.is_empty() {
        std::mem::swap(into, &mut from);
    } else {
        into.append(&mut from);
    }
}

/// The namespaces Istio never injects and never analyses.
pub const SYSTEM_NAMESPACES: &[&str] = &[
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];
