//! Namespace-wide RequestAuthentications, Telemetries and WasmPlugins (no selector, no
//! `targetRefs`) in an ambient namespace that no proxy applies (MD0420, run by the analyzer
//! `ambient-l7`, files and live).
//!
//! Such an object is for the proxies of its namespace. As istiod hands them out: a sidecar (or
//! a gateway's proxy) applies all three; ztunnel none; a waypoint applies the namespace-wide
//! Telemetry of its own namespace and of the Services it serves (`applicableTelemetries`), but
//! never a namespace-wide RequestAuthentication or WasmPlugin (`ShouldAttachPolicy`: "waypoints
//! never use selector"). So the object is reported when the namespace is in ambient mode
//! (`istio.io/dataplane-mode=ambient`), it has ambient workloads and no pod or workload of it
//! has (or will have) a sidecar or a gateway proxy, and, for a Telemetry, no usable waypoint
//! serves the namespace (its own label or one of its Services'). The root namespace's
//! (mesh-wide) objects are not judged.

use super::Input;
use super::ambient::{AmbientWorkload, Reads, judge, namespace_is_ambient, template_gets_sidecar};
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::Labels;
use crate::istio::dataplane::{PROXY_CONTAINER, has_proxy, root_namespace};
use crate::istio::waypoint::{self, GATEWAY_NAME_LABEL, Use, WAYPOINT_CLASS};
use crate::kube::snapshot::{ConfigObject, Located, Object};

/// The proxies of a namespace that apply namespace-wide configuration.
#[derive(Default)]
struct Proxies {
    /// A sidecar or a gateway's proxy (pod, or a template that will have one).
    other: bool,
    /// A waypoint's pod (ready, when read live).
    waypoint: bool,
}

/// Whether a pod (or template) with these labels and containers is a waypoint's proxy: its
/// `istio-proxy` runs as `proxy waypoint`, or its `gateway.networking.k8s.io/gateway-name`
/// names a Gateway of class `istio-waypoint` in its namespace.
fn is_waypoint(
    input: &Input,
    ns: &str,
    labels: Option<&Labels>,
    spec: Option<&k8s_openapi::api::core::v1::PodSpec>,
) -> bool {
    let runs_as_waypoint = spec.is_some_and(|s| {
        s.containers
            .iter()
            .any(|c| c.name == PROXY_CONTAINER && c.args.iter().flatten().any(|a| a == "waypoint"))
    });
    let named = labels
        .and_then(|l| l.get(GATEWAY_NAME_LABEL))
        .is_some_and(|g| {
            input.config.k8s_gateways.iter().any(|gw| {
                gw.namespace() == ns
                    && gw.name() == g
                    && gw.spec.gateway_class_name == WAYPOINT_CLASS
            })
        });
    runs_as_waypoint || named
}

fn proxies(input: &Input, ns: &str) -> Proxies {
    let snapshot = input.snapshot;
    let mut found = Proxies::default();
    for p in snapshot.pods.iter().filter(|p| {
        p.object.namespace() == Some(ns) && !crate::kube::lifecycle::is_ending(&p.object)
    }) {
        let spec = p.object.spec.as_ref();
        if !has_proxy(spec) {
            continue;
        }
        if is_waypoint(input, ns, p.object.metadata.labels.as_ref(), spec) {
            let ready = p.origin.file.is_some()
                || p.object
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
            found.waypoint |= ready;
        } else {
            found.other = true;
        }
    }
    for w in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none() && w.object.namespace() == Some(ns))
    {
        let template = &w.object.template;
        let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
        if template_gets_sidecar(input, w)
            && !is_waypoint(input, ns, labels, template.spec.as_ref())
        {
            found.other = true;
        }
    }
    found
}

/// Whether a waypoint that carries traffic serves namespace `ns`: the one its own label names,
/// or one a Service of it names.
fn waypoint_serves(input: &Input, reads: &Reads, ns: &str) -> bool {
    let snapshot = input.snapshot;
    let ns_labels = input.namespaces().labels(ns);
    let usable = |w: &waypoint::WaypointRef, live: bool, for_service: Option<bool>| {
        judge(input, w, live && reads.pods, for_service).is_none()
    };
    let namespace_live = input
        .namespaces()
        .of(ns)
        .iter()
        .any(|n| n.origin.file.is_none());
    if let Use::Waypoint(w) = waypoint::waypoint_use(None, "namespace", ns_labels, ns)
        && usable(&w, namespace_live, None)
    {
        return true;
    }
    snapshot
        .all_services()
        .filter(|s| s.object.namespace() == Some(ns))
        .any(|s| {
            let own = s.object.metadata.labels.as_ref();
            matches!(waypoint::waypoint_use(own, "service", ns_labels, ns),
                Use::Waypoint(w) if usable(&w, s.origin.file.is_none(), Some(true)))
        })
}

/// What nothing does when a namespace-wide object of `kind` is applied nowhere.
fn lost(kind: &str) -> &'static str {
    match kind {
        "RequestAuthentication" => {
            "nothing validates JWTs there, and a request with an invalid or expired token is not refused (401)"
        }
        "Telemetry" => "its metrics, access logging and tracing settings are applied nowhere",
        _ => "its Wasm plugin runs nowhere",
    }
}

/// MD0420 for every namespace-wide object of a proxy-only kind that no proxy applies.
pub(super) fn analyze(
    input: &Input,
    reads: &Reads,
    workloads: &[AmbientWorkload],
    out: &mut Vec<Finding>,
) {
    if !reads.pods {
        return;
    }
    let c = &input.config;
    let mut wide: Vec<(&str, &Located<ConfigObject>)> = Vec::new();
    for r in &c.request_authentications {
        if r.spec.selector.match_labels.is_empty()
            && r.spec.target_refs.is_empty()
            && r.spec.target_ref.is_none()
        {
            wide.push(("RequestAuthentication", r.resource));
        }
    }
    for t in &c.telemetries {
        if t.spec
            .selector
            .as_ref()
            .is_none_or(|s| s.match_labels.is_empty())
            && t.spec.target_refs.is_empty()
            && t.spec.target_ref.is_none()
        {
            wide.push(("Telemetry", t.resource));
        }
    }
    for w in &c.wasm_plugins {
        if w.spec
            .selector
            .as_ref()
            .is_none_or(|s| s.match_labels.is_empty())
            && w.spec.target_refs.is_empty()
            && w.spec.target_ref.is_none()
        {
            wide.push(("WasmPlugin", w.resource));
        }
    }
    let root = root_namespace(input.snapshot);
    for (kind, resource) in wide {
        let ns = resource.object.namespace().unwrap_or("");
        if ns == root || !namespace_is_ambient(input, ns) {
            continue;
        }
        let ambient: Vec<String> = workloads
            .iter()
            .filter(|w| w.namespace == ns)
            .map(|w| w.name.clone())
            .collect();
        if ambient.is_empty() {
            continue;
        }
        let found = proxies(input, ns);
        if found.other {
            continue;
        }
        let (why, fix) = if kind == "Telemetry" {
            // Unread Gateways leave the namespace's waypoints unknown: not judged.
            if !reads.gateways || found.waypoint || waypoint_serves(input, reads, ns) {
                continue;
            }
            (
                "no waypoint that carries traffic serves the namespace (neither the namespace nor its Services name a usable one)".to_string(),
                format!(
                    "Give the namespace a waypoint (istioctl waypoint apply -n {ns} --enroll-namespace), which applies the namespace's Telemetry, or attach this one to a waypoint with targetRefs."
                ),
            )
        } else {
            (
                format!(
                    "a waypoint applies only the {kind}s attached to it with targetRefs, never a namespace-wide one"
                ),
                format!(
                    "Attach it to the workloads' waypoint with targetRefs (kind: Gateway, group: gateway.networking.k8s.io; or kind: Service for one Service), and give the namespace a waypoint if it has none (istioctl waypoint apply -n {ns} --enroll-namespace)."
                ),
            )
        };
        out.push(Finding::new(
            messages::MD0420::message(
                kind.to_string(),
                format!("{ns}/{}", resource.object.name()),
                ns.to_string(),
                crate::formats::text::join_names(&ambient),
                why,
                lost(kind).to_string(),
                fix,
            ),
            Some(ResourceRef::of(resource)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::ambient::ambient_workloads;
    use crate::kube::kind::Kind;
    use crate::kube::snapshot::Snapshot;
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use serde_json::{Value, json};

    fn config(api_version: &str, kind: &str, name: &str, spec: Value) -> Located<ConfigObject> {
        Located::new(ConfigObject {
            api_version: api_version.into(),
            kind: kind.into(),
            metadata: serde_json::from_value(json!({"name": name, "namespace": "amb"})).unwrap(),
            spec,
            status: Value::Null,
        })
    }

    /// A running pod of namespace amb with these containers (`args` of istio-proxy, if any).
    fn pod(name: &str, proxy: Option<&[&str]>, ready: bool) -> Located<Pod> {
        let mut containers = vec![json!({"name": "app", "image": "app"})];
        if let Some(args) = proxy {
            containers.push(json!({"name": "istio-proxy", "image": "proxyv2", "args": args}));
        }
        Located::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "amb", "labels": {"app": name}},
                "spec": {"containers": containers},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
            }))
            .unwrap(),
        )
    }

    fn snapshot() -> Snapshot {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "amb",
            "labels": {"istio.io/dataplane-mode": "ambient"}}}))
        .unwrap();
        Snapshot {
            namespaces: vec![Located::new(ns)],
            pods: vec![pod("web", None, true)],
            config: vec![
                config(
                    "security.istio.io/v1",
                    "RequestAuthentication",
                    "jwt",
                    json!({"jwtRules": [{"issuer": "https://issuer.example.com"}]}),
                ),
                config(
                    "telemetry.istio.io/v1",
                    "Telemetry",
                    "logs",
                    json!({"selector": {"matchLabels": {}}, "accessLogging": [{"providers": [{"name": "envoy"}]}]}),
                ),
            ],
            ..Snapshot::default()
        }
    }

    /// The (kind name) of each MD0420.
    fn run(snapshot: &Snapshot) -> Vec<String> {
        let input = Input::of(snapshot);
        let mut out = Vec::new();
        let workloads = ambient_workloads(&input);
        analyze(&input, &Reads::of(snapshot), &workloads, &mut out);
        out.iter()
            .map(|f| {
                f.message
                    .split(" has no selector")
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn live_who_applies_namespace_wide_config_in_an_ambient_namespace() {
        let mut s = snapshot();
        assert_eq!(
            run(&s),
            ["RequestAuthentication amb/jwt", "Telemetry amb/logs"]
        );
        // A ready waypoint pod of the namespace applies its Telemetry, never its
        // RequestAuthentication; one that is not ready applies nothing.
        s.pods
            .push(pod("waypoint-1", Some(&["proxy", "waypoint"]), false));
        assert_eq!(
            run(&s),
            ["RequestAuthentication amb/jwt", "Telemetry amb/logs"]
        );
        s.pods[1] = pod("waypoint-1", Some(&["proxy", "waypoint"]), true);
        assert_eq!(run(&s), ["RequestAuthentication amb/jwt"]);
        // A sidecar (or a gateway's proxy) applies both.
        s.pods
            .push(pod("legacy", Some(&["proxy", "sidecar"]), true));
        assert!(run(&s).is_empty());
        // Pods not read: not judged.
        let mut s = snapshot();
        s.unavailable.insert(Kind::Pods, "forbidden".into());
        assert!(run(&s).is_empty());
        // Gateways not read: the RequestAuthentication is judged, the Telemetry is not.
        let mut s = snapshot();
        s.unavailable
            .insert(Kind::KubernetesGateways, "forbidden".into());
        assert_eq!(run(&s), ["RequestAuthentication amb/jwt"]);
    }

    #[test]
    fn a_selector_or_targetrefs_is_not_namespace_wide() {
        let mut s = snapshot();
        s.config[0].object.spec = json!({"selector": {"matchLabels": {"app": "web"}}});
        s.config[1].object.spec =
            json!({"targetRefs": [{"kind": "Service", "group": "", "name": "web"}]});
        assert!(run(&s).is_empty());
    }
}
