//! DestinationRules with a `workloadSelector`, and what they do to the clients of their namespace
//! that they do not select ([`crate::istio::destination_rules`] has Istio's rules):
//!
//! - MD0418: for a host, the namespace's rules are all selector rules, so a client they do not
//!   select uses no DestinationRule for it: the rule of the host's (or the root) namespace that
//!   it would use without them is hidden from it.
//! - MD0419: a rule without selector whose `exportTo` is `["."]`, the one Istio gives selector
//!   rules, is merged into a selector rule of the same host and has no entry of its own: it
//!   applies only to the workloads that rule selects.
//!
//! Both are said only when the namespace has a workload with a sidecar that no selector rule for
//! the host selects (named in the message): without one, nobody is left out.

use std::collections::BTreeSet;

use super::Input;
use super::dr_merge::policy_text;
use crate::findings::messages::{self, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{DestinationRule, Typed};
use crate::istio::dataplane::{Backend, Dataplane, root_namespace};
use crate::istio::destination_rules::{
    Client, Index, Merged, index_entries, istio_order, selector,
};
use crate::istio::mtls::{destination_rule_among, hidden_from, rule_hosts, rules_for};
use crate::kube::snapshot::Object;

pub const CODES: &[&MessageType] = &[messages::MD0418, messages::MD0419];

fn name(rule: &Typed<'_, DestinationRule>) -> String {
    format!("{}/{}", rule.namespace(), rule.name())
}

fn labels_text(rule: &Typed<'_, DestinationRule>) -> String {
    let labels: Vec<String> = selector(rule)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    labels.join(",")
}

/// What the hidden rule would give its clients.
fn lost_text(hidden: &Merged<'_, '_>) -> String {
    let mut parts = Vec::new();
    let subsets: Vec<String> = hidden
        .subsets()
        .iter()
        .map(|(s, _)| s.name.clone())
        .collect();
    if !subsets.is_empty() {
        parts.push(format!(
            "its subsets {} do not exist for them, so a route to one gets 503 (response flag NC)",
            subsets.join(", ")
        ));
    }
    if let Some((policy, _)) = hidden.traffic_policy() {
        parts.push(format!(
            "its trafficPolicy ({}) does not apply to them",
            policy_text(policy)
        ));
    }
    if parts.is_empty() {
        parts.push("it sets nothing, so nothing is lost yet".into());
    }
    parts.join("; ")
}

/// At most three names, then how many more.
fn names_text(names: &[String]) -> String {
    let mut text = names.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 3 {
        text.push_str(&format!(" and {} more", names.len() - 3));
    }
    text
}

pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let config = &input.config;
    if !config
        .destination_rules
        .iter()
        .any(|r| r.spec.workload_selector.is_some())
    {
        return;
    }
    let root = root_namespace(snapshot);
    let private = config.destination_rules_private_by_default;
    let rules = rule_hosts(config);
    // The hosts clients ask for: every Service's, and every rule's that names one host.
    let mut hosts: BTreeSet<String> = snapshot
        .all_services()
        .map(|s| {
            format!(
                "{}.{}.svc.cluster.local",
                s.object.name(),
                s.object.namespace().unwrap_or("")
            )
        })
        .collect();
    hosts.extend(
        rules
            .iter()
            .filter(|(_, h)| !h.starts_with('*'))
            .map(|(_, h)| h.clone()),
    );
    let mut reported: BTreeSet<(&'static str, String, String)> = BTreeSet::new();
    for host in &hosts {
        let matching = rules_for(&rules, host);
        let namespaces: BTreeSet<&str> = matching
            .iter()
            .filter(|(r, _)| r.spec.workload_selector.is_some())
            .map(|(r, _)| r.namespace())
            .collect();
        for ns in namespaces {
            let own: Vec<&Typed<'_, DestinationRule>> = matching
                .iter()
                .filter(|(r, _)| r.namespace() == ns)
                .map(|(r, _)| *r)
                .collect();
            let selectors: Vec<&Typed<'_, DestinationRule>> = own
                .iter()
                .copied()
                .filter(|r| r.spec.workload_selector.is_some())
                .collect();
            // The namespace's clients with a sidecar that no selector rule for the host selects.
            let backends = input.backends().selected(ns, None);
            // A pod that a listed workload's template stands for is said through the workload.
            let templated = |b: &Backend<'_>| {
                b.replicas.is_none()
                    && backends.iter().any(|w| {
                        w.replicas.is_some()
                            && !w.labels.is_empty()
                            && w.labels.iter().all(|(k, v)| b.labels.get(k) == Some(v))
                    })
            };
            let left_out: Vec<String> = backends
                .iter()
                .filter(|b| b.dataplane == Dataplane::Sidecar && !templated(b))
                .filter(|b| {
                    !selectors.iter().any(|r| {
                        selector(r)
                            .is_some_and(|l| l.iter().all(|(k, v)| b.labels.get(k) == Some(v)))
                    })
                })
                .map(|b| b.what.clone())
                .collect();
            if left_out.is_empty() {
                continue;
            }
            let clients = names_text(&left_out);
            let unselected = Client::unselected(ns);
            if destination_rule_among(&matching, root, unselected, host, private).is_some() {
                continue;
            }
            // MD0419 first: the rule meant for the others is inside a selector rule.
            let mut swallowed = false;
            let exact: Vec<&Typed<'_, DestinationRule>> = matching
                .iter()
                .filter(|(r, h)| r.namespace() == ns && h == host)
                .map(|(r, _)| *r)
                .collect();
            let entries = index_entries(&exact, Index::Local, private);
            for entry in &entries {
                let Some(_) = selector(entry.head()) else {
                    continue;
                };
                for rule in entry.from.iter().skip(1) {
                    if rule.spec.workload_selector.is_some()
                        || entries.iter().any(|e| std::ptr::eq(e.head(), *rule))
                    {
                        continue;
                    }
                    swallowed = true;
                    if !reported.insert(("MD0419", name(rule), host.clone())) {
                        continue;
                    }
                    out.push(Finding::new(
                        messages::MD0419::message(
                            name(rule),
                            name(entry.head()),
                            labels_text(entry.head()),
                            host.clone(),
                            clients.clone(),
                            name(rule),
                        ),
                        Some(ResourceRef::of(rule.resource)),
                    ));
                }
            }
            if swallowed {
                continue;
            }
            let Some(hidden) = hidden_from(&matching, root, unselected, host, private) else {
                continue;
            };
            let mut sorted = selectors.clone();
            sorted.sort_by(|a, b| istio_order(a, b));
            let first = sorted[0];
            if !reported.insert(("MD0418", name(first), host.clone())) {
                continue;
            }
            out.push(Finding::new(
                messages::MD0418::message(
                    name(first),
                    labels_text(first),
                    host.clone(),
                    ns.to_string(),
                    clients,
                    hidden.names(),
                    lost_text(&hidden),
                    ns.to_string(),
                ),
                Some(ResourceRef::of(first.resource)),
            ));
        }
    }
}
