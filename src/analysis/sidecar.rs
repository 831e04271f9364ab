//! Istio's `sidecar.SelectorAnalyzer`: workload selectors that select nothing (IST0101), two
//! Sidecars selecting one pod (IST0110), two namespace-wide Sidecars (IST0111), Sidecars for
//! ambient workloads (IST0167). A selector matches pods and the pods that workload templates
//! will create.

use std::collections::BTreeMap;

use super::Input;
use super::gateway::selector_string;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{Sidecar, Typed};
use crate::kube::selector::labels_match;
use crate::kube::snapshot::Object;

const AMBIENT_REDIRECTION: &str = "ambient.istio.io/redirection";
const DATAPLANE_MODE: &str = "istio.io/dataplane-mode";

fn names(list: &[&Typed<Sidecar>]) -> Vec<String> {
    let mut names: Vec<String> = list.iter().map(|s| s.name().to_string()).collect();
    names.sort();
    names
}

/// Whether a pod is ambient, and the Sidecars that select it.
type Selected<'s, 'a> = (bool, Vec<&'s Typed<'a, Sidecar>>);

/// `sidecar.SelectorAnalyzer`.
pub fn selectors(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    // pod (namespace, name) -> (ambient, sidecars selecting it)
    let mut pods: BTreeMap<(&str, &str), Selected> = BTreeMap::new();
    let mut namespace_wide: BTreeMap<&str, Vec<&Typed<Sidecar>>> = BTreeMap::new();
    let templates = snapshot.pod_labels();
    for sc in &input.config.sidecars {
        let selector = match &sc.spec.workload_selector {
            Some(w) if !w.labels.is_empty() => &w.labels,
            _ => {
                namespace_wide.entry(sc.namespace()).or_default().push(sc);
                continue;
            }
        };
        let mut found = false;
        for pod in snapshot.all_pods() {
            if pod.object.namespace().unwrap_or("") != sc.namespace() {
                continue;
            }
            let empty = Default::default();
            if labels_match(
                selector,
                pod.object.metadata.labels.as_ref().unwrap_or(&empty),
            ) {
                found = true;
                let ambient = pod.object.annotation(AMBIENT_REDIRECTION) == Some("enabled");
                pods.entry((sc.namespace(), pod.object.name()))
                    .or_insert((ambient, Vec::new()))
                    .1
                    .push(sc);
            }
        }
        // A workload template that will create matching pods counts as found.
        found = found
            || templates.iter().any(|p| {
                p.pod.is_none() && p.namespace == sc.namespace() && labels_match(selector, p.labels)
            });
        if !found {
            let line = selector.keys().next().and_then(|k| {
                sc.resource
                    .origin
                    .lines
                    .as_ref()
                    .and_then(|t| {
                        t.key("spec")?
                            .key("workloadSelector")?
                            .key("labels")?
                            .key(k)
                    })
                    .map(|t| t.line)
            });
            let mut reference = ResourceRef::of(sc.resource);
            reference.line = line.or(reference.line);
            out.push(Finding::new(
                messages::IST0101::message("selector", selector_string(selector)),
                Some(reference),
            ));
        }
    }
    let mut reported: Vec<(&str, &str)> = Vec::new();
    for ((ns, pod), (ambient, list)) in &pods {
        if list.len() == 1 && !ambient {
            continue;
        }
        let all = names(list);
        for sc in list {
            if *ambient {
                let key = (sc.namespace(), sc.name());
                if !reported.contains(&key) {
                    reported.push(key);
                    out.push(Finding::new(
                        messages::IST0167::message(
                            "selected workload is in ambient mode, the policy has no impact",
                        ),
                        Some(ResourceRef::of(sc.resource)),
                    ));
                }
                continue;
            }
            out.push(Finding::new(
                messages::IST0110::message(all.clone(), *ns, *pod),
                Some(ResourceRef::of(sc.resource).at_field(sc.resource, "metadata.name")),
            ));
        }
    }
    for (ns, list) in &namespace_wide {
        let ambient = snapshot.namespace(ns).is_some_and(|n| {
            let o = &n.object;
            o.label("istio-injection") != Some("enabled")
                && o.label(crate::istio::injection::REVISION_LABEL)
                    .is_none_or(str::is_empty)
                && o.label(DATAPLANE_MODE) == Some("ambient")
        });
        if ambient {
            for sc in list {
                let key = (sc.namespace(), sc.name());
                if !reported.contains(&key) {
                    reported.push(key);
                    out.push(Finding::new(
                        messages::IST0167::message(
                            "namespace is in ambient mode, the policy has no impact",
                        ),
                        Some(ResourceRef::of(sc.resource)),
                    ));
                }
            }
            continue;
        }
        if list.len() > 1 {
            let all = names(list);
            for sc in list {
                out.push(Finding::new(
                    messages::IST0111::message(all.clone(), *ns),
                    Some(ResourceRef::of(sc.resource)),
                ));
            }
        }
    }
}
