//! How Istio merges the DestinationRules of one host into the one a client uses (istiod's
//! `setDestinationRules` and `mergeDestinationRule`, with `ENABLE_ENHANCED_DESTINATIONRULE_MERGE`
//! on, its default). Pure.
//!
//! - **Order**: rules are taken oldest first: by `creationTimestamp` (a rule without one, as in a
//!   file, counts as the oldest, Go's zero time), then by name, then by namespace. Rules written
//!   in files usually have no creation time: they are then ordered by name, which is Istio's
//!   order for rules created in the same second (one `kubectl apply` of them all).
//! - **Which merge**: rules of one namespace whose host, made a fully qualified name in their
//!   namespace, is the same string, and whose `exportTo` sets are equal (or the later one's is a
//!   superset of a non-empty earlier one's), both without a `workloadSelector`. Istio does this
//!   twice, in the index of the namespace's own clients (the rules visible there) and in the
//!   index of exported rules (those not private to their namespace).
//! - **The merged rule**: the first rule, with the subsets of the later ones appended unless a
//!   subset of that name is already there (then the later one is dropped), and the top-level
//!   `trafficPolicy` of a later rule only when the rule so far has none. A later rule's
//!   `exportTo` is never taken: the sets are equal or the first one's stays.
//! - **Which entry a client uses**: among the entries of its namespace's index for the host, the
//!   last one (the sidecar's catch-all); in the exported index, the last one exported to the
//!   client's namespace.
//!
//! - **Workload selectors**: a rule with a `workloadSelector` is private to its namespace
//!   (Istio gives it `exportTo: ["."]` whatever it says) and comes before every rule without
//!   one. Rules of equal selectors merge; a rule without selector merges into a selector rule
//!   when its `exportTo` set is the selector rule's (`["."]`: it then has no entry of its own)
//!   or a superset of it (it merges and keeps its own entry too). A client of the namespace uses
//!   the first selector entry whose labels are all among its own, else the last entry without
//!   selector, else none: the rules of the Service's and the root namespace are then not
//!   looked at.
//! - **The mesh's default**: a rule without `exportTo` is private to its namespace when the mesh
//!   config's `defaultDestinationRuleExportTo` holds `.` (only `.` and `*` are honoured there).
//! - **The root namespace's clients** look first at the root namespace's private rules only,
//!   then at the exported rules of the Service's and the root namespace.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::config::host::to_fqdn;
use super::config::{DestinationRule, Labels, Subset, TrafficPolicy, Typed};

/// One of istiod's indexes of a namespace's DestinationRules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Index {
    /// The rules the namespace's own clients see (`exportTo` empty, `*`, `.` or the namespace).
    Local,
    /// The rules exported to other namespaces (all but those private to the namespace).
    Exported,
    /// The rules private to their namespace: the index the root namespace's own clients use.
    Private,
}

impl Index {
    /// True when `rule` is in this index of its namespace. `default_private`: the mesh's
    /// `defaultDestinationRuleExportTo` holds `.`.
    pub fn holds(self, rule: &Typed<'_, DestinationRule>, default_private: bool) -> bool {
        let set = export_set(rule);
        let own = rule.namespace();
        let private = (set.is_empty() && default_private)
            || (set.len() == 1 && (set.contains(".") || set.contains(own)));
        match self {
            Index::Local => {
                set.is_empty() || set.contains("*") || set.contains(".") || set.contains(own)
            }
            Index::Exported => !private,
            Index::Private => private,
        }
    }
}

/// The `exportTo` Istio gives the rule: `["."]` for a rule with a workload selector.
fn export_set(rule: &Typed<'_, DestinationRule>) -> BTreeSet<String> {
    if rule.spec.workload_selector.is_some() {
        return BTreeSet::from([".".to_string()]);
    }
    rule.spec.export_to.iter().cloned().collect()
}

/// The labels of the rule's workload selector, if it has one.
pub fn selector<'r>(rule: &'r Typed<'_, DestinationRule>) -> Option<&'r Labels> {
    rule.spec
        .workload_selector
        .as_ref()
        .map(|s| &s.match_labels)
}

/// Who asks for a host's DestinationRule: the client's namespace and, when known, its labels.
/// `labels: None` is a client that no workload selector selects.
#[derive(Clone, Copy, Debug)]
pub struct Client<'l> {
    pub namespace: &'l str,
    pub labels: Option<&'l Labels>,
}

impl<'l> Client<'l> {
    /// A client of `namespace` that no workload selector selects.
    pub fn unselected(namespace: &'l str) -> Self {
        Client {
            namespace,
            labels: None,
        }
    }

    fn selected_by(&self, selector: &Labels) -> bool {
        self.labels
            .is_some_and(|l| selector.iter().all(|(k, v)| l.get(k) == Some(v)))
    }
}

/// Istio's order of DestinationRules: those with a workload selector first, then creation time
/// (none first), then name, then namespace.
pub fn istio_order(a: &Typed<'_, DestinationRule>, b: &Typed<'_, DestinationRule>) -> Ordering {
    let unselected = |r: &Typed<'_, DestinationRule>| r.spec.workload_selector.is_none();
    unselected(a)
        .cmp(&unselected(b))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| a.name().cmp(b.name()))
        .then_with(|| a.namespace().cmp(b.namespace()))
}

/// True when neither rule has a creation time (rules read from files): Istio's order between
/// them is then the one of their names.
pub fn ordered_by_name(a: &Typed<'_, DestinationRule>, b: &Typed<'_, DestinationRule>) -> bool {
    created(a).is_none() && created(b).is_none()
}

/// The rule's creation time, if known.
pub fn created(rule: &Typed<'_, DestinationRule>) -> Option<jiff::Timestamp> {
    rule.resource
        .object
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|c| c.0)
}

/// A subset that a merge dropped, and the one of the same name that stays.
#[derive(Debug)]
pub struct DroppedSubset<'c, 'a> {
    pub subset: &'c Subset,
    pub rule: &'c Typed<'a, DestinationRule>,
    pub kept: &'c Subset,
    pub kept_rule: &'c Typed<'a, DestinationRule>,
}

/// The DestinationRule Istio builds from one or more rules of one namespace and host.
#[derive(Clone, Debug)]
pub struct Merged<'c, 'a> {
    /// The rules merged, in Istio's order: the first is the rule kept, the others add to it.
    pub from: Vec<&'c Typed<'a, DestinationRule>>,
    /// The first rule's `exportTo`.
    export: BTreeSet<String>,
}

impl<'c, 'a> Merged<'c, 'a> {
    /// The rule the merged one starts from.
    pub fn head(&self) -> &'c Typed<'a, DestinationRule> {
        self.from[0]
    }

    /// `ns/name` of every rule merged, in order, joined by `, `.
    pub fn names(&self) -> String {
        let names: Vec<String> = self
            .from
            .iter()
            .map(|r| format!("{}/{}", r.namespace(), r.name()))
            .collect();
        names.join(", ")
    }

    /// The top-level traffic policy that applies, and the rule it comes from: the first rule's
    /// that has one.
    pub fn traffic_policy(&self) -> Option<(&'c TrafficPolicy, &'c Typed<'a, DestinationRule>)> {
        self.from
            .iter()
            .find_map(|r| r.spec.traffic_policy.as_ref().map(|p| (p, *r)))
    }

    /// The rules whose top-level `trafficPolicy` is ignored, each with the rule whose policy
    /// applies instead.
    pub fn ignored_policies(
        &self,
    ) -> Vec<(
        &'c Typed<'a, DestinationRule>,
        &'c Typed<'a, DestinationRule>,
    )> {
        let Some((_, winner)) = self.traffic_policy() else {
            return Vec::new();
        };
        self.from
            .iter()
            .filter(|r| !std::ptr::eq(**r, winner) && r.spec.traffic_policy.is_some())
            .map(|r| (*r, winner))
            .collect()
    }

    /// The subsets of the merged rule, each with its rule: the first of each name.
    pub fn subsets(&self) -> Vec<(&'c Subset, &'c Typed<'a, DestinationRule>)> {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut out = Vec::new();
        for rule in &self.from {
            for subset in &rule.spec.subsets {
                if seen.insert(subset.name.as_str()) {
                    out.push((subset, *rule));
                }
            }
        }
        out
    }

    /// The subset `name` of the merged rule, with its rule.
    pub fn subset(&self, name: &str) -> Option<(&'c Subset, &'c Typed<'a, DestinationRule>)> {
        self.subsets().into_iter().find(|(s, _)| s.name == name)
    }

    /// The subsets of later rules that a subset of the same name of an earlier rule shadows.
    /// (Two subsets of one name in one rule are Istio's schema error, IST0106, not this.)
    pub fn dropped_subsets(&self) -> Vec<DroppedSubset<'c, 'a>> {
        let kept = self.subsets();
        let mut out = Vec::new();
        for (i, rule) in self.from.iter().enumerate().skip(1) {
            for subset in &rule.spec.subsets {
                let Some((k, k_rule)) = kept.iter().find(|(s, _)| s.name == subset.name) else {
                    continue;
                };
                let earlier = self.from[..i].iter().any(|r| std::ptr::eq(*r, *k_rule));
                if earlier {
                    out.push(DroppedSubset {
                        subset,
                        rule,
                        kept: k,
                        kept_rule: k_rule,
                    });
                }
            }
        }
        out
    }

    /// True when a client in `client_ns` sees this entry of the exported index.
    pub fn exported_to(&self, client_ns: &str) -> bool {
        self.export.is_empty() || self.export.contains("*") || self.export.contains(client_ns)
    }

    /// The namespaces this entry's `exportTo` names (not `.` nor `*`).
    pub fn named_namespaces(&self) -> impl Iterator<Item = &str> {
        self.export
            .iter()
            .map(String::as_str)
            .filter(|e| *e != "." && *e != "*")
    }
}

/// Istio's merge of `rules` (one namespace, one host, the rules of one [`Index`]), in Istio's
/// order: the entries of the index for the host.
pub fn merge<'c, 'a>(rules: &[&'c Typed<'a, DestinationRule>]) -> Vec<Merged<'c, 'a>> {
    // Two documents of one name are one object: the later one, as `kubectl apply` leaves it.
    let mut sorted: Vec<&'c Typed<'a, DestinationRule>> = Vec::new();
    for rule in rules {
        sorted.retain(|r| r.name() != rule.name() || r.namespace() != rule.namespace());
        sorted.push(rule);
    }
    sorted.sort_by(|a, b| istio_order(a, b));
    let mut entries: Vec<Merged<'c, 'a>> = Vec::new();
    for rule in sorted {
        let set = export_set(rule);
        // As `mergeDestinationRule`: the flag the last entry leaves decides.
        let mut separately = true;
        for entry in &mut entries {
            if set == entry.export {
                separately = false;
            } else if !entry.export.is_empty() && set.is_superset(&entry.export) {
                separately = true;
            } else {
                separately = true;
                continue;
            }
            let (theirs, ours) = (selector(entry.head()), selector(rule));
            match (theirs, ours) {
                (Some(a), Some(b)) if a != b => {
                    separately = true;
                    continue;
                }
                (None, None) | (Some(_), Some(_)) => separately = false,
                _ => {}
            }
            entry.from.push(rule);
        }
        if separately {
            entries.push(Merged {
                from: vec![rule],
                export: set,
            });
        }
    }
    entries
}

/// The entries of `index` for one namespace and host: `rules` are the rules of that namespace
/// whose host ([`host_of`]) is that host.
pub fn index_entries<'c, 'a>(
    rules: &[&'c Typed<'a, DestinationRule>],
    index: Index,
    default_private: bool,
) -> Vec<Merged<'c, 'a>> {
    let of: Vec<&'c Typed<'a, DestinationRule>> = rules
        .iter()
        .copied()
        .filter(|r| index.holds(r, default_private))
        .collect();
    merge(&of)
}

/// The rules without a workload selector grouped by namespace and host ([`host_of`]), as istiod
/// keys them.
pub fn by_namespace_and_host<'c, 'a>(
    rules: &[&'c Typed<'a, DestinationRule>],
) -> BTreeMap<(String, String), Vec<&'c Typed<'a, DestinationRule>>> {
    let mut out: BTreeMap<(String, String), Vec<&'c Typed<'a, DestinationRule>>> = BTreeMap::new();
    for rule in rules.iter().filter(|r| r.spec.workload_selector.is_none()) {
        out.entry((rule.namespace().to_string(), host_of(rule)))
            .or_default()
            .push(rule);
    }
    out
}

/// The rule's host made a fully qualified name in its namespace, as Istio keys it.
pub fn host_of(rule: &Typed<'_, DestinationRule>) -> String {
    to_fqdn(rule.namespace(), &rule.spec.host)
}

/// The entry `client` uses among `entries` of `index` (istiod's `SidecarScope.DestinationRule`):
/// the first entry of a selector rule of the client's namespace that selects it, else the last
/// entry without selector (in the exported index, the last one exported to the client's
/// namespace), else none.
pub fn chosen<'e, 'c, 'a>(
    entries: &'e [Merged<'c, 'a>],
    index: Index,
    client: Client<'_>,
) -> Option<&'e Merged<'c, 'a>> {
    let mut catch_all = None;
    for entry in entries {
        match selector(entry.head()) {
            None => {
                if index != Index::Exported || entry.exported_to(client.namespace) {
                    catch_all = Some(entry);
                }
            }
            Some(labels) => {
                if entry.head().namespace() == client.namespace && client.selected_by(labels) {
                    return Some(entry);
                }
            }
        }
    }
    catch_all
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::istio::config::Config;
    use crate::kube::snapshot::Snapshot;
    use crate::source::files::{FileOptions, LoadStats, load_text};

    fn snapshot(text: &str) -> Snapshot {
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

    fn group<'c, 'a>(
        all: &[&'c Typed<'a, DestinationRule>],
    ) -> Vec<&'c Typed<'a, DestinationRule>> {
        let mut groups = by_namespace_and_host(all);
        assert_eq!(groups.len(), 1);
        groups.pop_first().unwrap().1
    }

    fn dr(name: &str, extra: &str) -> String {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: {name}\n  namespace: demo\nspec:\n  host: server\n{extra}---\n"
        )
    }

    #[test]
    fn the_first_rule_by_name_keeps_its_policy_and_subsets() {
        let text = [
            dr(
                "b",
                "  trafficPolicy:\n    tls:\n      mode: DISABLE\n  subsets:\n  - name: v1\n    labels: {version: b}\n  - name: v2\n    labels: {version: v2}\n",
            ),
            dr(
                "a",
                "  trafficPolicy:\n    tls:\n      mode: ISTIO_MUTUAL\n  subsets:\n  - name: v1\n    labels: {version: a}\n",
            ),
        ]
        .concat();
        let snapshot = snapshot(&text);
        let config = Config::of(&snapshot);
        let all: Vec<_> = config.destination_rules.iter().collect();
        let got = index_entries(&group(&all), Index::Local, false);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].names(), "demo/a, demo/b");
        let (policy, from) = got[0].traffic_policy().unwrap();
        assert_eq!(from.name(), "a");
        assert_eq!(policy.tls.as_ref().unwrap().mode, "ISTIO_MUTUAL");
        let ignored = got[0].ignored_policies();
        assert_eq!(ignored.len(), 1);
        assert_eq!(ignored[0].0.name(), "b");
        let dropped = got[0].dropped_subsets();
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].rule.name(), "b");
        assert_eq!(dropped[0].kept.labels["version"], "a");
        let names: Vec<&str> = got[0]
            .subsets()
            .iter()
            .map(|(s, _)| s.name.as_str())
            .collect();
        assert_eq!(names, ["v1", "v2"]);
    }

    #[test]
    fn other_export_sets_do_not_merge_and_the_last_entry_is_used() {
        let text = [
            dr("a", "  exportTo: [\".\"]\n  trafficPolicy: {}\n"),
            dr("b", "  exportTo: [\"*\"]\n  trafficPolicy: {}\n"),
        ]
        .concat();
        let snapshot = snapshot(&text);
        let config = Config::of(&snapshot);
        let all: Vec<_> = config.destination_rules.iter().collect();
        let got = index_entries(&group(&all), Index::Local, false);
        assert_eq!(got.len(), 2);
        assert_eq!(
            chosen(&got, Index::Local, Client::unselected("demo"))
                .unwrap()
                .names(),
            "demo/b"
        );
        let exported = index_entries(&group(&all), Index::Exported, false);
        assert_eq!(exported.len(), 1);
        assert_eq!(exported[0].names(), "demo/b");
        // A later rule exported to more namespaces merges into the earlier one.
        let text = [
            dr("a", "  exportTo: [\"x\"]\n"),
            dr("b", "  exportTo: [\"x\", \"y\"]\n"),
        ]
        .concat();
        let snapshot = self::snapshot(&text);
        let config = Config::of(&snapshot);
        let all: Vec<_> = config.destination_rules.iter().collect();
        let exported = index_entries(&group(&all), Index::Exported, false);
        assert_eq!(exported.len(), 1);
        assert_eq!(exported[0].names(), "demo/a, demo/b");
        assert!(!exported[0].exported_to("y"));
    }
}
