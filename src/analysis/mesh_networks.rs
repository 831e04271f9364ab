//! Istio's `meshnetworks.MeshNetworksAnalyzer` (IST0126): a network of MeshNetworks whose
//! endpoints name a service registry (`fromRegistry`) that is neither one of Istio's
//! (`Kubernetes`, `External`, `Mock`) nor a cluster of a remote secret (a key of a Secret
//! labelled `istio/multiCluster=true`). MeshNetworks come from `--mesh-networks FILE`, else
//! from the `istio` ConfigMap's `meshNetworks` key. Istio names the resource
//! `MeshNetworks istio-system/meshnetworks` wherever it came from; so does mesh-doctor.

use std::sync::Arc;

use serde_json::Value;

use crate::findings::messages::IST0126;
use crate::findings::{Finding, ResourceRef};
use crate::formats::yaml::{self, LineTree};
use crate::istio::constants::{ISTIO_NAMESPACE, MULTI_CLUSTER_SECRET_LABEL};
use crate::kube::snapshot::{Object, Snapshot};

/// Istio's own service registries.
const REGISTRIES: &[&str] = &["Mock", "Kubernetes", "External"];

/// The mesh networks to check: the value, its file, line and lines, its cluster.
struct Source<'a> {
    value: Value,
    file: Option<Arc<str>>,
    line: Option<u32>,
    lines: Option<&'a LineTree>,
    cluster: Option<Arc<str>>,
}

fn sources(snapshot: &Snapshot) -> Vec<Source<'_>> {
    if let Some(given) = &snapshot.mesh_networks {
        return vec![Source {
            value: given.object.clone(),
            file: given.origin.file.clone(),
            line: given.origin.line,
            lines: given.origin.lines.as_ref(),
            cluster: None,
        }];
    }
    snapshot
        .config_maps
        .iter()
        .filter(|cm| cm.object.name() == "istio")
        .filter_map(|cm| {
            let text = cm.object.data.as_ref()?.get("meshNetworks")?;
            let value = yaml::parse_stream(text).ok()?.into_iter().next()?.value;
            Some(Source {
                value,
                file: cm.origin.file.clone(),
                line: cm.origin.line_of("data.meshNetworks").or(cm.origin.line),
                lines: None,
                cluster: cm.origin.cluster.clone(),
            })
        })
        .collect()
}

/// `meshnetworks.MeshNetworksAnalyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let remote: Vec<&str> = snapshot
        .secrets
        .iter()
        .filter(|s| s.object.label(MULTI_CLUSTER_SECRET_LABEL) == Some("true"))
        .flat_map(|s| s.object.keys.iter().map(String::as_str))
        .collect();
    for source in sources(snapshot) {
        let Some(networks) = source.value.get("networks").and_then(Value::as_object) else {
            continue;
        };
        for (network, spec) in networks {
            let endpoints = spec.get("endpoints").and_then(Value::as_array);
            for (j, endpoint) in endpoints.into_iter().flatten().enumerate() {
                let Some(registry) = endpoint.get("fromRegistry").and_then(Value::as_str) else {
                    continue;
                };
                if REGISTRIES.contains(&registry) || remote.contains(&registry) {
                    continue;
                }
                let line = source
                    .lines
                    .and_then(|t| {
                        t.key("networks")?
                            .key(network)?
                            .key("endpoints")?
                            .index(j)?
                            .key("fromRegistry")
                    })
                    .map(|t| t.line)
                    .or(source.line);
                let reference = ResourceRef {
                    kind: "MeshNetworks".into(),
                    namespace: Some(ISTIO_NAMESPACE.into()),
                    name: "meshnetworks".into(),
                    file: source.file.clone(),
                    line,
                    cluster: source.cluster.clone(),
                };
                out.push(Finding::new(
                    IST0126::message(registry, network.as_str()),
                    Some(reference),
                ));
            }
        }
    }
}
