//! Ambient mode, files and live: objects that name a waypoint (`istio.io/use-waypoint` on a
//! Namespace, Service or Pod) that carries no traffic (MD0113: no such Gateway, not of class
//! `istio-waypoint`; live also not `Programmed` or without a ready pod) or whose workloads are
//! not in ambient mode (MD0114); AuthorizationPolicies that select ambient workloads with what
//! ztunnel cannot enforce (MD0403) or that target a Service of an ambient namespace without a
//! usable waypoint (MD0404); pods with a sidecar that are also asked into ambient (MD0112),
//! and pods ambient captured without a sidecar that ask for one themselves (MD0116); and,
//! live, the pods ambient does not capture (MD0111), judged by the same diagnosis as `pod
//! NAME` from the listed ztunnel and CNI agent pods.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;

use super::Input;
use super::runtime::{Fetched, pod_context};
use crate::diagnosis::{self, Lookup};
use crate::findings::messages::{self, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::ambient::{self, Request};
use crate::istio::config::Labels;
use crate::istio::dataplane::{has_proxy, inject_value, root_namespace};
use crate::istio::injection::{self, INJECTION_LABEL, PodFacts, REVISION_LABEL};
use crate::istio::waypoint::{
    self, GATEWAY_NAME_LABEL, Observed, PolicyScope, USE_WAYPOINT_LABEL, Use, WaypointRef,
};
use crate::kube::kind::Kind;
use crate::kube::selector::labels_match;
use crate::kube::snapshot::{Located, Object, Snapshot, Workload};

/// The codes of this analyzer.
pub const CODES: &[&MessageType] = &[
    messages::MD0111,
    messages::MD0112,
    messages::MD0113,
    messages::MD0114,
    messages::MD0116,
    messages::MD0403,
    messages::MD0404,
];

/// A workload in ambient mode: its namespace and labels (a pod's, or a template's).
pub(super) struct AmbientWorkload<'a> {
    pub(super) namespace: &'a str,
    pub(super) labels: &'a Labels,
    pub(super) name: String,
}

fn injects_by_namespace(labels: Option<&Labels>) -> bool {
    labels.is_some_and(|l| {
        l.get(INJECTION_LABEL).map(String::as_str) == Some("enabled")
            || l.contains_key(REVISION_LABEL)
    })
}

/// Whether the pods of a workload's template will have a sidecar: an `istio-proxy` in the
/// template, its own `sidecar.istio.io/inject=true`, else its namespace's injection label (not
/// opted out).
pub(super) fn template_gets_sidecar(input: &Input, w: &Located<Workload>) -> bool {
    let ns = w.object.namespace().unwrap_or("");
    let meta = w.object.template.metadata.as_ref();
    has_proxy(w.object.template.spec.as_ref())
        || meta.and_then(inject_value) == Some(true)
        || (injects_by_namespace(input.namespaces().labels(ns))
            && meta.and_then(inject_value) != Some(false))
}

/// The pods without sidecar and the pod templates (of workloads without pods read) that ask
/// for ambient mode.
pub(super) fn ambient_workloads<'a>(input: &Input<'a>) -> Vec<AmbientWorkload<'a>> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    let snapshot = input.snapshot;
    let namespaces = input.namespaces();
    let mut out = Vec::new();
    for p in snapshot.all_pods() {
        let ns = p.object.namespace().unwrap_or("");
        let labels = p.object.metadata.labels.as_ref();
        if has_proxy(p.object.spec.as_ref()) {
            continue;
        }
        if matches!(
            ambient::request(namespaces.labels(ns), labels),
            Request::Asked(_)
        ) {
            out.push(AmbientWorkload {
                namespace: ns,
                labels: labels.unwrap_or(&EMPTY),
                name: format!("Pod {ns}/{}", p.object.name()),
            });
        }
    }
    for w in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none())
    {
        let ns = w.object.namespace().unwrap_or("");
        let meta = w.object.template.metadata.as_ref();
        let labels = meta.and_then(|m| m.labels.as_ref());
        let ns_labels = namespaces.labels(ns);
        if !template_gets_sidecar(input, w)
            && matches!(ambient::request(ns_labels, labels), Request::Asked(_))
        {
            out.push(AmbientWorkload {
                namespace: ns,
                labels: labels.unwrap_or(&EMPTY),
                name: format!("{} {ns}/{}", w.object.kind(), w.object.name()),
            });
        }
    }
    out
}

/// Whether the Gateway API Gateways and the pods were read, so a missing one means missing.
pub(super) struct Reads {
    pub(super) gateways: bool,
    /// Live objects have status and pods: Programmed and ready pods are judged too.
    pub(super) pods: bool,
}

impl Reads {
    pub(super) fn of(snapshot: &Snapshot) -> Reads {
        Reads {
            gateways: !snapshot.unavailable.contains_key(&Kind::KubernetesGateways),
            pods: !snapshot.unavailable.contains_key(&Kind::Pods),
        }
    }
}

/// The readiness of each pod of Gateway `namespace/name` (labelled
/// `gateway.networking.k8s.io/gateway-name=NAME`), pods being deleted left out.
pub(super) fn gateway_pods_ready(snapshot: &Snapshot, namespace: &str, name: &str) -> Vec<bool> {
    snapshot
        .all_pods()
        .filter(|p| {
            p.object.namespace() == Some(namespace)
                && p.object.label(GATEWAY_NAME_LABEL) == Some(name)
                && !crate::kube::lifecycle::is_ending(&p.object)
        })
        .map(|p| {
            p.object
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
        .collect()
}

/// Why the waypoint carries no traffic of a Service (`for_service: Some(true)`), of a
/// workload (`Some(false)`) or of a namespace's Services and workloads (`None`).
pub(super) fn judge(
    input: &Input,
    w: &WaypointRef,
    live: bool,
    for_service: Option<bool>,
) -> Option<String> {
    let gateway = input
        .config
        .k8s_gateways
        .iter()
        .find(|g| g.namespace() == w.namespace && g.name() == w.name);
    if let (Some(g), Some(service)) = (gateway, for_service)
        && g.spec.gateway_class_name == waypoint::WAYPOINT_CLASS
        && let Some(why) = waypoint::traffic_mismatch(
            waypoint::traffic_for(g.resource.object.metadata.labels.as_ref()),
            service,
        )
    {
        return Some(format!("Gateway {} {why}", w.full_name()));
    }
    let pods_ready = live.then(|| gateway_pods_ready(input.snapshot, &w.namespace, &w.name));
    // A Gateway from a file has no status: only its existence and class are judged.
    let live_gateway = gateway.is_some_and(|g| g.resource.origin.file.is_none());
    waypoint::problem(
        w,
        &Observed {
            gateway: gateway.map(|g| (&g.spec, &g.resource.object.status)),
            pods_ready: pods_ready.filter(|_| live_gateway || gateway.is_none()),
        },
    )
}

pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let reads = Reads::of(snapshot);
    let workloads = ambient_workloads(input);
    waypoint_users(input, &reads, &workloads, out);
    if !snapshot
        .unavailable
        .contains_key(&Kind::AuthorizationPolicies)
    {
        policies(input, &reads, &workloads, out);
    }
    sidecar_and_ambient(input, out);
    sidecar_asked_when_captured(input, out);
    if reads.pods {
        not_captured(snapshot, out);
    }
}

/// MD0113 and MD0114 for every Namespace, Service and Pod that names a waypoint.
fn waypoint_users(
    input: &Input,
    reads: &Reads,
    workloads: &[AmbientWorkload],
    out: &mut Vec<Finding>,
) {
    let snapshot = input.snapshot;
    let ambient_in = |ns: &str| workloads.iter().any(|w| w.namespace == ns);
    let mut report = |resource: ResourceRef,
                      who: String,
                      ambient: bool,
                      why_not: &str,
                      w: WaypointRef,
                      live: bool,
                      for_service: Option<bool>| {
        if !ambient {
            out.push(Finding::new(
                messages::MD0114::message(
                    who,
                    format!("{USE_WAYPOINT_LABEL}={}", w.name),
                    why_not.to_string(),
                ),
                Some(resource),
            ));
            return;
        }
        if !reads.gateways {
            return;
        }
        if let Some(problem) = judge(input, &w, live && reads.pods, for_service) {
            out.push(Finding::new(
                messages::MD0113::message(who, w.full_name(), w.by, problem),
                Some(resource),
            ));
        }
    };
    for n in snapshot.namespaces.iter() {
        let labels = n.object.metadata.labels.as_ref();
        let Use::Waypoint(w) = waypoint::waypoint_use(labels, "namespace", None, n.object.name())
        else {
            continue;
        };
        let ambient = is_ambient_namespace(&n.object) || ambient_in(n.object.name());
        report(
            ResourceRef::of(n),
            format!("Namespace {}", n.object.name()),
            ambient,
            "no workload of the namespace is in ambient mode (istio.io/dataplane-mode=ambient)",
            w,
            n.origin.file.is_none(),
            None,
        );
    }
    for s in snapshot.services.iter() {
        let labels = s.object.metadata.labels.as_ref();
        if labels.is_none_or(|l| !l.contains_key(USE_WAYPOINT_LABEL)) {
            continue;
        }
        let ns = s.object.namespace().unwrap_or("");
        let Use::Waypoint(w) = waypoint::waypoint_use(labels, "service", None, ns) else {
            continue;
        };
        let selector = s.object.spec.as_ref().and_then(|sp| sp.selector.as_ref());
        let ambient = namespace_is_ambient(input, ns)
            || workloads.iter().any(|wl| {
                wl.namespace == ns
                    && selector.is_some_and(|sel| !sel.is_empty() && labels_match(sel, wl.labels))
            })
            // A Service without selector (ServiceEntry-like, or its endpoints set by hand) is
            // not judged by its pods.
            || selector.is_none_or(|sel| sel.is_empty());
        report(
            ResourceRef::of(s),
            format!("Service {ns}/{}", s.object.name()),
            ambient,
            "neither its namespace nor the pods it selects are in ambient mode",
            w,
            s.origin.file.is_none(),
            Some(true),
        );
    }
    for p in snapshot.pods.iter() {
        let labels = p.object.metadata.labels.as_ref();
        if labels.is_none_or(|l| !l.contains_key(USE_WAYPOINT_LABEL)) {
            continue;
        }
        let ns = p.object.namespace().unwrap_or("");
        let Use::Waypoint(w) = waypoint::waypoint_use(labels, "pod", None, ns) else {
            continue;
        };
        let (ambient, why) = if has_proxy(p.object.spec.as_ref()) {
            (
                false,
                "the pod has a sidecar, which never sends through a waypoint",
            )
        } else {
            (
                matches!(
                    ambient::request(input.namespaces().labels(ns), labels),
                    Request::Asked(_)
                ),
                "the pod is not in ambient mode (istio.io/dataplane-mode=ambient on it or its namespace)",
            )
        };
        report(
            ResourceRef::of(p),
            format!("Pod {ns}/{}", p.object.name()),
            ambient,
            why,
            w,
            p.origin.file.is_none(),
            Some(false),
        );
    }
}

fn is_ambient_namespace(n: &Namespace) -> bool {
    n.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(crate::istio::injection::DATAPLANE_MODE_LABEL))
        .is_some_and(|v| v == "ambient")
}

pub(super) fn namespace_is_ambient(input: &Input, ns: &str) -> bool {
    input
        .namespaces()
        .of(ns)
        .iter()
        .any(|n| is_ambient_namespace(&n.object))
}

/// Why a Service of an ambient namespace has no waypoint that takes its traffic (it names none,
/// opts out, or its waypoint carries no traffic), or `None` when it has one, when its namespace
/// is not in ambient mode, or when there is no such Service (the reference analyzers say that).
pub(super) fn service_without_waypoint(
    input: &Input,
    reads: &Reads,
    namespace: &str,
    name: &str,
) -> Option<String> {
    if !namespace_is_ambient(input, namespace) {
        return None;
    }
    let service = input
        .snapshot
        .all_services()
        .find(|s| s.object.namespace() == Some(namespace) && s.object.name() == name)?;
    waypoint_problem(
        input,
        reads,
        service.object.metadata.labels.as_ref(),
        "service",
        namespace,
        service.origin.file.is_none(),
    )
}

/// Why a ServiceEntry of an ambient namespace has no waypoint that takes its traffic, as
/// [`service_without_waypoint`] for a Service: its own `istio.io/use-waypoint` label, else its
/// namespace's.
fn service_entry_without_waypoint(
    input: &Input,
    reads: &Reads,
    namespace: &str,
    name: &str,
) -> Option<String> {
    if !namespace_is_ambient(input, namespace) {
        return None;
    }
    let entry = input
        .config
        .service_entries
        .iter()
        .find(|e| e.namespace() == namespace && e.name() == name)?;
    waypoint_problem(
        input,
        reads,
        entry.resource.object.metadata.labels.as_ref(),
        "service entry",
        namespace,
        entry.resource.origin.file.is_none(),
    )
}

/// Why an object of `namespace` with the labels `own` (`what`: `service`, `service entry`)
/// has no waypoint that takes its traffic, or `None` when it has one. `live`: read from the
/// cluster, so the waypoint's pods are judged too (when they were read).
fn waypoint_problem(
    input: &Input,
    reads: &Reads,
    own: Option<&BTreeMap<String, String>>,
    what: &str,
    namespace: &str,
    live: bool,
) -> Option<String> {
    match waypoint::waypoint_use(own, what, input.namespaces().labels(namespace), namespace) {
        Use::Waypoint(w) => judge(input, &w, live && reads.pods, Some(true))
            .map(|problem| format!("uses waypoint {} ({}), but {problem}", w.full_name(), w.by)),
        Use::OptedOut => Some("opts out of waypoints (istio.io/use-waypoint=none)".to_string()),
        Use::Unset => {
            Some("names no waypoint (istio.io/use-waypoint on it or its namespace)".to_string())
        }
    }
}

/// MD0403 and MD0404.
fn policies(input: &Input, reads: &Reads, workloads: &[AmbientWorkload], out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let root = root_namespace(snapshot);
    for ap in &input.config.authorization_policies {
        let ns = ap.namespace();
        let name = format!("{ns}/{}", ap.name());
        if waypoint::policy_scope(&ap.spec) == PolicyScope::Targeted {
            if !reads.gateways {
                continue;
            }
            let refs = ap
                .spec
                .target_refs
                .iter()
                .chain(ap.spec.target_ref.as_ref());
            for r in refs.filter(|r| r.kind == "Service" || r.kind == "ServiceEntry") {
                let target_ns = if r.namespace.is_empty() {
                    ns
                } else {
                    r.namespace.as_str()
                };
                let why = if r.kind == "Service" {
                    service_without_waypoint(input, reads, target_ns, &r.name)
                } else {
                    service_entry_without_waypoint(input, reads, target_ns, &r.name)
                };
                let Some(why) = why else {
                    continue;
                };
                out.push(Finding::new(
                    messages::MD0404::message(
                        name.clone(),
                        format!("{} {target_ns}/{}", r.kind, r.name),
                        why,
                    ),
                    Some(ResourceRef::of(ap.resource)),
                ));
            }
            continue;
        }
        let Some(gap) = waypoint::ztunnel_gap(&ap.spec) else {
            continue;
        };
        let selected: Vec<String> = workloads
            .iter()
            .filter(|w| {
                if ns == root && ap.spec.selector.is_none() {
                    return true;
                }
                w.namespace == ns
                    && ap
                        .spec
                        .selector
                        .as_ref()
                        .is_none_or(|s| labels_match(&s.match_labels, w.labels))
            })
            .map(|w| w.name.clone())
            .collect();
        if selected.is_empty() {
            continue;
        }
        let shown = crate::formats::text::join_names(&selected);
        out.push(Finding::new(
            messages::MD0403::message(name, shown, gap),
            Some(ResourceRef::of(ap.resource)),
        ));
    }
}

/// MD0112: a pod with a sidecar that is also asked into ambient mode.
fn sidecar_and_ambient(input: &Input, out: &mut Vec<Finding>) {
    let namespaces = input.namespaces();
    for p in input.snapshot.pods.iter() {
        if !has_proxy(p.object.spec.as_ref()) || crate::kube::lifecycle::is_ending(&p.object) {
            continue;
        }
        let ns = p.object.namespace().unwrap_or("");
        if let Request::Asked(by) =
            ambient::request(namespaces.labels(ns), p.object.metadata.labels.as_ref())
        {
            out.push(Finding::new(
                messages::MD0112::message(format!("{ns}/{}", p.object.name()), by),
                Some(ResourceRef::of(p)),
            ));
        }
    }
}

/// MD0116: a pod ambient captured, without sidecar, that asks for one itself; what a
/// re-created pod would get says what the request does.
fn sidecar_asked_when_captured(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let namespaces = input.namespaces();
    for p in snapshot.pods.iter() {
        if crate::kube::lifecycle::is_ending(&p.object) {
            continue;
        }
        let ns = p.object.namespace().unwrap_or("");
        let ns_labels = namespaces.labels(ns);
        let Some(asked_by) = ambient::captured_pod_sidecar_ask(&p.object, ns_labels) else {
            continue;
        };
        let facts = PodFacts {
            namespace: ns,
            namespace_labels: ns_labels,
            labels: p.object.metadata.labels.as_ref(),
            annotations: p.object.metadata.annotations.as_ref(),
            host_network: p
                .object
                .spec
                .as_ref()
                .and_then(|s| s.host_network)
                .unwrap_or(false),
        };
        let consequence = ambient::sidecar_ask_consequence(
            &asked_by,
            &injection::decide(&facts, &snapshot.webhooks),
        );
        out.push(Finding::new(
            messages::MD0116::message(format!("{ns}/{}", p.object.name()), asked_by, consequence),
            Some(ResourceRef::of(p)),
        ));
    }
}

/// MD0111, live: each running ambient pod judged as `pod NAME` judges it.
fn not_captured(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    // Running pods only: a pod that is starting is judged by `pod NAME`, which knows its age.
    let live: Vec<&Located<_>> = snapshot
        .pods
        .iter()
        .filter(|p| {
            p.origin.file.is_none()
                && p.object.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        })
        .collect();
    let mut contexts: BTreeMap<(Option<std::sync::Arc<str>>, &str), diagnosis::PodContext> =
        BTreeMap::new();
    for p in live {
        let ns = p.object.namespace().unwrap_or("");
        let key = (p.origin.cluster.clone(), ns);
        let context = contexts.entry(key).or_insert_with(|| {
            let fetched = Fetched {
                istio_namespace: Lookup::Unknown("not read by analyze".to_string()),
                root_cert: Lookup::Unknown("not read by analyze".to_string()),
            };
            pod_context(snapshot, p.origin.cluster.as_ref(), ns, fetched, None)
        });
        if !diagnosis::is_ambient_pod(&p.object, context) {
            continue;
        }
        let d = diagnosis::diagnose(&p.object, context, None);
        out.extend(
            d.findings
                .into_iter()
                .filter(|f| f.code() == "MD0111")
                .map(|mut f| {
                    if let Some(r) = f.resource.as_mut() {
                        *r = ResourceRef::of(p);
                    }
                    f
                }),
        );
    }
}
