//! Control-plane findings: the injection webhook and the istiod behind it.
//!
//! - MD0201: an istiod Deployment with fewer than 2 replicas, or no PodDisruptionBudget, behind an
//!   injection webhook that fails closed (`failurePolicy: Fail`), while namespaces depend on it.
//! - MD0202: the Service an injection webhook calls has no ready endpoint (or does not exist).
//! - MD0203: FailedCreate events whose message names an Istio injection webhook.
//! - MD0204: a namespace or pod asks for an `istio.io/rev` no injection webhook serves
//!   (emitted by the `injection` analyzer, which then leaves MD0103 out for that case).
//!
//! Which istiod serves which webhook: the webhook's `clientConfig.service` names a Service; the
//! Service's selector picks the istiod Deployment(s) by their pod labels. Without the Service in
//! the input, the Deployment named like the Service, or the `app=istiod` Deployment of the
//! configuration's revision, is taken. Every lookup stays within one cluster when several are
//! analysed together.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::{MD0201, MD0202, MD0203};
use crate::formats::text::name_list;
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::istio::injection::{NAMESPACE_NAME_LABEL, REVISION_LABEL, is_injection_webhook};
use crate::istio::istiod;
use crate::kube::selector;
use crate::kube::snapshot::{Located, Object, Snapshot, Workload, WorkloadKind};

/// The label EndpointSlices carry with the name of their Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

pub(super) fn cluster_of<T>(l: &Located<T>) -> Option<&str> {
    l.origin.cluster.as_deref()
}

pub(super) fn in_cluster<'a, 'c, T>(
    items: &'a [Located<T>],
    cluster: Option<&'c str>,
) -> impl Iterator<Item = &'a Located<T>> + use<'a, 'c, T> {
    items.iter().filter(move |l| cluster_of(l) == cluster)
}

/// Points a reference at the line of a label (label keys contain dots, so `at_field` cannot).
pub(super) fn at_label<T>(
    mut r: ResourceRef,
    located: &Located<T>,
    labels_path: &str,
    key: &str,
) -> ResourceRef {
    if let Some(line) = located
        .origin
        .lines
        .as_ref()
        .and_then(|t| {
            labels_path
                .split('.')
                .try_fold(t, |node, part| node.key(part))
        })
        .and_then(|node| node.key(key))
        .map(|node| node.line)
    {
        r.line = Some(line);
    }
    r
}

/// One Istio injection webhook of a MutatingWebhookConfiguration.
struct Injector<'a> {
    config: &'a Located<MutatingWebhookConfiguration>,
    webhook: &'a MutatingWebhook,
}

impl<'a> Injector<'a> {
    fn config_name(&self) -> &'a str {
        self.config.object.name()
    }

    fn cluster(&self) -> Option<&'a str> {
        cluster_of(self.config)
    }

    /// The Service it calls, `(namespace, name)`; `None` for a URL (an external istiod).
    fn service(&self) -> Option<(&'a str, &'a str)> {
        let service = self.webhook.client_config.service.as_ref()?;
        Some((service.namespace.as_str(), service.name.as_str()))
    }

    /// `failurePolicy: Fail`, which is also the default of admissionregistration/v1.
    fn fails_closed(&self) -> bool {
        self.webhook
            .failure_policy
            .as_deref()
            .is_none_or(|p| p == "Fail")
    }

    fn revision(&self) -> String {
        istiod::revision_of(self.config.object.metadata.labels.as_ref())
    }
}

fn injectors(snapshot: &Snapshot) -> Vec<Injector<'_>> {
    snapshot
        .webhooks
        .iter()
        .flat_map(|config| {
            config
                .object
                .webhooks
                .iter()
                .flatten()
                .filter(|w| is_injection_webhook(w))
                .map(move |webhook| Injector { config, webhook })
        })
        .collect()
}

/// A namespace's labels as the API server matches webhook namespace selectors: with
/// `kubernetes.io/metadata.name`.
fn selector_labels(
    ns: &Located<k8s_openapi::api::core::v1::Namespace>,
) -> BTreeMap<String, String> {
    let mut labels = ns.object.metadata.labels.clone().unwrap_or_default();
    labels
        .entry(NAMESPACE_NAME_LABEL.to_string())
        .or_insert_with(|| ns.object.name().to_string());
    labels
}

/// The labels of the pods and pod templates of each (cluster, namespace).
type PodLabelIndex<'a> = HashMap<(Option<&'a str>, &'a str), Vec<&'a BTreeMap<String, String>>>;

/// Finds the namespaces whose new pods go through a webhook. The labels of every pod and pod
/// template, by cluster and namespace, are indexed once, and only when an object selector needs them.
struct Dependents<'a> {
    snapshot: &'a Snapshot,
    pod_labels: OnceCell<PodLabelIndex<'a>>,
}

impl<'a> Dependents<'a> {
    fn new(snapshot: &'a Snapshot) -> Self {
        Dependents {
            snapshot,
            pod_labels: OnceCell::new(),
        }
    }

    fn pod_labels(&self) -> &PodLabelIndex<'a> {
        self.pod_labels.get_or_init(|| {
            static EMPTY: BTreeMap<String, String> = BTreeMap::new();
            let mut index: HashMap<_, Vec<_>> = HashMap::new();
            for w in &self.snapshot.workloads {
                let labels = w
                    .object
                    .template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.as_ref());
                index
                    .entry((cluster_of(w), w.object.namespace().unwrap_or("")))
                    .or_default()
                    .push(labels.unwrap_or(&EMPTY));
            }
            for p in &self.snapshot.pods {
                index
                    .entry((cluster_of(p), p.object.namespace().unwrap_or("")))
                    .or_default()
                    .push(p.object.metadata.labels.as_ref().unwrap_or(&EMPTY));
            }
            index
        })
    }

    /// The namespaces (of the webhook's cluster) whose new pods go through the webhook: its
    /// namespace selector matches, and its object selector matches a pod without labels, or
    /// the pod template of a workload, or a pod, of that namespace.
    fn of(&self, injector: &Injector<'_>) -> BTreeSet<String> {
        let cluster = injector.cluster();
        let object_selector = injector.webhook.object_selector.as_ref();
        let plain_pods = selector::matches(object_selector, &BTreeMap::new());
        let mut out = BTreeSet::new();
        for ns in in_cluster(&self.snapshot.namespaces, cluster) {
            let name = ns.object.name();
            if !selector::matches(
                injector.webhook.namespace_selector.as_ref(),
                &selector_labels(ns),
            ) {
                continue;
            }
            let labelled = || {
                self.pod_labels()
                    .get(&(cluster, name))
                    .is_some_and(|all| all.iter().any(|l| selector::matches(object_selector, l)))
            };
            if plain_pods || labelled() {
                out.insert(name.to_string());
            }
        }
        out
    }
}

/// The istiod Deployments behind a webhook (see the module comment).
fn backends<'a>(snapshot: &'a Snapshot, injector: &Injector<'_>) -> Vec<&'a Located<Workload>> {
    let Some((namespace, name)) = injector.service() else {
        return Vec::new();
    };
    let cluster = injector.cluster();
    let deployments = || {
        in_cluster(&snapshot.workloads, cluster).filter(move |w| {
            w.object.kind == WorkloadKind::Deployment && w.object.namespace() == Some(namespace)
        })
    };
    let service = in_cluster(&snapshot.services, cluster)
        .find(|s| s.object.namespace() == Some(namespace) && s.object.name() == name);
    if let Some(selector) = service
        .and_then(|s| s.object.spec.as_ref())
        .and_then(|s| s.selector.as_ref())
        .filter(|s| !s.is_empty())
    {
        return deployments()
            .filter(|d| {
                let labels = d
                    .object
                    .template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.as_ref());
                selector
                    .iter()
                    .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
            })
            .collect();
    }
    if let Some(by_name) = deployments().find(|d| d.object.name() == name) {
        return vec![by_name];
    }
    let revision = injector.revision();
    deployments()
        .filter(|d| {
            let spec = d.object.template.spec.as_ref();
            let template_labels = d
                .object
                .template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.as_ref());
            istiod::is_istiod(d.object.metadata.labels.as_ref(), template_labels, spec)
                && istiod::revision_of(d.object.metadata.labels.as_ref()) == revision
        })
        .collect()
}

/// MD0201: istiod behind a fail-closed injection webhook, with < 2 replicas or no PDB.
pub fn availability(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    struct Risk<'a> {
        deployment: &'a Located<Workload>,
        configs: BTreeSet<String>,
        namespaces: BTreeSet<String>,
    }
    let mut risks: BTreeMap<(Option<&str>, String, String), Risk<'_>> = BTreeMap::new();
    let dependents = Dependents::new(snapshot);
    for injector in injectors(snapshot).iter().filter(|i| i.fails_closed()) {
        let namespaces = dependents.of(injector);
        if namespaces.is_empty() {
            continue;
        }
        for deployment in backends(snapshot, injector) {
            let key = (
                cluster_of(deployment),
                deployment.object.namespace().unwrap_or("").to_string(),
                deployment.object.name().to_string(),
            );
            let risk = risks.entry(key).or_insert_with(|| Risk {
                deployment,
                configs: BTreeSet::new(),
                namespaces: BTreeSet::new(),
            });
            risk.configs.insert(injector.config_name().to_string());
            risk.namespaces.extend(namespaces.iter().cloned());
        }
    }
    for risk in risks.into_values() {
        let d = &risk.deployment.object;
        let replicas = d.replicas.unwrap_or(1);
        let pod_labels = d
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let covered = in_cluster(
            &snapshot.pod_disruption_budgets,
            cluster_of(risk.deployment),
        )
        .filter(|p| p.object.namespace() == d.namespace())
        .any(|p| {
            // policy/v1: a null selector selects nothing, an empty one every pod.
            p.object
                .spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some_and(|s| selector::matches(Some(s), &pod_labels))
        });
        if replicas >= 2 && covered {
            continue;
        }
        let replica_text = match replicas {
            1 => "runs 1 replica".to_string(),
            n => format!("runs {n} replicas"),
        };
        let (problem, when) = match (replicas, covered) {
            (0, _) => (replica_text, "as long as it is scaled to 0".to_string()),
            (1, false) => (
                format!("{replica_text} and no PodDisruptionBudget covers it"),
                "while its only pod is down (a rollout, a node drain or a node failure)"
                    .to_string(),
            ),
            (1, true) => (
                replica_text,
                "while its only pod is down (a rollout, a node failure)".to_string(),
            ),
            _ => (
                format!("{replica_text} but no PodDisruptionBudget covers it"),
                "when a node drain evicts its pods together".to_string(),
            ),
        };
        let namespace = d.namespace().unwrap_or(ISTIO_NAMESPACE);
        let selector_text = {
            let mut keys: Vec<String> = ["app", REVISION_LABEL]
                .iter()
                .filter_map(|k| pod_labels.get(*k).map(|v| format!("{k}={v}")))
                .collect();
            if keys.is_empty() {
                keys = pod_labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            }
            keys.join(",")
        };
        let mut fixes = Vec::new();
        if replicas < 2 {
            fixes.push(format!(
                "run at least 2 replicas ('kubectl -n {namespace} scale deployment {} --replicas=2'; with Helm, autoscaleMin and replicaCount)",
                d.name()
            ));
        }
        if !covered {
            fixes.push(format!(
                "add a PodDisruptionBudget with minAvailable: 1 selecting {selector_text} (with Helm, global.defaultPodDisruptionBudget.enabled)"
            ));
        }
        let fix = format!("Fix: {}.", fixes.join(", and "));
        let revision = istiod::revision_of(d.metadata.labels.as_ref());
        let configs: Vec<String> = risk.configs.into_iter().collect();
        let namespaces: Vec<String> = risk.namespaces.into_iter().collect();
        out.push(Finding::new(
            MD0201::message(
                revision,
                problem,
                configs,
                when,
                name_list("namespace", &namespaces),
                fix,
            ),
            Some(ResourceRef::of(risk.deployment).at_field(risk.deployment, "spec.replicas")),
        ));
    }
}

fn ready_endpoints(slices: &[&EndpointSlice]) -> (usize, usize) {
    let endpoints: Vec<_> = slices.iter().flat_map(|s| s.endpoints.iter()).collect();
    let ready = endpoints
        .iter()
        .filter(|e| !e.addresses.is_empty())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
        .count();
    (ready, endpoints.len())
}

/// MD0202: the Service an injection webhook calls has no ready endpoint, or does not exist.
///
/// EndpointSlices are judged only where the input has them: for a live cluster the control
/// plane's namespace (which the live source reads), for files a namespace with at least one
/// EndpointSlice in them (rendered manifests never contain any, a `kubectl get -o yaml` dump does).
pub fn endpoints(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    struct Target<'a> {
        configs: BTreeMap<String, &'a Located<MutatingWebhookConfiguration>>,
        closed: BTreeSet<String>,
        open: BTreeSet<String>,
        live: bool,
    }
    let mut targets: BTreeMap<(Option<&str>, &str, &str), Target<'_>> = BTreeMap::new();
    let dependents = Dependents::new(snapshot);
    for injector in injectors(snapshot) {
        let Some((namespace, name)) = injector.service() else {
            continue;
        };
        let namespaces = dependents.of(&injector);
        if namespaces.is_empty() {
            continue;
        }
        let target = targets
            .entry((injector.cluster(), namespace, name))
            .or_insert_with(|| Target {
                configs: BTreeMap::new(),
                closed: BTreeSet::new(),
                open: BTreeSet::new(),
                live: injector.config.origin.file.is_none(),
            });
        target
            .configs
            .insert(injector.config_name().to_string(), injector.config);
        if injector.fails_closed() {
            target.closed.extend(namespaces);
        } else {
            target.open.extend(namespaces);
        }
    }
    for ((cluster, namespace, name), target) in targets {
        let slices_in_namespace: Vec<&EndpointSlice> =
            in_cluster(&snapshot.endpoint_slices, cluster)
                .filter(|s| s.object.namespace() == Some(namespace))
                .map(|s| &s.object)
                .collect();
        let known =
            !slices_in_namespace.is_empty() || (target.live && namespace == ISTIO_NAMESPACE);
        if !known {
            continue;
        }
        let slices: Vec<&EndpointSlice> = slices_in_namespace
            .into_iter()
            .filter(|s| s.label(SERVICE_NAME_LABEL) == Some(name))
            .collect();
        let service_known = in_cluster(&snapshot.services, cluster)
            .any(|s| s.object.namespace() == Some(namespace));
        let service_exists = in_cluster(&snapshot.services, cluster)
            .any(|s| s.object.namespace() == Some(namespace) && s.object.name() == name);
        let (ready, total) = ready_endpoints(&slices);
        if ready > 0 {
            continue;
        }
        let state = if service_known && !service_exists && slices.is_empty() {
            "does not exist".to_string()
        } else if slices.is_empty() {
            "has no ready endpoint (no EndpointSlice for it)".to_string()
        } else if total == 0 {
            "has no ready endpoint (its EndpointSlices are empty)".to_string()
        } else {
            format!("has no ready endpoint ({total} endpoint(s), none ready)")
        };
        let mut effects = Vec::new();
        if !target.closed.is_empty() {
            let names: Vec<String> = target.closed.iter().cloned().collect();
            effects.push(format!(
                "no pod can be created in {} right now (failurePolicy Fail)",
                name_list("namespace", &names)
            ));
        }
        let open: Vec<String> = target.open.difference(&target.closed).cloned().collect();
        if !open.is_empty() {
            effects.push(format!(
                "pods created in {} start without the Istio proxy (failurePolicy Ignore)",
                name_list("namespace", &open)
            ));
        }
        let fix = format!(
            "Bring istiod back: 'kubectl -n {namespace} get deployments,pods -l app=istiod' and 'kubectl -n {namespace} describe pods -l app=istiod' show why no pod is ready."
        );
        let first = target
            .configs
            .values()
            .next()
            .copied()
            .expect("a target has a configuration");
        let configs: Vec<String> = target.configs.keys().cloned().collect();
        out.push(Finding::new(
            MD0202::message(
                configs,
                format!("{namespace}/{name}"),
                state,
                effects.join("; "),
                fix,
            ),
            Some(ResourceRef::of(first)),
        ));
    }
}

/// What an event says about an injection webhook.
#[derive(Debug, PartialEq, Eq)]
struct WebhookFailure {
    webhook: String,
    /// "could not be called: <cause>" or "denied the request: <reason>".
    outcome: String,
}

fn quoted_after<'a>(text: &'a str, prefix: &str) -> Option<(&'a str, &'a str)> {
    let start = text.find(prefix)? + prefix.len();
    let rest = &text[start..];
    let end = rest.find('"')?;
    Some((&rest[..end], &rest[end + 1..]))
}

/// Reads `failed calling webhook "X": <cause>` or `admission webhook "X" denied the request: <why>`.
fn webhook_failure(message: &str, known: &BTreeSet<&str>) -> Option<WebhookFailure> {
    let is_injector =
        |name: &str| name.ends_with("sidecar-injector.istio.io") || known.contains(name);
    if let Some((webhook, rest)) = quoted_after(message, "failed calling webhook \"")
        && is_injector(webhook)
    {
        let rest = rest.trim_start_matches(':').trim();
        // `failed to call webhook: Post "https://…": dial tcp …` → the part after the URL.
        let cause = rest
            .find("\": ")
            .map(|i| &rest[i + 3..])
            .filter(|c| !c.is_empty())
            .unwrap_or(rest);
        return Some(WebhookFailure {
            webhook: webhook.to_string(),
            outcome: format!("could not be called: {}", cause.trim()),
        });
    }
    if let Some((webhook, rest)) = quoted_after(message, "admission webhook \"")
        && is_injector(webhook)
    {
        let reason = rest
            .split_once("denied the request:")
            .map_or(rest, |(_, r)| r)
            .trim();
        return Some(WebhookFailure {
            webhook: webhook.to_string(),
            outcome: format!("denied the request: {reason}"),
        });
    }
    None
}

fn timestamp(event: &Event, first: bool) -> Option<jiff::Timestamp> {
    let legacy = if first {
        event.first_timestamp.as_ref()
    } else {
        event.last_timestamp.as_ref()
    };
    legacy
        .map(|t| t.0)
        .or_else(|| {
            (!first)
                .then(|| {
                    event
                        .series
                        .as_ref()?
                        .last_observed_time
                        .as_ref()
                        .map(|t| t.0)
                })
                .flatten()
        })
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

fn count(event: &Event) -> i64 {
    event
        .series
        .as_ref()
        .and_then(|s| s.count)
        .or(event.count)
        .map_or(1, i64::from)
        .max(1)
}

/// The Deployment a ReplicaSet belongs to: `<deployment>-<pod-template-hash>`, when that
/// Deployment is in the input.
fn owning_deployment<'a>(
    snapshot: &'a Snapshot,
    cluster: Option<&str>,
    namespace: &str,
    replica_set: &str,
) -> Option<&'a str> {
    let (base, _) = replica_set.rsplit_once('-')?;
    in_cluster(&snapshot.workloads, cluster)
        .find(|w| {
            w.object.kind == WorkloadKind::Deployment
                && w.object.namespace() == Some(namespace)
                && w.object.name() == base
        })
        .map(|w| w.object.name())
}

/// MD0203: FailedCreate events caused by an Istio injection webhook, one finding per workload
/// and webhook, with the total count and the first and last time.
pub fn failed_creates(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    struct Seen<'a> {
        event: &'a Located<Event>,
        count: i64,
        first: Option<jiff::Timestamp>,
        last: Option<jiff::Timestamp>,
        last_outcome: String,
    }
    let known: BTreeSet<&str> = injectors(snapshot)
        .iter()
        .map(|i| i.webhook.name.as_str())
        .collect();
    let mut seen: BTreeMap<(Option<&str>, String, String, String, String), Seen<'_>> =
        BTreeMap::new();
    for located in &snapshot.events {
        let event = &located.object;
        if event.reason.as_deref() != Some("FailedCreate") {
            continue;
        }
        let Some(failure) = event
            .message
            .as_deref()
            .and_then(|m| webhook_failure(m, &known))
        else {
            continue;
        };
        let involved = &event.involved_object;
        let namespace = involved
            .namespace
            .clone()
            .or_else(|| event.metadata.namespace.clone())
            .unwrap_or_default();
        let key = (
            cluster_of(located),
            involved.kind.clone().unwrap_or_default(),
            namespace,
            involved.name.clone().unwrap_or_default(),
            failure.webhook,
        );
        let first = timestamp(event, true);
        let last = timestamp(event, false);
        let entry = seen.entry(key).or_insert_with(|| Seen {
            event: located,
            count: 0,
            first,
            last,
            last_outcome: failure.outcome.clone(),
        });
        entry.count += count(event);
        entry.first = match (entry.first, first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if last >= entry.last {
            entry.last = last;
            entry.last_outcome = failure.outcome;
        }
    }
    for ((cluster, kind, namespace, name, webhook), s) in seen {
        let owner = (kind == "ReplicaSet")
            .then(|| owning_deployment(snapshot, cluster, &namespace, &name))
            .flatten();
        let subject = match owner {
            Some(d) => format!("{kind} {namespace}/{name} (of Deployment {namespace}/{d})"),
            None => format!("{kind} {namespace}/{name}"),
        };
        let workload = match owner {
            Some(d) => format!("Deployment {namespace}/{d}"),
            None => format!("the {kind}"),
        };
        let when = |t: Option<jiff::Timestamp>| {
            t.map_or_else(|| "an unknown time".to_string(), |t| t.to_string())
        };
        let effect = match kind.as_str() {
            "Job" | "CronJob" => "start its pods",
            _ => "scale or roll out",
        };
        let noun = if owner.is_some() {
            "Deployment"
        } else {
            kind.as_str()
        };
        let advice = format!(
            "until istiod answers the webhook again, the {noun} cannot {effect} (its controller retries by itself). Check istiod: 'kubectl -n {ISTIO_NAMESPACE} get pods -l app=istiod' (see MD0202 and MD0201)."
        );
        let resource = ResourceRef {
            kind: kind.clone(),
            namespace: Some(namespace.clone()),
            name: name.clone(),
            file: s.event.origin.file.clone(),
            line: s.event.origin.line,
            cluster: s.event.origin.cluster.clone(),
        };
        out.push(Finding::new(
            MD0203::message(
                subject,
                webhook,
                s.last_outcome,
                s.count,
                when(s.first),
                when(s.last),
                workload,
                advice,
            ),
            Some(resource),
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::revisions::unserved_revisions;
    use super::*;
    use crate::formats::text::join_names;
    use crate::source::files::{FileOptions, LoadStats, load_text};

    const OUTAGE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/control-plane/outage.yaml"
    ));
    const HEALTHY: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/control-plane/healthy.yaml"
    ));

    fn load(text: &str) -> Snapshot {
        let mut snapshot = Snapshot::default();
        load_text(
            text,
            Arc::from("t.yaml"),
            false,
            &FileOptions::default(),
            &mut snapshot,
            &mut LoadStats::default(),
        )
        .unwrap();
        snapshot
    }

    /// The same objects as if read from a live cluster (no file, optionally a cluster name).
    fn live(text: &str, cluster: Option<&str>) -> Snapshot {
        let mut s = load(text);
        fn strip<T>(items: &mut [Located<T>], cluster: Option<&str>) {
            for item in items {
                item.origin = crate::kube::snapshot::Origin {
                    cluster: cluster.map(Arc::from),
                    ..Default::default()
                };
            }
        }
        strip(&mut s.namespaces, cluster);
        strip(&mut s.pods, cluster);
        strip(&mut s.services, cluster);
        strip(&mut s.workloads, cluster);
        strip(&mut s.webhooks, cluster);
        strip(&mut s.pod_disruption_budgets, cluster);
        strip(&mut s.events, cluster);
        strip(&mut s.endpoint_slices, cluster);
        s
    }

    fn run(f: fn(&Snapshot, &mut Vec<Finding>), snapshot: &Snapshot) -> Vec<Finding> {
        let mut out = Vec::new();
        f(snapshot, &mut out);
        out
    }

    fn origins(findings: &[Finding]) -> Vec<String> {
        findings.iter().filter_map(Finding::origin).collect()
    }

    #[test]
    fn single_istiod_without_pdb_behind_a_failing_webhook() {
        let findings = run(availability, &load(OUTAGE));
        assert_eq!(origins(&findings), ["Deployment istio-system/istiod"]);
        let m = &findings[0].message;
        assert!(
            m.contains("runs 1 replica and no PodDisruptionBudget covers it"),
            "{m}"
        );
        assert!(m.contains("[istio-sidecar-injector]"), "{m}");
        assert!(
            m.contains("no pod can be created in namespace shop."),
            "{m}"
        );
        assert!(m.contains("--replicas=2"), "{m}");
        assert!(
            m.contains("selecting app=istiod,istio.io/rev=default"),
            "{m}"
        );
        assert_eq!(
            findings[0].resource.as_ref().unwrap().line,
            Some(72),
            "points at spec.replicas"
        );
    }

    #[test]
    fn two_replicas_and_a_pdb_are_enough() {
        assert!(run(availability, &load(HEALTHY)).is_empty());
        // Two replicas without a PDB: a drain can still take both.
        let text = HEALTHY.replace("kind: PodDisruptionBudget", "kind: Ignored");
        let findings = run(availability, &load(&text));
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .message
                .contains("runs 2 replicas but no PodDisruptionBudget")
        );
        assert!(
            findings[0]
                .message
                .contains("when a node drain evicts its pods together")
        );
        // A PDB but one replica.
        let text = HEALTHY.replace("replicas: 2", "replicas: 1");
        let findings = run(availability, &load(&text));
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0].message.contains("runs 1 replica, and"),
            "{}",
            findings[0].message
        );
        assert!(!findings[0].message.contains("PodDisruptionBudget with"));
    }

    #[test]
    fn fail_open_webhooks_and_unused_istiods_are_not_a_risk() {
        let text = OUTAGE.replace("failurePolicy: Fail", "failurePolicy: Ignore");
        assert!(run(availability, &load(&text)).is_empty());
        // Nothing depends on it: no injected namespace, no pod asking.
        let text = OUTAGE
            .replace("istio-injection: enabled", "team: shop")
            .replace("istio.io/rev: canary", "team: payments");
        assert!(run(availability, &load(&text)).is_empty());
    }

    #[test]
    fn pods_that_ask_themselves_make_their_namespace_depend() {
        let text = OUTAGE
            .replace("istio-injection: enabled", "team: shop")
            .replace(
                "      labels: {app: web}\n",
                "      labels: {app: web, sidecar.istio.io/inject: \"true\"}\n",
            );
        let findings = run(availability, &load(&text));
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0].message.contains("in namespace shop."),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn webhook_service_without_ready_endpoints() {
        let findings = run(endpoints, &load(OUTAGE));
        assert_eq!(
            origins(&findings),
            ["MutatingWebhookConfiguration istio-sidecar-injector"]
        );
        let m = &findings[0].message;
        assert!(m.contains("call Service istio-system/istiod, which has no ready endpoint (1 endpoint(s), none ready)"), "{m}");
        assert!(
            m.contains("no pod can be created in namespace shop right now (failurePolicy Fail)"),
            "{m}"
        );
        assert!(
            run(endpoints, &load(HEALTHY)).is_empty(),
            "ready: true and unset both count as ready"
        );
    }

    #[test]
    fn endpoint_slices_are_judged_only_where_the_input_has_them() {
        let no_slices = OUTAGE.replace("kind: EndpointSlice", "kind: Ignored");
        // Rendered manifests never contain EndpointSlices: nothing to say.
        assert!(run(endpoints, &load(&no_slices)).is_empty());
        // A live cluster without any: the Service has no endpoint at all.
        let findings = run(endpoints, &live(&no_slices, None));
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .message
                .contains("which has no ready endpoint (no EndpointSlice for it)")
        );
        // The Service itself is gone.
        let no_service = no_slices.replace("name: istiod\n  namespace: istio-system\n  labels: {app: istiod, istio.io/rev: default}\nspec:\n  selector", "name: istiod-old\n  namespace: istio-system\nspec:\n  selector");
        let findings = run(endpoints, &live(&no_service, None));
        assert!(
            findings[0]
                .message
                .contains("Service istio-system/istiod, which does not exist"),
            "{}",
            findings[0].message
        );
        // Fail-open webhooks: pods are created, without proxy.
        let open = no_slices.replace("failurePolicy: Fail", "failurePolicy: Ignore");
        let findings = run(endpoints, &live(&open, None));
        assert!(findings[0].message.contains(
            "pods created in namespace shop start without the Istio proxy (failurePolicy Ignore)"
        ));
    }

    #[test]
    fn failed_creates_are_grouped_per_workload_and_webhook() {
        let findings = run(failed_creates, &load(OUTAGE));
        assert_eq!(origins(&findings), ["ReplicaSet shop/web-7d4b9c6f5"]);
        let m = &findings[0].message;
        assert!(
            m.starts_with(
                "ReplicaSet shop/web-7d4b9c6f5 (of Deployment shop/web) cannot create pods"
            ),
            "{m}"
        );
        assert!(m.contains("\"namespace.sidecar-injector.istio.io\" could not be called: dial tcp 10.96.0.10:443: connect: connection refused"), "{m}");
        assert!(
            m.contains("(17 time(s), first at 2026-08-30T09:05:00Z, last at 2026-08-30T09:31:40Z)"),
            "{m}"
        );
        assert!(m.contains("not Deployment shop/web"), "{m}");
    }

    #[test]
    fn webhook_messages() {
        let known = BTreeSet::from(["custom.inject.example.com"]);
        assert_eq!(
            webhook_failure(
                "Error creating: admission webhook \"object.sidecar-injector.istio.io\" denied the request: template: inject:12: bad",
                &known
            ),
            Some(WebhookFailure {
                webhook: "object.sidecar-injector.istio.io".into(),
                outcome: "denied the request: template: inject:12: bad".into(),
            })
        );
        assert!(
            webhook_failure(
                "Error creating: Internal error occurred: failed calling webhook \"custom.inject.example.com\": failed to call webhook: Post \"https://x/inject\": context deadline exceeded",
                &known
            )
            .is_some_and(|f| f.outcome == "could not be called: context deadline exceeded")
        );
        assert_eq!(
            webhook_failure(
                "Error creating: Internal error occurred: failed calling webhook \"validate.kyverno.svc\": failed to call webhook: Post \"https://k\": EOF",
                &known
            ),
            None,
            "other webhooks are not the mesh's business"
        );
        assert_eq!(
            webhook_failure(
                "Error creating: pods \"web-1\" is forbidden: exceeded quota",
                &known
            ),
            None
        );
    }

    #[test]
    fn revisions_not_served() {
        let findings = run(unserved_revisions, &load(OUTAGE));
        assert_eq!(origins(&findings), ["Namespace payments"]);
        let m = &findings[0].message;
        assert!(m.starts_with("The namespace asks for Istio revision \"canary\" (label istio.io/rev=canary), which no injection webhook serves (served: default)"), "{m}");
        assert!(m.contains("(Deployment payments/api)"), "{m}");
        assert!(
            m.contains("kubectl label namespace payments istio.io/rev=default --overwrite"),
            "{m}"
        );
        // A tag is served, and shown with its revision.
        assert!(run(unserved_revisions, &load(HEALTHY)).is_empty());
        let text = HEALTHY.replace("istio.io/rev: stable", "istio.io/rev: 1-30");
        let findings = run(unserved_revisions, &load(&text));
        assert!(
            findings[0]
                .message
                .contains("(served: stable (tag of 1-30))"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn a_workload_that_asks_for_a_missing_revision_itself() {
        let text = OUTAGE
            .replace(
                "      labels: {app: api}\n",
                "      labels: {app: api, istio.io/rev: blue}\n",
            )
            .replace("istio.io/rev: canary", "team: payments");
        let findings = run(unserved_revisions, &load(&text));
        assert_eq!(origins(&findings), ["Deployment payments/api"]);
        assert!(
            findings[0]
                .message
                .contains("(pod template label istio.io/rev=blue)")
        );
    }

    #[test]
    fn md0204_replaces_md0103_for_missing_revisions_only() {
        let mut out = Vec::new();
        crate::analysis::injection::analyze(&load(OUTAGE), &mut out);
        let codes: Vec<&str> = out.iter().map(Finding::code).collect();
        assert!(codes.contains(&"MD0204"), "{codes:?}");
        assert!(!codes.contains(&"MD0103"), "{codes:?}");
        // Only a revisioned webhook: istio-injection=enabled matches nothing, which is not a
        // revision problem, so MD0103 stays.
        let mut out = Vec::new();
        crate::analysis::injection::analyze(
            &load(&HEALTHY.replace("istio.io/rev: stable", "istio-injection: enabled")),
            &mut out,
        );
        let codes: Vec<&str> = out.iter().map(Finding::code).collect();
        assert_eq!(codes, ["MD0103"]);
    }

    #[test]
    fn clusters_are_kept_apart() {
        // The webhook of cluster a must not be judged with cluster b's istiod and endpoints.
        let mut snapshot = live(OUTAGE, Some("a"));
        snapshot.extend(live(HEALTHY, Some("b")));
        let findings = run(availability, &snapshot);
        assert_eq!(findings.len(), 1);
        assert_eq!(
            findings[0].resource.as_ref().unwrap().cluster.as_deref(),
            Some("a")
        );
        let findings = run(endpoints, &snapshot);
        assert_eq!(findings.len(), 1);
        assert_eq!(
            findings[0].resource.as_ref().unwrap().cluster.as_deref(),
            Some("a")
        );
        let findings = run(unserved_revisions, &snapshot);
        assert_eq!(findings.len(), 1, "{findings:?}");
    }

    #[test]
    fn names() {
        let n = |k: usize| (0..k).map(|i| format!("n{i}")).collect::<Vec<_>>();
        assert_eq!(name_list("namespace", &n(1)), "namespace n0");
        assert_eq!(name_list("namespace", &n(3)), "namespaces n0, n1 and n2");
        assert_eq!(
            join_names(&n(10)),
            "n0, n1, n2, n3, n4, n5, n6, n7 and 2 more"
        );
    }
}
