//! Istio's Telemetry analyzers: `telemetry.ProviderAnalyzer` (access logging without providers
//! and no mesh default, IST0157), `telemetry.SelectorAnalyzer` (selectors that select no pod,
//! IST0101; two Telemetries selecting one pod, IST0159), `telemetry.DefaultSelectorAnalyzer`
//! (two namespace-wide Telemetries in a namespace, IST0160) and `telemetry.LightstepAnalyzer`
//! (tracing through a Lightstep provider, deprecated, IST0002).

use std::collections::BTreeMap;

use serde_json::Value;

use super::Input;
use super::gateway::selector_string;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{Telemetry, Typed};
use crate::kube::selector::labels_match;

fn names(list: &[&Typed<Telemetry>]) -> Vec<String> {
    let mut names: Vec<String> = list.iter().map(|t| t.name().to_string()).collect();
    names.sort();
    names
}

/// `telemetry.ProviderAnalyzer`: when the mesh config names no default access-logging
/// provider, an access-logging entry that is not disabled and names no provider is ignored.
pub fn providers(input: &Input, out: &mut Vec<Finding>) {
    let has_default = input
        .snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.pointer("/defaultProviders/accessLogging"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if has_default {
        return;
    }
    for t in &input.config.telemetries {
        for logging in t.spec.access_logging.iter() {
            if logging.disabled == Some(true) {
                continue;
            }
            if logging.providers.is_empty() {
                out.push(Finding::new(
                    messages::IST0157::message(t.name(), t.namespace()),
                    Some(ResourceRef::of(t.resource)),
                ));
            }
        }
    }
}

/// `telemetry.SelectorAnalyzer`. A selector also matches the pods a workload template will
/// create (no IST0101 for a Deployment without pods yet); conflicts are about pods that exist.
pub fn selectors(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let templates = snapshot.pod_labels();
    let mut pods: BTreeMap<(&str, &str), Vec<&Typed<Telemetry>>> = BTreeMap::new();
    for t in &input.config.telemetries {
        let Some(selector) = t.spec.selector.as_ref().map(|s| &s.match_labels) else {
            continue;
        };
        if selector.is_empty() {
            continue;
        }
        let mut found = false;
        for p in templates.iter().filter(|p| p.namespace == t.namespace()) {
            if !labels_match(selector, p.labels) {
                continue;
            }
            found = true;
            if let Some(pod) = p.pod {
                pods.entry((p.namespace, pod)).or_default().push(t);
            }
        }
        if !found {
            let first = selector.keys().next().map(String::as_str).unwrap_or("");
            let path = format!("spec.selector.matchLabels.{first}");
            out.push(Finding::new(
                messages::IST0101::message("selector", selector_string(selector)),
                Some(ResourceRef::of(t.resource).at_field(t.resource, &path)),
            ));
        }
    }
    for ((ns, pod), list) in &pods {
        if list.len() < 2 {
            continue;
        }
        let all = names(list);
        for t in list {
            out.push(Finding::new(
                messages::IST0159::message(all.clone(), *ns, *pod),
                Some(ResourceRef::of(t.resource).at_field(t.resource, "metadata.name")),
            ));
        }
    }
}

/// `telemetry.DefaultSelectorAnalyzer`: more than one Telemetry without a selector in a
/// namespace.
pub fn default_selectors(input: &Input, out: &mut Vec<Finding>) {
    let mut by_namespace: BTreeMap<&str, Vec<&Typed<Telemetry>>> = BTreeMap::new();
    for t in &input.config.telemetries {
        if t.spec.selector.is_none() {
            by_namespace.entry(t.namespace()).or_default().push(t);
        }
    }
    for (ns, list) in &by_namespace {
        if list.len() < 2 {
            continue;
        }
        let all = names(list);
        for t in list {
            out.push(Finding::new(
                messages::IST0160::message(all.clone(), *ns),
                Some(ResourceRef::of(t.resource)),
            ));
        }
    }
}

/// `telemetry.LightstepAnalyzer`: tracing through an extension provider of the mesh config
/// that is a Lightstep one.
pub fn lightstep(input: &Input, out: &mut Vec<Finding>) {
    let lightstep: Vec<&str> = input
        .snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.get("extensionProviders"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("lightstep").is_some_and(|l| !l.is_null()))
        .filter_map(|p| p.get("name").and_then(Value::as_str))
        .collect();
    if lightstep.is_empty() {
        return;
    }
    for t in &input.config.telemetries {
        for tracing in t.spec.tracing.iter() {
            for p in tracing.providers.iter() {
                if lightstep.contains(&p.name.as_str()) {
                    out.push(Finding::new(messages::IST0002::message(format!(
                            "The Lightstep provider {} is deprecated, please migrate to OpenTelemetry provider.",
                            p.name
                        )
                        ), Some(ResourceRef::of(t.resource))));
                }
            }
        }
    }
}
