//! Istio's node.id, judged as istiod parses it.

use std::net::IpAddr;

use serde_json::{Map, Value};

use super::ISTIO_NODE_TYPES;

/// An Istio node ID, `<type>~<ip>~<pod>.<namespace>~<namespace>.svc.<cluster domain>`, judged.
#[derive(Debug, Default)]
pub struct NodeId {
    /// Why istiod would refuse it (ParseServiceNodeWithMetadata).
    pub errors: Vec<String>,
    /// What istiod accepts but pilot-agent would not have written.
    pub oddities: Vec<String>,
}

impl NodeId {
    pub fn parse(id: &str, metadata: Option<&Map<String, Value>>) -> NodeId {
        let mut out = NodeId::default();
        let parts: Vec<&str> = id.split('~').collect();
        let [kind, ip, name, domain] = parts.as_slice() else {
            out.errors.push(format!(
                "it has {} part(s) separated by \"~\", istiod expects 4: <type>~<ip>~<pod>.<namespace>~<namespace>.svc.<cluster domain>",
                parts.len()
            ));
            return out;
        };
        if !ISTIO_NODE_TYPES.contains(kind) {
            out.errors.push(format!(
                "its type {kind:?} is not one istiod knows ({})",
                ISTIO_NODE_TYPES.join(", ")
            ));
        }
        let instance_ips_valid = metadata
            .and_then(|m| m.get("INSTANCE_IPS"))
            .and_then(Value::as_str)
            .is_some_and(|ips| {
                !ips.is_empty() && ips.split(',').all(|ip| ip.trim().parse::<IpAddr>().is_ok())
            });
        if ip.parse::<IpAddr>().is_err() && !instance_ips_valid {
            out.errors.push(format!(
                "its second part {ip:?} is not an IP address (and node.metadata.INSTANCE_IPS has none)"
            ));
        }
        if name.is_empty() {
            out.errors
                .push("its third part (<pod>.<namespace>) is empty".to_string());
        }
        if !out.errors.is_empty() {
            return out;
        }
        let name_namespace = match name.split_once('.') {
            Some((pod, ns)) if !pod.is_empty() && !ns.is_empty() && !ns.contains('.') => Some(ns),
            _ => {
                out.oddities
                    .push(format!("the third part {name:?} is not <pod>.<namespace>"));
                None
            }
        };
        let domain_namespace = match domain.split_once(".svc.") {
            Some((ns, cluster_domain)) if !ns.is_empty() && !cluster_domain.is_empty() => Some(ns),
            _ => {
                out.oddities.push(format!(
                    "the fourth part {domain:?} is not <namespace>.svc.<cluster domain>"
                ));
                None
            }
        };
        if let (Some(a), Some(b)) = (name_namespace, domain_namespace)
            && a != b
        {
            out.oddities.push(format!(
                "the namespace in the third part ({a}) differs from the one in the fourth ({b})"
            ));
        }
        let meta_namespace = metadata
            .and_then(|m| m.get("NAMESPACE"))
            .and_then(Value::as_str);
        if let (Some(meta), Some(ns)) = (meta_namespace, name_namespace.or(domain_namespace))
            && meta != ns
        {
            out.oddities
                .push(format!("node.metadata.NAMESPACE is {meta:?}, not {ns:?}"));
        }
        out
    }
}
