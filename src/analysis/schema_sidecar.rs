//! `schema.ValidationAnalyzer.Sidecar`: Istio's `ValidateSidecar` (selector, ingress and egress
//! listeners, hosts, outbound traffic policy, connection pools), errors as IST0106 and warnings
//! as IST0133.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::istio::config::zero;

use super::Input;
use super::schema_common::{
    Validation, alpha_workload_selector, each, is_http, is_tls, protocol, validate_fqdn,
    validate_ip, validate_port, validate_port_name, validate_protocol, validate_unix_address,
    validate_wildcard_domain,
};
use super::schema_gateway::{ServerTls, namespace_slash_hostname, tls_options};
use super::schema_traffic_policy::{ConnectionPool, connection_pool};
use crate::findings::Finding;
use crate::kube::snapshot::{ConfigObject, Located};

const UNIX: &str = "unix://";

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SidecarSpec {
    workload_selector: Option<Selector>,
    #[serde(deserialize_with = "zero::list")]
    ingress: Vec<Ingress>,
    #[serde(deserialize_with = "zero::list")]
    egress: Vec<Egress>,
    outbound_traffic_policy: Option<OutboundPolicy>,
    inbound_connection_pool: Option<ConnectionPool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Selector {
    #[serde(deserialize_with = "zero::map")]
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct SidecarPort {
    number: i64,
    protocol: String,
    name: String,
    target_port: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Ingress {
    port: Option<SidecarPort>,
    bind: String,
    default_endpoint: String,
    tls: Option<ServerTls>,
    connection_pool: Option<ConnectionPool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Egress {
    port: Option<SidecarPort>,
    bind: String,
    capture_mode: String,
    #[serde(deserialize_with = "zero::list")]
    hosts: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct OutboundPolicy {
    mode: String,
    egress_proxy: Option<EgressProxy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EgressProxy {
    host: String,
    subset: String,
    port: Option<PortSelector>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PortSelector {
    number: i64,
}

/// `schema.ValidationAnalyzer.Sidecar`.
pub fn sidecars(input: &Input, out: &mut Vec<Finding>) {
    each(input, "Sidecar", out, validate);
}

fn validate(resource: &Located<ConfigObject>, rule: &SidecarSpec, v: &mut Validation) {
    let (warning, errors) =
        alpha_workload_selector(rule.workload_selector.as_ref().map(|s| &s.labels));
    if !errors.is_empty() {
        v.extend(errors);
        return;
    }
    if let Some(w) = warning {
        v.warn(format!(
            "sidecar: {w}, will be applied to all services in namespace"
        ));
    }
    if rule.egress.is_empty()
        && rule.ingress.is_empty()
        && rule.outbound_traffic_policy.is_none()
        && rule.inbound_connection_pool.is_none()
    {
        // Istio returns this error alone, without the warning.
        v.warnings.clear();
        v.error("sidecar: empty configuration provided");
        return;
    }
    let mut ports: BTreeSet<i64> = BTreeSet::new();
    for i in &rule.ingress {
        let Some(port) = &i.port else {
            v.error("sidecar: port is required for ingress listeners");
            continue;
        };
        if port.target_port > 0 {
            v.error("targetPort has no impact on Sidecars");
        }
        if !port.name.is_empty() {
            v.check(validate_port_name(&port.name));
        }
        v.check(validate_protocol(&port.protocol));
        v.check(validate_port(port.number));
        if !i.bind.is_empty() {
            v.check(validate_ip(&i.bind));
        }
        if !ports.insert(port.number) {
            v.error("sidecar: ports on IP bound listeners must be unique");
        }
        if !i.default_endpoint.is_empty() {
            default_endpoint(&i.default_endpoint, v);
        }
        if let Some(tls) = &i.tls {
            ingress_tls(tls, &port.protocol, v);
        }
        connection_pool(i.connection_pool.as_ref(), v);
        if i.connection_pool
            .as_ref()
            .is_some_and(ConnectionPool::has_http)
            && !is_http(protocol(&port.protocol))
        {
            v.warn(format!(
                "sidecar: HTTP connection pool settings are configured for port {} ({:?}) but its protocol is not HTTP ({}); only TCP settings will apply",
                port.number, port.name, port.protocol
            ));
        }
    }
    connection_pool(rule.inbound_connection_pool.as_ref(), v);
    let namespace = resource.object.metadata.namespace.as_deref().unwrap_or("");
    egress(&rule.egress, namespace, v);
    if let Some(tp) = &rule.outbound_traffic_policy {
        outbound_traffic_policy(tp, v);
    }
}

fn default_endpoint(endpoint: &str, v: &mut Validation) {
    if let Some(path) = endpoint.strip_prefix(UNIX) {
        v.check(validate_unix_address(path));
        return;
    }
    let Some((host, port)) = split_host_port(endpoint) else {
        v.error(format!("address {endpoint}: missing port in address"));
        v.error("sidecar: defaultEndpoint port () is not a number: strconv.Atoi: parsing \"\": invalid syntax");
        return;
    };
    if !host.is_empty() && !matches!(host, "127.0.0.1" | "0.0.0.0" | "::1" | "::") {
        v.error("sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset");
    }
    match port.parse::<i64>() {
        Ok(p) => v.check(validate_port(p)),
        Err(_) => v.error(format!(
            "sidecar: defaultEndpoint port ({port}) is not a number: strconv.Atoi: parsing {port:?}: invalid syntax"
        )),
    }
}

/// Go's `net.SplitHostPort` for the common forms (`host:port`, `[v6]:port`).
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        return Some((host, port));
    }
    let (host, port) = s.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

fn ingress_tls(tls: &ServerTls, port_protocol: &str, v: &mut Validation) {
    if !tls.subject_alt_names.is_empty() {
        v.error("sidecar: subjectAltNames is not supported in ingress tls");
    }
    if tls.https_redirect {
        v.error("sidecar: httpsRedirect is not supported");
    }
    if !tls.credential_name.is_empty() {
        v.error("sidecar: credentialName is not currently supported");
    }
    if !tls.credential_names.is_empty() {
        v.error("sidecar: credentialNames is not currently supported");
    }
    if !tls.tls_certificates.is_empty() {
        v.error("sidecar: tls_certificates is not currently supported");
    }
    if matches!(tls.mode(), "ISTIO_MUTUAL" | "AUTO_PASSTHROUGH") {
        v.error(format!(
            "configuration is invalid: cannot set mode to {} in sidecar ingress tls",
            tls.mode()
        ));
    }
    if !is_tls(protocol(port_protocol)) {
        v.error("server cannot have TLS settings for non HTTPS/TLS ports");
    }
    tls_options(tls, v);
}

fn egress(listeners: &[Egress], namespace: &str, v: &mut Validation) {
    let mut ports: BTreeSet<i64> = BTreeSet::new();
    let mut sockets: BTreeSet<&str> = BTreeSet::new();
    let mut catch_all = false;
    for (index, e) in listeners.iter().enumerate() {
        match &e.port {
            None if catch_all => {
                v.error("sidecar: egress can have only one listener with empty port");
                continue;
            }
            None if index == listeners.len() - 1 => catch_all = true,
            None => v.error(
                "sidecar: the egress listener with empty port should be the last listener in the list",
            ),
            Some(port) => {
                if port.target_port > 0 {
                    v.error("targetPort has no impact on Sidecars");
                }
                egress_port(port, &e.bind, &e.capture_mode, v);
                if port.number == 0 {
                    if !sockets.insert(&e.bind) {
                        v.error("sidecar: unix domain socket values for listeners must be unique");
                    }
                } else if !ports.insert(port.number) {
                    v.error("sidecar: ports on IP bound listeners must be unique");
                }
            }
        }
        if e.hosts.is_empty() {
            v.error("sidecar: egress listener must contain at least one host");
            continue;
        }
        let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for hostname in &e.hosts {
            if let Some((ns, svc)) = hostname.split_once('/')
                && !ns.starts_with('~')
            {
                let ns = if ns == "." { namespace } else { ns };
                let services = seen.entry(ns).or_default();
                let duplicate = if svc != "*" {
                    services.contains(svc) || services.contains("*")
                } else {
                    !services.is_empty()
                };
                if duplicate {
                    v.warn(format!("duplicated egress host: {hostname}"));
                }
                services.insert(svc);
            }
            v.extend(namespace_slash_hostname(hostname, false));
        }
        if seen.get("*").is_some_and(|s| s.contains("*")) && seen.len() != 1 {
            v.warn("`*/*` host select all resources, no other hosts can be added");
        }
    }
}

fn egress_port(port: &SidecarPort, bind: &str, capture_mode: &str, v: &mut Validation) {
    if !port.name.is_empty() {
        v.check(validate_port_name(&port.name));
    }
    if port.number == 0 {
        v.check(validate_protocol(&port.protocol));
        match bind.strip_prefix(UNIX) {
            None => {
                v.error("sidecar: ports with 0 value must have a unix domain socket bind address")
            }
            Some(path) => v.check(validate_unix_address(path)),
        }
        if !matches!(capture_mode, "" | "DEFAULT" | "NONE") {
            v.error("sidecar: captureMode must be DEFAULT/NONE for unix domain socket listeners");
        }
    } else {
        v.check(validate_protocol(&port.protocol));
        v.check(validate_port(port.number));
        if !bind.is_empty() {
            v.check(validate_ip(bind));
        }
    }
}

fn outbound_traffic_policy(tp: &OutboundPolicy, v: &mut Validation) {
    if tp.mode == "ALLOW_ANY_DYNAMIC_DNS" {
        v.error("sidecar: ALLOW_ANY_DYNAMIC_DNS mode is only supported in MeshConfig, not in Sidecar resource");
        return;
    }
    let Some(proxy) = &tp.egress_proxy else {
        return;
    };
    if tp.mode != "ALLOW_ANY" {
        v.error(
            "sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode",
        );
        return;
    }
    v.check(validate_fqdn(&proxy.host));
    let Some(port) = &proxy.port else {
        v.error("sidecar: egress_proxy port must be non-nil");
        return;
    };
    if proxy.host == "*" {
        v.error(format!("invalid destination host {}", proxy.host));
    } else {
        v.check(validate_wildcard_domain(&proxy.host));
    }
    if !proxy.subset.is_empty() && !super::schema_common::is_dns1123_label(&proxy.subset) {
        v.error(format!("subset name is invalid: {}", proxy.subset));
    }
    v.check(validate_port(port.number));
}
