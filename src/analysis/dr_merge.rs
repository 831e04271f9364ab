//! mesh-doctor's DestinationRule merge check: rules for one host that Istio merges into one
//! ([`crate::istio::destination_rules`]), where the merge silently drops what a later rule says.
//!
//! - MD0414: a later rule's top-level `trafficPolicy` is ignored, because an earlier rule of the
//!   merge has one (Istio keeps the first).
//! - MD0415: a later rule's subset is dropped, because an earlier rule of the merge has a subset
//!   of that name (the earlier one's labels select the endpoints).
//! - MD0416 (Info): a subset without labels, which selects every endpoint of the host.
//!
//! Only the merged entries some client uses are judged: the last entry of a namespace's own
//! index for the host, and in the exported index the last one exported to some namespace. Rules
//! that do not merge (other namespaces, other `exportTo`, a `workloadSelector`) say nothing.

use std::collections::BTreeSet;

use super::Input;
use super::schema_destinationrule::rejected;
use crate::findings::messages::{self, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{DestinationRule, Subset, TrafficPolicy, Typed};
use crate::istio::destination_rules::{
    Client, Index, Merged, by_namespace_and_host, chosen, created, host_of, index_entries,
    istio_order, ordered_by_name,
};

pub const CODES: &[&MessageType] = &[messages::MD0414, messages::MD0415, messages::MD0416];

fn name(rule: &Typed<'_, DestinationRule>) -> String {
    format!("{}/{}", rule.namespace(), rule.name())
}

/// What a top-level traffic policy sets: `tls.mode DISABLE, loadBalancer`.
pub(super) fn policy_text(policy: &TrafficPolicy) -> String {
    let mut parts = Vec::new();
    if let Some(tls) = &policy.tls {
        if tls.mode.is_empty() {
            parts.push("tls".to_string());
        } else {
            parts.push(format!("tls.mode {}", tls.mode));
        }
    }
    for (set, field) in [
        (policy.load_balancer.is_some(), "loadBalancer"),
        (policy.connection_pool.is_some(), "connectionPool"),
        (policy.outlier_detection.is_some(), "outlierDetection"),
    ] {
        if set {
            parts.push(field.to_string());
        }
    }
    if !policy.port_level_settings.is_empty() {
        let ports: Vec<String> = policy
            .port_level_settings
            .iter()
            .filter_map(|s| s.port.as_ref().map(|p| p.number.to_string()))
            .collect();
        parts.push(format!(
            "portLevelSettings for port(s) {}",
            ports.join(", ")
        ));
    }
    if parts.is_empty() {
        "an empty trafficPolicy".into()
    } else {
        parts.join(", ")
    }
}

/// Why `first` comes before `later` in Istio's order.
fn order_text(first: &Typed<'_, DestinationRule>, later: &Typed<'_, DestinationRule>) -> String {
    if ordered_by_name(first, later) {
        return format!(
            "{} comes first by name (no creation time is known, as in files: Istio orders rules created in the same second by name)",
            name(first)
        );
    }
    match (created(first), created(later)) {
        (Some(a), Some(b)) if a == b => format!(
            "both were created at {a}, and {} comes first by name",
            name(first)
        ),
        (Some(a), Some(b)) => format!("{} is older (created {a}, the other {b})", name(first)),
        _ => format!(
            "{} has no creation time (as in a file), which Istio counts as the oldest",
            name(first)
        ),
    }
}

fn labels_text(subset: &Subset) -> String {
    if subset.labels.is_empty() {
        return "no labels: every endpoint of the host".into();
    }
    let labels: Vec<String> = subset
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("pods labelled {}", labels.join(","))
}

/// How the `exportTo` of `later` lets it merge into `first`'s.
fn export_text(
    first: &Typed<'_, DestinationRule>,
    later: &Typed<'_, DestinationRule>,
) -> &'static str {
    let set = |r: &Typed<'_, DestinationRule>| -> BTreeSet<String> {
        r.spec.export_to.iter().cloned().collect()
    };
    if set(first) == set(later) {
        "same exportTo"
    } else {
        "an exportTo that includes all of the first rule's, which Istio merges too"
    }
}

/// The merged entries of every namespace and host that some client uses.
fn used_entries<'c, 'a>(
    rules: &[&'c Typed<'a, DestinationRule>],
    default_private: bool,
) -> Vec<Merged<'c, 'a>> {
    let mut out: Vec<Merged<'c, 'a>> = Vec::new();
    let push = |entry: &Merged<'c, 'a>, out: &mut Vec<Merged<'c, 'a>>| {
        let same = |m: &Merged<'c, 'a>| {
            m.from.len() == entry.from.len()
                && m.from
                    .iter()
                    .zip(&entry.from)
                    .all(|(a, b)| std::ptr::eq(*a, *b))
        };
        if !out.iter().any(same) {
            out.push(entry.clone());
        }
    };
    for ((ns, _), group) in by_namespace_and_host(rules) {
        if group.len() < 2 {
            continue;
        }
        let local = index_entries(&group, Index::Local, default_private);
        if let Some(entry) = chosen(&local, Index::Local, Client::unselected(&ns)) {
            push(entry, &mut out);
        }
        let exported = index_entries(&group, Index::Exported, default_private);
        // The namespaces that can choose differently: each one an entry names, and any other.
        let mut clients: BTreeSet<&str> =
            exported.iter().flat_map(|e| e.named_namespaces()).collect();
        clients.insert("");
        clients.remove(ns.as_str());
        for client in clients {
            if let Some(entry) = chosen(&exported, Index::Exported, Client::unselected(client)) {
                push(entry, &mut out);
            }
        }
    }
    out
}

pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    // A rule Istio's validation refuses (IST0106) never reaches istiod: it merges with nothing.
    // The validation (a second reading of the spec) is asked only of the rules it can change
    // something for: those that share their namespace and host with another rule, and those
    // with a subset without labels.
    let all: Vec<&Typed<'_, DestinationRule>> = input.config.destination_rules.iter().collect();
    let shared: std::collections::HashSet<*const Typed<'_, DestinationRule>> =
        by_namespace_and_host(&all)
            .into_values()
            .filter(|group| group.len() >= 2)
            .flatten()
            .map(|r| r as *const _)
            .collect();
    let rules: Vec<&Typed<'_, DestinationRule>> = all
        .into_iter()
        .filter(|r| {
            let matters = shared.contains(&(*r as *const _))
                || r.spec.subsets.iter().any(|s| s.labels.is_empty());
            !(matters && rejected(r.resource))
        })
        .collect();
    let mut dropped_subsets: BTreeSet<(String, String)> = BTreeSet::new();
    let mut reported: BTreeSet<(&str, String, String)> = BTreeSet::new();
    for entry in used_entries(&rules, input.config.destination_rules_private_by_default) {
        if entry.from.len() < 2 {
            continue;
        }
        let host = host_of(entry.head());
        for (ignored, winner) in entry.ignored_policies() {
            if !reported.insert(("MD0414", name(ignored), name(winner))) {
                continue;
            }
            let (Some(theirs), Some(kept)) = (
                ignored.spec.traffic_policy.as_ref(),
                winner.spec.traffic_policy.as_ref(),
            ) else {
                continue;
            };
            out.push(Finding::new(
                messages::MD0414::message(
                    name(ignored),
                    policy_text(theirs),
                    name(winner),
                    host.clone(),
                    export_text(winner, ignored),
                    order_text(winner, ignored),
                    policy_text(kept),
                    name(ignored),
                    name(winner),
                ),
                Some(ResourceRef::of(ignored.resource)),
            ));
        }
        for dropped in entry.dropped_subsets() {
            dropped_subsets.insert((name(dropped.rule), dropped.subset.name.clone()));
            if !reported.insert((
                "MD0415",
                name(dropped.rule),
                format!("{}/{}", name(dropped.kept_rule), dropped.subset.name),
            )) {
                continue;
            }
            out.push(Finding::new(
                messages::MD0415::message(
                    name(dropped.rule),
                    dropped.subset.name.clone(),
                    labels_text(dropped.subset),
                    name(dropped.kept_rule),
                    host.clone(),
                    export_text(dropped.kept_rule, dropped.rule),
                    order_text(dropped.kept_rule, dropped.rule),
                    labels_text(dropped.kept),
                    dropped.subset.name.clone(),
                    labels_text(dropped.kept),
                ),
                Some(ResourceRef::of(dropped.rule.resource)),
            ));
        }
    }
    // Two subsets of one name in one rule are Istio's schema error (IST0106): not judged here.
    let mut rules_sorted = rules.clone();
    rules_sorted.sort_by(|a, b| istio_order(a, b));
    for rule in rules_sorted {
        for subset in rule.spec.subsets.iter().filter(|s| s.labels.is_empty()) {
            if dropped_subsets.contains(&(name(rule), subset.name.clone())) {
                continue;
            }
            out.push(Finding::new(
                messages::MD0416::message(name(rule), subset.name.clone(), host_of(rule)),
                Some(ResourceRef::of(rule.resource)),
            ));
        }
    }
}
