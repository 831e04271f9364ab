//! Istio's `destinationrule.*` analyzers: TLS origination without server verification
//! (IST0128, IST0129), subsets that select no pod and hosts that name no service (IST0173,
//! IST0174). Subsets match pods and the pods that workload templates will create.

use std::collections::BTreeMap;

use super::Input;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::kube::label_index::LabelIndex;
use crate::kube::snapshot::Object;

use super::virtualservice::full_name;

/// `destinationrule.CaCertificateAnalyzer`.
pub fn ca_certificates(input: &Input, out: &mut Vec<Finding>) {
    for dr in &input.config.destination_rules {
        let name = full_name(dr.namespace(), dr.name());
        let selected = dr.spec.workload_selector.is_some();
        let Some(policy) = &dr.spec.traffic_policy else {
            continue;
        };
        let unverified = |tls: &crate::istio::config::ClientTls| {
            matches!(tls.mode.as_str(), "SIMPLE" | "MUTUAL")
                && tls.ca_certificates.is_empty()
                // A credentialName with a workload selector brings its own CA.
                && (tls.credential_name.is_empty() || !selected)
        };
        if let Some(tls) = &policy.tls
            && unverified(tls)
        {
            out.push(Finding::new(
                messages::IST0128::message(&name, dr.namespace(), &tls.mode, &dr.spec.host),
                Some(
                    ResourceRef::of(dr.resource)
                        .at_field(dr.resource, "spec.trafficPolicy.tls.mode"),
                ),
            ));
        }
        for (i, p) in policy.port_level_settings.iter().enumerate() {
            if let Some(tls) = &p.tls
                && unverified(tls)
            {
                let port = p
                    .port
                    .as_ref()
                    .map(|p| format!("number:{}", p.number))
                    .unwrap_or_else(|| "<nil>".to_string());
                out.push(Finding::new(
                    messages::IST0129::message(
                        &name,
                        dr.namespace(),
                        &tls.mode,
                        &dr.spec.host,
                        port,
                    ),
                    Some(ResourceRef::of(dr.resource).at_field(
                        dr.resource,
                        &format!("spec.trafficPolicy.portLevelSettings[{i}].tls.mode"),
                    )),
                ));
            }
        }
    }
}

const REGION: &str = "topology.kubernetes.io/region";
const ZONE: &str = "topology.kubernetes.io/zone";
const SUBZONE: &str = "topology.istio.io/subzone";
const HOSTNAME: &str = "kubernetes.io/hostname";

/// `destinationrule.SubsetSelectPodAnalyzer`.
/// Every pod's labels with the ones Istio adds from its node (locality, hostname), then the
/// labels of the pods workloads will create.
fn node_label_sets(
    input: &Input,
    templates: &[crate::kube::snapshot::PodLabels<'_>],
) -> Vec<BTreeMap<String, String>> {
    let node_labels: BTreeMap<&str, &BTreeMap<String, String>> = input
        .snapshot
        .nodes
        .iter()
        .filter_map(|n| Some((n.object.name(), n.object.metadata.labels.as_ref()?)))
        .collect();
    let mut label_sets: Vec<BTreeMap<String, String>> = Vec::new();
    for pod in input.snapshot.all_pods() {
        let mut labels = pod.object.metadata.labels.clone().unwrap_or_default();
        let node = pod
            .object
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("");
        if let Some(n) = node_labels.get(node) {
            for key in [REGION, ZONE, SUBZONE] {
                if let Some(v) = n.get(key).filter(|v| !v.is_empty()) {
                    labels.insert(key.to_string(), v.clone());
                }
            }
        }
        if !node.is_empty() {
            labels.insert(HOSTNAME.to_string(), node.to_string());
        }
        label_sets.push(labels);
    }
    label_sets.extend(
        templates
            .iter()
            .filter(|p| p.pod.is_none())
            .map(|p| p.labels.clone()),
    );
    label_sets
}

pub fn subset_select_pods(input: &Input, out: &mut Vec<Finding>) {
    let hosts = input.service_hosts();
    // The labels of the pods and of the pods workloads will create, as they are: what a subset
    // that names no label Istio adds from the node is matched against, indexed by label (one
    // lookup per subset, never a scan of every pod per subset).
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    let templates = input.snapshot.pod_labels();
    let own = LabelIndex::new(
        input
            .snapshot
            .all_pods()
            .map(|p| p.object.metadata.labels.as_ref().unwrap_or(&NONE))
            .chain(
                templates
                    .iter()
                    .filter(|p| p.pod.is_none())
                    .map(|p| p.labels),
            ),
    );
    // The same with the labels Istio adds from a pod's node (locality, hostname), made only
    // when a subset names one of them.
    let node_sets = std::cell::OnceCell::new();
    let node_index = std::cell::OnceCell::new();
    let with_node = || {
        node_index.get_or_init(|| {
            LabelIndex::new(
                node_sets
                    .get_or_init(|| node_label_sets(input, &templates))
                    .iter(),
            )
        })
    };
    let names_node_label = |selector: &BTreeMap<String, String>| {
        [REGION, ZONE, SUBZONE, HOSTNAME]
            .iter()
            .any(|k| selector.contains_key(*k))
    };
    for dr in &input.config.destination_rules {
        let Some(target) = hosts.destination(dr.namespace(), &dr.spec.export_to, &dr.spec.host)
        else {
            out.push(Finding::new(
                messages::IST0174::message(&dr.spec.host),
                Some(ResourceRef::of(dr.resource)),
            ));
            continue;
        };
        for subset in &dr.spec.subsets {
            let mut selector = target.workload_selector.clone().unwrap_or_default();
            selector.extend(subset.labels.clone());
            let matched = if names_node_label(&selector) {
                with_node().any_match(&selector)
            } else {
                own.any_match(&selector)
            };
            if !matched {
                out.push(Finding::new(
                    messages::IST0173::message(&subset.name),
                    Some(ResourceRef::of(dr.resource)),
                ));
            }
        }
    }
}
