//! Istio's `auth.AuthorizationPoliciesAnalyzer`: policies that select no workload in the mesh
//! (IST0127) and source namespaces that match no namespace (IST0101).
//!
//! As Istio: a policy in the root namespace (`rootNamespace` of the mesh config, else
//! `istio-system`) with a selector needs a matching workload anywhere; without one it applies
//! to the mesh and is never reported. Elsewhere, a namespace-wide policy needs a workload in its
//! namespace and a selector needs a matching one there. Workloads are the pods in the mesh (an
//! `istio-proxy` container, `sidecar.istio.io/inject: "true"`, or a namespace labelled
//! `istio-injection=enabled`) or in ambient mode. Unlike Istio, the pod templates of
//! Deployments, StatefulSets, DaemonSets, Jobs and CronJobs whose pods will be in the mesh count
//! too, so a policy whose Deployment has no pods yet (scaled to zero, not yet scheduled, or
//! manifests analysed alone) is not reported (istio#51273).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Namespace, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::Input;
use super::gateway::selector_string;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::Labels;
use crate::istio::dataplane::root_namespace;
use crate::istio::dataplane::{AMBIENT_REDIRECTION, DATAPLANE_MODE, has_proxy, inject_value};
use crate::istio::injection::{INJECTION_LABEL, REVISION_LABEL};
use crate::kube::selector::labels_match;
use crate::kube::snapshot::{Object, Snapshot};

/// Istio's `PodInMesh` or `PodInAmbientMode` for an existing pod.
fn pod_counts(namespaces: &Namespaces, meta: &ObjectMeta, spec: Option<&PodSpec>) -> bool {
    let ambient = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(AMBIENT_REDIRECTION))
        .is_some_and(|v| v == "enabled");
    if ambient || has_proxy(spec) {
        return true;
    }
    if let Some(inject) = inject_value(meta) {
        return inject;
    }
    let ns = meta.namespace.as_deref().unwrap_or("");
    namespaces
        .get(ns)
        .is_some_and(|n| n.label(INJECTION_LABEL) == Some("enabled"))
}

/// For a workload's pod template: whether the pods it will create will be in the mesh (injected
/// by the namespace's `istio-injection=enabled` or `istio.io/rev`, or asked for by the
/// template) or in ambient mode.
fn template_counts(
    namespaces: &Namespaces,
    namespace: &str,
    meta: &ObjectMeta,
    spec: Option<&PodSpec>,
) -> bool {
    if has_proxy(spec) {
        return true;
    }
    if let Some(inject) = inject_value(meta) {
        return inject;
    }
    let Some(o) = namespaces.get(namespace) else {
        return false;
    };
    o.label(INJECTION_LABEL) == Some("enabled")
        || o.label(REVISION_LABEL).is_some_and(|r| !r.is_empty())
        || o.label(DATAPLANE_MODE) == Some("ambient")
        || meta
            .labels
            .as_ref()
            .and_then(|l| l.get(DATAPLANE_MODE))
            .is_some_and(|m| m == "ambient")
}

/// The Namespaces by name, in scope and (live with `-n`) beyond it.
type Namespaces<'s> = HashMap<&'s str, &'s Namespace>;

fn namespaces(snapshot: &Snapshot) -> Namespaces<'_> {
    snapshot
        .all_namespaces()
        .map(|n| (n.object.name(), &n.object))
        .collect()
}

/// namespace -> the label sets of the workloads that count (pods, then templates).
fn workloads_in_mesh(snapshot: &Snapshot) -> BTreeMap<&str, Vec<&Labels>> {
    static EMPTY: Labels = BTreeMap::new();
    let namespaces = namespaces(snapshot);
    let mut map: BTreeMap<&str, Vec<&Labels>> = BTreeMap::new();
    for pod in snapshot.all_pods() {
        let meta = &pod.object.metadata;
        let ns = pod.object.namespace().unwrap_or("");
        let entry = map.entry(ns).or_default();
        if pod_counts(&namespaces, meta, pod.object.spec.as_ref()) {
            entry.push(meta.labels.as_ref().unwrap_or(&EMPTY));
        }
    }
    for w in snapshot
        .workloads
        .iter()
        .filter(|w| w.object.owner.is_none())
    {
        let ns = w.object.namespace().unwrap_or("");
        let template = &w.object.template;
        let Some(meta) = template.metadata.as_ref() else {
            continue;
        };
        if template_counts(&namespaces, ns, meta, template.spec.as_ref()) {
            map.entry(ns)
                .or_default()
                .push(meta.labels.as_ref().unwrap_or(&EMPTY));
        }
    }
    map
}

/// Istio's namespace expression match: `*`, `*suffix`, `prefix*`, else equal ignoring case.
fn namespace_matches(ns: &str, exp: &str) -> bool {
    if exp == "*" {
        return true;
    }
    if let Some(suffix) = exp.strip_prefix('*') {
        return ns.ends_with(suffix);
    }
    if let Some(prefix) = exp.strip_suffix('*') {
        return ns.starts_with(prefix);
    }
    ns.eq_ignore_ascii_case(exp)
}

/// `auth.AuthorizationPoliciesAnalyzer`.
pub fn authorization_policies(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let root = root_namespace(snapshot);
    let workloads = workloads_in_mesh(snapshot);
    let empty = Vec::new();
    // A namespace that objects of the snapshot live in exists, Namespace object or not.
    let existing = snapshot.existing_namespace_names();
    for ap in &input.config.authorization_policies {
        let ns = ap.namespace();
        let no_workload = |labels: String| {
            Finding::new(
                messages::IST0127::message(labels),
                Some(ResourceRef::of(ap.resource)),
            )
        };
        match &ap.spec.selector {
            Some(selector) if ns == root => {
                let labels = &selector.match_labels;
                if !workloads
                    .values()
                    .flatten()
                    .any(|l| labels_match(labels, l))
                {
                    out.push(no_workload(selector_string(labels)));
                }
            }
            None if ns == root => {}
            None => {
                if workloads.get(ns).unwrap_or(&empty).is_empty() {
                    out.push(no_workload(String::new()));
                }
            }
            Some(selector) => {
                let labels = &selector.match_labels;
                if !workloads
                    .get(ns)
                    .unwrap_or(&empty)
                    .iter()
                    .any(|l| labels_match(labels, l))
                {
                    out.push(no_workload(selector_string(labels)));
                }
            }
        }
        for (i, rule) in ap.spec.rules.iter().enumerate() {
            for (j, from) in rule.from.iter().enumerate() {
                let Some(source) = from.source.as_ref() else {
                    continue;
                };
                let listed = source.namespaces.iter().enumerate();
                let negated = source.not_namespaces.iter().enumerate();
                for (k, exp) in listed.chain(negated) {
                    // The name itself first (one lookup), then every namespace (a pattern,
                    // or a name in another case).
                    let found = existing.contains(exp.as_str())
                        || existing.iter().any(|n| namespace_matches(n, exp));
                    if found {
                        continue;
                    }
                    // Istio points at `namespaces[k]` for both lists (for `notNamespaces` that
                    // is another field, or none): the same line is cited here.
                    let path = format!("spec.rules[{i}].from[{j}].source.namespaces[{k}]");
                    out.push(Finding::new(
                        messages::IST0101::message("namespace", exp),
                        Some(ResourceRef::of(ap.resource).at_field(ap.resource, &path)),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::namespace_matches;

    #[test]
    fn namespace_expressions_match_as_istio() {
        assert!(namespace_matches("prod-httpbin", "prod-*"));
        assert!(namespace_matches("httpbin-test", "*-test"));
        assert!(namespace_matches("anything", "*"));
        assert!(namespace_matches("HttpBin", "httpbin"));
        assert!(!namespace_matches("httpbin", "bogus-*"));
        assert!(!namespace_matches("httpbin", "*-bogus"));
    }
}
