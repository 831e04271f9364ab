//! Istio's `gateway.*` analyzers: selectors that match no workload and ports the workload's
//! Service does not expose (IST0101, IST0162), credentials that are missing or unusable
//! (IST0101, IST0161), servers that conflict with another Gateway's (IST0145), certificates
//! shared by two Gateways (IST0138). Gateway selectors match pods and the pods that workload
//! templates will create.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Input;
use super::virtualservice::{full_name, short_or_full};
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{Gateway, Labels, ServerTls, Typed};
use crate::istio::credentials;
use crate::kube::label_index::LabelIndex;
use crate::kube::selector::labels_match;
use crate::kube::snapshot::{Located, Object, PodLabels, SecretKeys};

/// A map selector as Kubernetes prints it: `a=b,c=d`, sorted; empty for "everything".
pub fn selector_string(selector: &Labels) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn selector_of<'g>(gw: &'g Typed<Gateway>, empty: &'g Labels) -> &'g Labels {
    gw.spec.selector.as_ref().unwrap_or(empty)
}

/// The line of the selector's first label (`spec.selector.<label>`), else the document's.
fn at_selector(gw: &Typed<Gateway>, selector: &Labels) -> Option<ResourceRef> {
    let reference = ResourceRef::of(gw.resource);
    let line = selector.keys().next().and_then(|k| {
        gw.resource
            .origin
            .lines
            .as_ref()
            .and_then(|t| t.key("spec")?.key("selector")?.key(k))
            .map(|t| t.line)
    });
    Some(ResourceRef {
        line: line.or(reference.line),
        ..reference
    })
}

fn selector_not_found(gw: &Typed<Gateway>, selector: &Labels) -> Finding {
    Finding::new(
        messages::IST0101::message("selector", selector_string(selector)),
        at_selector(gw, selector),
    )
}

/// `gateway.IngressGatewayPortAnalyzer`.
pub fn ingress_gateway_ports(input: &Input, out: &mut Vec<Finding>) {
    let pods = input.snapshot.pod_labels();
    // Indexed: the pods a selector matches by their labels, the Services by namespace.
    let index = LabelIndex::new(pods.iter().map(|p| p.labels));
    let mut services_in: HashMap<&str, Vec<_>> = HashMap::new();
    for svc in input.snapshot.all_services() {
        services_in
            .entry(svc.object.namespace().unwrap_or(""))
            .or_default()
            .push(svc);
    }
    let empty = Labels::new();
    for gw in &input.config.gateways {
        let selector = selector_of(gw, &empty);
        let mut service_ports: HashSet<u32> = HashSet::new();
        let mut mapping: HashMap<u32, u32> = HashMap::new();
        let mut matched = 0;
        for pod in index.matching(selector).map(|i| &pods[i]) {
            matched += 1;
            for svc in services_in.get(pod.namespace).into_iter().flatten() {
                let Some(spec) = &svc.object.spec else {
                    continue;
                };
                let svc_selector = spec.selector.clone().unwrap_or_default();
                if !labels_match(&svc_selector, pod.labels) {
                    continue;
                }
                for port in spec.ports.iter().flatten() {
                    if port.protocol.as_deref().unwrap_or("TCP") != "TCP" {
                        continue;
                    }
                    let number = u32::try_from(port.port).unwrap_or(0);
                    let target = match &port.target_port {
                        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => {
                            u32::try_from(*n).unwrap_or(0)
                        }
                        Some(
                            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s),
                        ) => s.parse().unwrap_or(0),
                        None => 0,
                    };
                    if target != 0 {
                        service_ports.insert(target);
                        mapping.entry(number).or_insert(target);
                    } else {
                        service_ports.insert(number);
                    }
                }
            }
        }
        if matched == 0 {
            out.push(selector_not_found(gw, selector));
            continue;
        }
        for server in &gw.spec.servers {
            let Some(port) = &server.port else { continue };
            if !service_ports.contains(&port.number) && !mapping.contains_key(&port.number) {
                out.push(Finding::new(
                    messages::IST0162::message(i64::from(port.number), selector_string(selector)),
                    at_selector(gw, selector),
                ));
            }
        }
    }
}

/// The namespace of the workload a Gateway selects (real pods, as Istio reads them): where its
/// `credentialName` Secrets are. `None` when the selector matches no pod; the first matching
/// pod's when several do.
pub fn workload_namespace<'s>(input: &Input<'s>, gw: &Typed<Gateway>) -> Option<&'s str> {
    let empty = Labels::new();
    input
        .config
        .pods_by_label
        .first(selector_of(gw, &empty))
        .map(|p| p.object.namespace().unwrap_or(""))
}

/// The Secret a `credentialName` names, resolved as Istio does (`ns/name`, else the gateway
/// workload's namespace).
pub fn credential_secret<'s>(
    input: &Input<'s>,
    gw_ns: &str,
    credential_name: &str,
) -> Option<&'s Located<SecretKeys>> {
    let (ns, name) = short_or_full(gw_ns, credential_name);
    input
        .snapshot
        .secrets
        .iter()
        .find(|s| s.object.namespace().unwrap_or("") == ns && s.object.name() == name)
}

/// The Secret istiod reads the CA certificate of a server that verifies clients from
/// (`GetCaCert`): `<credentialName>-cacert` when it exists, else the credential's own.
pub fn ca_secret<'s>(
    input: &Input<'s>,
    gw_ns: &str,
    credential_name: &str,
) -> Option<&'s Located<SecretKeys>> {
    credential_secret(input, gw_ns, &credentials::ca_secret_name(credential_name))
        .or_else(|| credential_secret(input, gw_ns, credential_name))
}

/// True when istiod refuses the credential: no usable key pair, or a certificate chain
/// `ValidateCertificate` refuses (at the snapshot's time; without one, only its form is
/// judged). A chain whose facts were not read is not judged.
pub fn credential_refused(secret: &SecretKeys, now: Option<jiff::Timestamp>) -> bool {
    let Some(key) = credentials::chain_key(secret) else {
        return true;
    };
    let Some(chain) = secret.certificates.get(key) else {
        return false;
    };
    match now {
        Some(now) => credentials::refused(chain, now).is_some(),
        None => credentials::refused_form(chain).is_some(),
    }
}

/// `gateway.SecretAnalyzer`.
pub fn secrets(input: &Input, out: &mut Vec<Finding>) {
    let empty = Labels::new();
    for gw in &input.config.gateways {
        let Some(gw_ns) = workload_namespace(input, gw) else {
            out.push(selector_not_found(gw, selector_of(gw, &empty)));
            continue;
        };
        for (i, server) in gw.spec.servers.iter().enumerate() {
            let Some(tls) = &server.tls else { continue };
            if tls.credential_name.is_empty() {
                continue;
            }
            let path = format!("spec.servers[{i}].tls.credentialName");
            match credential_secret(input, gw_ns, &tls.credential_name) {
                None => out.push(Finding::new(
                    messages::IST0101::message("credentialName", &tls.credential_name),
                    Some(ResourceRef::of(gw.resource).at_field(gw.resource, &path)),
                )),
                Some(s) if credential_refused(&s.object, input.snapshot.read_at) => {
                    out.push(Finding::new(
                        messages::IST0161::message(gw.name(), gw_ns),
                        Some(ResourceRef::of(gw.resource).at_field(gw.resource, &path)),
                    ))
                }
                Some(_) => {}
            }
        }
    }
}

/// `gateway.ConflictingGatewayAnalyzer`.
pub fn conflicting_gateways(input: &Input, out: &mut Vec<Finding>) {
    let empty = Labels::new();
    // "selector~port" -> gateway -> host -> bind, as Istio keeps it (and updates it while
    // checking, as Istio's duplicate check does).
    let mut map: BTreeMap<String, BTreeMap<String, HashMap<String, String>>> = BTreeMap::new();
    for gw in &input.config.gateways {
        let selector = selector_string(selector_of(gw, &empty));
        for server in &gw.spec.servers {
            let port = server.port.as_ref().map_or(0, |p| p.number);
            let hosts = server
                .hosts
                .iter()
                .map(|h| (h.clone(), server.bind.clone()))
                .collect();
            map.entry(format!("{selector}~{port}"))
                .or_default()
                .insert(full_name(gw.namespace(), gw.name()), hosts);
        }
    }
    let pods = input.snapshot.pod_labels();
    for gw in &input.config.gateways {
        let own = full_name(gw.namespace(), gw.name());
        let selector = selector_of(gw, &empty);
        let text = selector_string(selector);
        let mut hits: Vec<String> = Vec::new();
        for key in map.keys() {
            let (other, _) = key.split_once('~').unwrap_or(("", ""));
            let matched = other == text
                || ((other.contains(text.as_str()) || text.contains(other))
                    && pods.iter().any(|p: &PodLabels| {
                        labels_match(selector, p.labels)
                            && labels_match(&parse_selector(other), p.labels)
                    }));
            if matched {
                hits.push(key.clone());
            }
        }
        if !text.is_empty() && hits.is_empty() {
            out.push(selector_not_found(gw, selector));
            continue;
        }
        for server in &gw.spec.servers {
            let port = server.port.as_ref().map_or(0, |p| p.number).to_string();
            let mut conflicts: Vec<String> = Vec::new();
            for key in &hits {
                if key.split_once('~').map(|(_, p)| p) != Some(port.as_str()) {
                    continue;
                }
                let Some(gateways) = map.get_mut(key) else {
                    continue;
                };
                for (name, known) in gateways.iter_mut() {
                    if *name != own && duplicates(&server.hosts, &server.bind, known) {
                        conflicts.push(name.clone());
                    }
                }
            }
            if !conflicts.is_empty() {
                conflicts.sort();
                out.push(Finding::new(
                    messages::IST0145::message(
                        conflicts.join(","),
                        text.clone(),
                        port,
                        server.hosts.join(","),
                    ),
                    Some(ResourceRef::of(gw.resource)),
                ));
            }
        }
    }
}

/// Istio's `CheckDuplicates`: true when a host is known with the same bind; when none is, the
/// hosts become known.
fn duplicates(hosts: &[String], bind: &str, known: &mut HashMap<String, String>) -> bool {
    let found = hosts
        .iter()
        .any(|h| known.get(h).is_some_and(|b| b == bind));
    if !found {
        for h in hosts {
            known.insert(h.clone(), bind.to_string());
        }
    }
    found
}

fn parse_selector(text: &str) -> Labels {
    text.split(',')
        .filter_map(|pair| {
            let parts: Vec<&str> = pair.split('=').collect();
            (parts.len() == 2).then(|| (parts[0].to_string(), parts[1].to_string()))
        })
        .collect()
}

fn same_certificate(a: &ServerTls, b: &ServerTls) -> bool {
    if !a.credential_name.is_empty() && !b.credential_name.is_empty() {
        return a.credential_name == b.credential_name;
    }
    a.credential_name.is_empty()
        && b.credential_name.is_empty()
        && !a.server_certificate.is_empty()
        && a.server_certificate == b.server_certificate
        && !a.private_key.is_empty()
        && a.private_key == b.private_key
}

/// Istio's `selectorSubset`: every key of `x` is in `y` with the same value.
fn selector_subset(x: &Labels, y: &Labels) -> bool {
    x.iter().all(|(k, v)| y.get(k) == Some(v))
}

/// `gateway.CertificateAnalyzer`.
pub fn certificates(input: &Input, out: &mut Vec<Finding>) {
    let empty = Labels::new();
    let gateways = &input.config.gateways;
    for gw in gateways {
        let own = full_name(gw.namespace(), gw.name());
        let selector = selector_of(gw, &empty);
        for other in gateways {
            let name = full_name(other.namespace(), other.name());
            if name == own
                || !(selector.is_empty() || selector_subset(selector, selector_of(other, &empty)))
            {
                continue;
            }
            for a in gw.spec.servers.iter().filter_map(|s| s.tls.as_ref()) {
                for b in other.spec.servers.iter().filter_map(|s| s.tls.as_ref()) {
                    if same_certificate(a, b) {
                        out.push(Finding::new(
                            messages::IST0138::message(vec![own.clone(), name.clone()]),
                            Some(
                                ResourceRef::of(gw.resource).at_field(gw.resource, "metadata.name"),
                            ),
                        ));
                    }
                }
            }
        }
    }
}
