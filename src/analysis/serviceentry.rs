//! Istio's `serviceentry.*` analyzers: TCP ports without addresses (IST0134) and the same
//! host and port with two protocols (IST0177).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use super::Input;
use super::virtualservice::full_name;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::host::{EXPORT_ALL, EXPORT_LOCAL};

/// True when the mesh config's proxy metadata has DNS capture with address auto-allocation.
fn auto_allocated(mesh: Option<&Value>) -> bool {
    let Some(meta) = mesh.and_then(|m| m.pointer("/defaultConfig/proxyMetadata")) else {
        return false;
    };
    let is_true = |k: &str| meta.get(k).and_then(Value::as_str) == Some("true");
    is_true("ISTIO_META_DNS_CAPTURE")
        && (is_true("ISTIO_META_DNS_AUTO_ALLOCATE") || is_true("PILOT_ENABLE_IP_AUTOALLOCATE"))
}

/// `serviceentry.Analyzer` (Istio's ProtocolAddressesAnalyzer).
pub fn protocol_addresses(input: &Input, out: &mut Vec<Finding>) {
    if auto_allocated(input.snapshot.mesh_config.as_ref()) {
        return;
    }
    for se in &input.config.service_entries {
        let allocated = se
            .resource
            .object
            .status
            .get("addresses")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if !se.spec.addresses.is_empty() || allocated {
            continue;
        }
        for (i, port) in se.spec.ports.iter().enumerate() {
            if port.protocol.is_empty() || port.protocol.eq_ignore_ascii_case("TCP") {
                out.push(Finding::new(
                    messages::IST0134::message(),
                    Some(
                        ResourceRef::of(se.resource)
                            .at_field(se.resource, &format!("spec.ports[{i}].name")),
                    ),
                ));
            }
        }
    }
}

/// (scope, host, port).
type HostPort<'a> = (String, &'a str, u32);

/// `serviceentry.ConflictingServiceEntryProtocolAnalyzer`.
pub fn conflicting_protocols(input: &Input, out: &mut Vec<Finding>) {
    // (scope, host, port) -> (protocol, entry index)
    let mut index: BTreeMap<HostPort, Vec<(&str, usize)>> = BTreeMap::new();
    let entries = &input.config.service_entries;
    for (n, se) in entries.iter().enumerate() {
        let ns = se.namespace();
        let export = &se.spec.export_to;
        let scopes: BTreeSet<String> =
            if export.is_empty() || export.iter().any(|e| e == EXPORT_ALL) {
                BTreeSet::from([EXPORT_ALL.to_string()])
            } else {
                export
                    .iter()
                    .map(|e| {
                        if e == EXPORT_LOCAL {
                            ns.to_string()
                        } else {
                            e.clone()
                        }
                    })
                    .collect()
            };
        for scope in &scopes {
            for h in &se.spec.hosts {
                for p in &se.spec.ports {
                    index
                        .entry((scope.clone(), h.as_str(), p.number))
                        .or_default()
                        .push((p.protocol.as_str(), n));
                }
            }
        }
    }
    let mut reported: HashSet<usize> = HashSet::new();
    for ((scope, host, port), list) in &index {
        let mut list = list.clone();
        if scope != EXPORT_ALL
            && let Some(more) = index.get(&(EXPORT_ALL.to_string(), host, *port))
        {
            list.extend(more.iter().copied());
        }
        let protocols: BTreeSet<String> = list.iter().map(|(p, _)| p.to_uppercase()).collect();
        if protocols.len() < 2 {
            continue;
        }
        let names: BTreeSet<String> = list
            .iter()
            .map(|(_, n)| full_name(entries[*n].namespace(), entries[*n].name()))
            .collect();
        let names = names.into_iter().collect::<Vec<_>>().join(", ");
        let protocols = protocols.into_iter().collect::<Vec<_>>().join(", ");
        for (_, n) in &list {
            if !reported.insert(*n) {
                continue;
            }
            let se = &entries[*n];
            out.push(Finding::new(
                messages::IST0177::message(&names, *host, i64::from(*port), &protocols),
                Some(ResourceRef::of(se.resource).at_field(se.resource, "metadata.name")),
            ));
        }
    }
}
