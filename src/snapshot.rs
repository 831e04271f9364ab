//! The Snapshot: plain typed data about one cluster (or one set of files), the only thing the
//! analyzers see. The live source and the file source both produce it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, PodTemplateSpec, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::source::yaml::LineTree;

/// The field paths whose lines findings cite (`*` any key, `[]` any item). Only these lines are
/// kept for an object read from a file, so memory follows what the analyzers need rather than
/// every node of every document.
pub const LINE_PATHS: &[&[&str]] = &[
    &["metadata", "name"],
    &["metadata", "labels", "*"],
    &["spec", "replicas"],
    &["spec", "ports", "[]", "port"],
    &["spec", "template", "metadata", "labels", "*"],
];

/// Where an object came from: a file (with the document's first line and the line of every
/// field) or a live cluster (with the cluster's name when several are analysed together).
#[derive(Debug, Default)]
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
#[derive(Debug)]
pub struct Located<T> {
    pub object: T,
    pub origin: Origin,
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

/// Everything the analyzers may look at.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub namespaces: Vec<Located<Namespace>>,
    pub pods: Vec<Located<Pod>>,
    pub services: Vec<Located<Service>>,
    pub workloads: Vec<Located<Workload>>,
    pub config_maps: Vec<Located<ConfigMap>>,
    pub webhooks: Vec<Located<MutatingWebhookConfiguration>>,
    pub pod_disruption_budgets: Vec<Located<PodDisruptionBudget>>,
    pub events: Vec<Located<Event>>,
    pub endpoint_slices: Vec<Located<EndpointSlice>>,
    pub network_policies: Vec<Located<NetworkPolicy>>,
    /// Istio `ProxyConfig` resources, kept as JSON (only `selector` and `image` are read).
    pub proxy_configs: Vec<Located<serde_json::Value>>,
    /// The mesh configuration (`--mesh-config`, or the `istio` ConfigMap's `mesh` key).
    pub mesh_config: Option<serde_json::Value>,
    /// Which kinds are present at all. An analyzer whose inputs are missing is skipped, and
    /// the report says so (for example when RBAC forbids listing a kind).
    pub unavailable: BTreeMap<&'static str, String>,
}

impl Snapshot {
    /// The namespace object with this name, if it is in the snapshot.
    pub fn namespace(&self, name: &str) -> Option<&Located<Namespace>> {
        self.namespaces.iter().find(|n| n.object.name() == name)
    }

    /// Moves every object of `other` into `self` (files overlaid on a cluster, several files).
    pub fn extend(&mut self, other: Snapshot) {
        self.namespaces.extend(other.namespaces);
        self.pods.extend(other.pods);
        self.services.extend(other.services);
        self.workloads.extend(other.workloads);
        self.config_maps.extend(other.config_maps);
        self.webhooks.extend(other.webhooks);
        self.pod_disruption_budgets
            .extend(other.pod_disruption_budgets);
        self.events.extend(other.events);
        self.endpoint_slices.extend(other.endpoint_slices);
        self.network_policies.extend(other.network_policies);
        self.proxy_configs.extend(other.proxy_configs);
        if other.mesh_config.is_some() {
            self.mesh_config = other.mesh_config;
        }
        self.unavailable.extend(other.unavailable);
    }

    pub fn object_count(&self) -> usize {
        self.namespaces.len()
            + self.pods.len()
            + self.services.len()
            + self.workloads.len()
            + self.config_maps.len()
            + self.webhooks.len()
            + self.pod_disruption_budgets.len()
            + self.events.len()
            + self.endpoint_slices.len()
            + self.network_policies.len()
            + self.proxy_configs.len()
    }
}

/// The namespaces Istio never injects and never analyses.
pub const SYSTEM_NAMESPACES: &[&str] = &[
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];
