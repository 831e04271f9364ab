//! mesh-doctor's mTLS coherence: a PeerAuthentication and a DestinationRule that are each valid
//! but disagree, so every request between the two sidecars fails. For each Service with a
//! selector, each of its ports, the pods (and pod templates) behind it and the TLS that the
//! DestinationRule visible to each client namespace sets for that host and port:
//!
//! - MD0401: the server requires mTLS (STRICT) on the workload port, and the rule sends
//!   plaintext (`DISABLE`) or TLS with other certificates (`SIMPLE`, `MUTUAL`);
//! - MD0402: the rule sends Istio's mTLS (`ISTIO_MUTUAL`) to pods without a sidecar, or to a port
//!   whose PeerAuthentication is `DISABLE`.
//!
//! Rules without a TLS mode leave auto-mTLS on, which always agrees: nothing to say. Ambient pods
//! (ztunnel terminates mTLS for them) are not judged here.

use std::collections::BTreeSet;

use super::Input;
use crate::findings::messages::{MD0401, MD0402, Message};
use crate::findings::{Finding, ResourceRef};

use crate::istio::dataplane::{Backend as Server, Dataplane, root_namespace, target_port};
use crate::istio::destination_rules::{Client, selector};
use crate::istio::mtls::{
    ServerMode, client_namespaces, destination_rule_among, rule_hosts, rules_for, server_mode,
    tls_for_port,
};
use crate::kube::snapshot::Object;

pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let config = &input.config;
    let root = root_namespace(snapshot);
    let mut reported = BTreeSet::new();
    let rules = rule_hosts(config);
    let backends = input.backends();
    for svc in &snapshot.services {
        let ns = svc.object.namespace().unwrap_or("");
        let fqdn = format!("{}.{ns}.svc.cluster.local", svc.object.name());
        // Only a rule that sets a TLS mode can disagree with the server: without one for the
        // host, auto-mTLS always agrees (and the pods behind the Service need not be found).
        let matching = rules_for(&rules, &fqdn);
        if !matching.iter().any(|(r, _)| sets_tls_mode(&r.spec)) {
            continue;
        }
        let servers = backends.of_service(svc);
        if servers.is_empty() {
            continue;
        }
        // The client namespaces whose rule can differ (one of each kind), and in each the
        // clients its workload-selector rules for the host select.
        let mut clients: Vec<Client<'_>> = Vec::new();
        for client_ns in client_namespaces(&rules, &matching, root, ns) {
            clients.push(Client::unselected(client_ns));
            for (rule, _) in matching.iter().copied() {
                if let Some(labels) = selector(rule).filter(|_| rule.namespace() == client_ns) {
                    clients.push(Client {
                        namespace: client_ns,
                        labels: Some(labels),
                    });
                }
            }
        }
        let private = config.destination_rules_private_by_default;
        // Each client's merged rule for the host, the same for every port.
        let merged: Vec<_> = clients
            .iter()
            .map(|asking| destination_rule_among(&matching, root, *asking, &fqdn, private))
            .collect();
        for port in svc
            .object
            .spec
            .iter()
            .flat_map(|s| s.ports.iter().flatten())
        {
            let Ok(service_port) = u32::try_from(port.port) else {
                continue;
            };
            for merged in &merged {
                let client = tls_for_port(merged.as_ref(), service_port);
                let (Some(mode), Some(rule)) = (client.mode.as_deref(), client.rule) else {
                    continue;
                };
                let key = (
                    rule.namespace().to_string(),
                    rule.name().to_string(),
                    service_port,
                );
                if reported.contains(&key) {
                    continue;
                }
                let port_note = if client.port_level {
                    " (its portLevelSettings)"
                } else {
                    ""
                };
                let rule_name = format!("{}/{}", rule.namespace(), rule.name());
                let finding = match mode {
                    "DISABLE" | "SIMPLE" | "MUTUAL" => rejected(
                        config,
                        root,
                        ns,
                        &servers,
                        port,
                        &rule_name,
                        mode,
                        &fqdn,
                        service_port,
                        port_note,
                    ),
                    "ISTIO_MUTUAL" => unterminated(
                        config,
                        root,
                        ns,
                        &servers,
                        port,
                        &rule_name,
                        &fqdn,
                        service_port,
                        port_note,
                    ),
                    _ => None,
                };
                if let Some(message) = finding {
                    reported.insert(key);
                    out.push(Finding::new(message, Some(ResourceRef::of(rule.resource))));
                }
            }
        }
    }
}

/// True when the rule sets a TLS mode, for the whole host or for one of its ports.
fn sets_tls_mode(rule: &crate::istio::config::DestinationRule) -> bool {
    rule.traffic_policy.as_ref().is_some_and(|p| {
        p.tls.as_ref().is_some_and(|t| !t.mode.is_empty())
            || p.port_level_settings
                .iter()
                .any(|s| s.tls.as_ref().is_some_and(|t| !t.mode.is_empty()))
    })
}

#[allow(clippy::too_many_arguments)]
fn rejected(
    config: &crate::istio::config::Config<'_>,
    root: &str,
    ns: &str,
    servers: &[Server<'_>],
    port: &k8s_openapi::api::core::v1::ServicePort,
    rule: &str,
    mode: &str,
    fqdn: &str,
    service_port: u32,
    port_note: &str,
) -> Option<Message> {
    for server in servers.iter().filter(|s| s.dataplane == Dataplane::Sidecar) {
        let Some(target) = target_port(port, server.spec) else {
            continue;
        };
        let decision = server_mode(config, root, ns, server.labels, target);
        if decision.mode != ServerMode::Strict {
            continue;
        }
        let policy = decision.policy.map_or_else(String::new, |p| {
            let level = if decision.port_level {
                format!("portLevelMtls {target} of ")
            } else {
                String::new()
            };
            format!("{level}PeerAuthentication {}/{}", p.namespace(), p.name())
        });
        let what = match mode {
            "DISABLE" => "plaintext",
            _ => "TLS with its own certificates, not Istio's",
        };
        return Some(MD0401::message(
            rule,
            mode,
            fqdn,
            service_port,
            port_note,
            what,
            server.what.clone(),
            target,
            policy,
        ));
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn unterminated(
    config: &crate::istio::config::Config<'_>,
    root: &str,
    ns: &str,
    servers: &[Server<'_>],
    port: &k8s_openapi::api::core::v1::ServicePort,
    rule: &str,
    fqdn: &str,
    service_port: u32,
    port_note: &str,
) -> Option<Message> {
    let reason = if servers.iter().all(|s| s.dataplane == Dataplane::None) {
        let names: Vec<&str> = servers.iter().map(|s| s.what.as_str()).collect();
        format!("the pods behind it have no sidecar ({})", names.join(", "))
    } else {
        let mut found = None;
        for server in servers.iter().filter(|s| s.dataplane == Dataplane::Sidecar) {
            let Some(target) = target_port(port, server.spec) else {
                continue;
            };
            let decision = server_mode(config, root, ns, server.labels, target);
            if let (ServerMode::Disable, Some(p)) = (decision.mode, decision.policy) {
                let level = if decision.port_level {
                    "portLevelMtls of "
                } else {
                    ""
                };
                found = Some(format!(
                    "{level}PeerAuthentication {}/{} sets mTLS mode DISABLE on port {target} of {}",
                    p.namespace(),
                    p.name(),
                    server.what
                ));
                break;
            }
        }
        found?
    };
    Some(MD0402::message(rule, fqdn, service_port, port_note, reason))
}
