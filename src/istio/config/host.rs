//! Istio's host rules, as its analyzers apply them: short names to FQDNs, wildcard matching,
//! the `namespace/host` form of Gateway and Sidecar hosts, and which ServiceEntry or Service a
//! destination host names (with `exportTo` scopes).

use std::collections::HashMap;

use crate::kube::snapshot::{Object, Snapshot};

use super::{Config, ServiceEntry, ServicePort};

/// `svc.cluster.local`, the suffix a short host is completed with.
pub const CLUSTER_LOCAL: &str = "svc.cluster.local";
/// `exportTo: ["*"]`.
pub const EXPORT_ALL: &str = "*";
/// `exportTo: ["."]`.
pub const EXPORT_LOCAL: &str = ".";

/// A short host (no dot, no wildcard) completed to `<host>.<namespace>.svc.cluster.local`.
pub fn to_fqdn(namespace: &str, host: &str) -> String {
    if host.starts_with('*') || host.contains('.') {
        host.to_string()
    } else {
        format!("{host}.{namespace}.{CLUSTER_LOCAL}")
    }
}

/// `(namespace, name)` of `<name>.<namespace>.svc.cluster.local` (Go's greedy
/// `^(.+)\.(.+)\.svc\.cluster\.local$`: the namespace is the last label before the suffix).
pub fn split_fqdn(fqdn: &str) -> Option<(&str, &str)> {
    let rest = fqdn.strip_suffix(".svc.cluster.local")?;
    let (name, namespace) = rest.rsplit_once('.')?;
    (!name.is_empty() && !namespace.is_empty()).then_some((namespace, name))
}

/// The `(namespace, name)` a host refers to: an FQDN's own, else the short name in `namespace`.
pub fn resource_name(namespace: &str, host: &str) -> (String, String) {
    match split_fqdn(host) {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (namespace.to_string(), host.to_string()),
    }
}

/// Istio's `host.Name.Matches`: equal, or one wildcard covering the other.
pub fn matches(a: &str, b: &str) -> bool {
    match (a.strip_prefix('*'), b.strip_prefix('*')) {
        (Some(a), Some(b)) => {
            if a.len() < b.len() {
                b.ends_with(a)
            } else {
                a.ends_with(b)
            }
        }
        (Some(a), None) => b.ends_with(a),
        (None, Some(b)) => a.ends_with(b),
        (None, None) => a == b,
    }
}

/// Istio's `host.NamesForNamespace`: hosts of the form `ns/host` kept when `ns` is this
/// namespace or `*`, without the prefix.
pub fn names_for_namespace<'h>(hosts: &'h [String], namespace: &str) -> Vec<&'h str> {
    hosts
        .iter()
        .filter_map(|h| match h.split_once('/') {
            Some((ns, name)) => (ns == namespace || ns == "*").then_some(name),
            None => Some(h.as_str()),
        })
        .collect()
}

/// A service a destination can name: a ServiceEntry, or a Kubernetes Service seen as one.
#[derive(Clone, Debug)]
pub struct ServiceTarget {
    /// The ports (number, protocol).
    pub ports: Vec<(u32, String)>,
    pub workload_selector: Option<super::Labels>,
}

impl ServiceTarget {
    fn of_entry(entry: &ServiceEntry) -> Self {
        ServiceTarget {
            ports: entry
                .ports
                .iter()
                .map(|p: &ServicePort| (p.number, p.protocol.clone()))
                .collect(),
            workload_selector: entry.workload_selector.as_ref().map(|w| w.labels.clone()),
        }
    }
}

/// Istio's service-entry host map (`InitServiceEntryHostMap`): `(scope, fqdn)` -> service, where
/// the scope is a namespace or `*`. Kubernetes Services are in it as ServiceEntries with the
/// visibility of their `networking.istio.io/exportTo` annotation. Exact hosts are looked up by
/// key; wildcard hosts are kept apart so a lookup never scans the whole map. It owns what it
/// holds, so that the analysis makes it once for every analyzer that asks (`Input`).
#[derive(Debug, Default)]
pub struct ServiceHosts {
    /// FQDN -> (scope, service), one entry per scope.
    exact: HashMap<String, Vec<(String, ServiceTarget)>>,
    wildcards: Vec<(String, String, ServiceTarget)>,
}

/// The annotation that limits where a Service is visible.
pub const EXPORT_TO_ANNOTATION: &str = "networking.istio.io/exportTo";

impl ServiceHosts {
    pub fn new(snapshot: &Snapshot, config: &Config<'_>) -> Self {
        let mut map = ServiceHosts::default();
        for se in &config.service_entries {
            let ns = se.namespace();
            let target = ServiceTarget::of_entry(&se.spec);
            for h in &se.spec.hosts {
                if se.spec.export_to.is_empty() {
                    map.insert(EXPORT_ALL, ns, h, target.clone());
                    continue;
                }
                for e in &se.spec.export_to {
                    match e.as_str() {
                        EXPORT_ALL => {
                            map.insert(EXPORT_ALL, ns, h, target.clone());
                            break;
                        }
                        EXPORT_LOCAL => map.insert(ns, ns, h, target.clone()),
                        other => map.insert(other, ns, h, target.clone()),
                    }
                }
            }
        }
        for svc in snapshot.all_services() {
            let ns = svc.object.namespace().unwrap_or("");
            let name = svc.object.name();
            let ports = svc
                .object
                .spec
                .as_ref()
                .and_then(|s| s.ports.as_ref())
                .map(|ports| {
                    ports
                        .iter()
                        .map(|p| {
                            (
                                u32::try_from(p.port).unwrap_or(0),
                                p.protocol.clone().unwrap_or_default(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let target = ServiceTarget {
                ports,
                workload_selector: None,
            };
            match svc.object.annotation(EXPORT_TO_ANNOTATION) {
                None | Some("") => map.insert(EXPORT_ALL, ns, name, target),
                Some(list) => {
                    for scope in list.split(',').map(str::trim) {
                        let scope = if scope == EXPORT_LOCAL { ns } else { scope };
                        map.insert(scope, ns, name, target.clone());
                    }
                }
            }
        }
        map
    }

    fn insert(&mut self, scope: &str, namespace: &str, host: &str, target: ServiceTarget) {
        let fqdn = to_fqdn(namespace, host);
        if fqdn.starts_with('*') {
            self.wildcards
                .retain(|(s, h, _)| !(s == scope && *h == fqdn));
            self.wildcards.push((scope.to_string(), fqdn, target));
        } else {
            let scopes = self.exact.entry(fqdn).or_default();
            match scopes.iter_mut().find(|(s, _)| s == scope) {
                Some((_, held)) => *held = target,
                None => scopes.push((scope.to_string(), target)),
            }
        }
    }

    fn get(&self, scope: &str, fqdn: &str) -> Option<&ServiceTarget> {
        self.exact
            .get(fqdn)
            .and_then(|scopes| scopes.iter().find(|(s, _)| s == scope).map(|(_, t)| t))
            .or_else(|| {
                self.wildcards
                    .iter()
                    .find(|(s, h, _)| s == scope && h == fqdn)
                    .map(|(_, _, t)| t)
            })
    }

    /// Istio's `GetDestinationHost`: the service a host names, seen from `namespace` with the
    /// referring resource's `exportTo`.
    pub fn destination(
        &self,
        namespace: &str,
        export_to: &[String],
        host: &str,
    ) -> Option<&ServiceTarget> {
        let fqdn = to_fqdn(namespace, host);
        if let Some(t) = self.get(EXPORT_ALL, &fqdn) {
            return Some(t);
        }
        if export_to.is_empty() {
            if let Some(t) = self.get(namespace, &fqdn) {
                return Some(t);
            }
        } else {
            for e in export_to {
                let scope = if e == EXPORT_LOCAL { namespace } else { e };
                if let Some(t) = self.get(scope, &fqdn) {
                    return Some(t);
                }
            }
        }
        let host = host.strip_prefix('*').unwrap_or(host);
        self.wildcards
            .iter()
            .find(|(scope, se_host, _)| {
                (scope == EXPORT_ALL || scope == namespace)
                    && host.ends_with(se_host.strip_prefix('*').unwrap_or(se_host))
            })
            .map(|(_, _, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hosts_complete_and_fqdns_split() {
        assert_eq!(to_fqdn("ns", "reviews"), "reviews.ns.svc.cluster.local");
        assert_eq!(to_fqdn("ns", "a.b"), "a.b");
        assert_eq!(split_fqdn("a.b.c.svc.cluster.local"), Some(("c", "a.b")));
        assert_eq!(split_fqdn("example.com"), None);
    }

    #[test]
    fn wildcards_match_as_istio_does() {
        assert!(matches("*.example.com", "www.example.com"));
        assert!(matches("www.example.com", "*.example.com"));
        assert!(matches("*", "anything"));
        assert!(matches("*.com", "*.example.com"));
        assert!(!matches("a.com", "b.com"));
    }
}
