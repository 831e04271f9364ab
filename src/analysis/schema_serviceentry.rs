//! `schema.ValidationAnalyzer.{ServiceEntry,WorkloadEntry,WorkloadGroup,ProxyConfig}`: Istio's
//! `ValidateServiceEntry`, `ValidateWorkloadEntry`, `ValidateWorkloadGroup` and
//! `ValidateProxyConfig`, errors as IST0106 and warnings as IST0133, with Istio's texts.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::istio::config::zero;
use serde_json::Value;

use super::Input;
use super::schema_common::{
    Validation, alpha_workload_selector, each, export_to, is_http, is_ip, is_tcp, is_tls,
    multierror_text, protocol, validate_fqdn, validate_ip_subnet, validate_labels,
    validate_partial_wildcard, validate_port, validate_port_name, validate_protocol,
    validate_unix_address, validate_wildcard_domain,
};
use crate::findings::{Finding, ResourceRef};
use crate::kube::snapshot::{ConfigObject, Located};

const UNIX: &str = "unix://";

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServiceEntrySpec {
    #[serde(deserialize_with = "zero::list")]
    hosts: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    addresses: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    ports: Vec<Port>,
    location: String,
    resolution: String,
    endpoints: Option<Vec<Option<Endpoint>>>,
    workload_selector: Option<Selector>,
    #[serde(deserialize_with = "zero::list")]
    export_to: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Selector {
    #[serde(deserialize_with = "zero::map")]
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Port {
    number: i64,
    protocol: String,
    name: String,
    target_port: i64,
}

/// A WorkloadEntry, or a ServiceEntry endpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Endpoint {
    address: String,
    #[serde(deserialize_with = "zero::map")]
    ports: BTreeMap<String, i64>,
    #[serde(deserialize_with = "zero::map")]
    labels: BTreeMap<String, String>,
    network: String,
}

/// `schema.ValidationAnalyzer.ServiceEntry`.
pub fn service_entries(input: &Input, out: &mut Vec<Finding>) {
    each(input, "ServiceEntry", out, validate_service_entry);
}

/// `schema.ValidationAnalyzer.WorkloadEntry`.
pub fn workload_entries(input: &Input, out: &mut Vec<Finding>) {
    each(input, "WorkloadEntry", out, |_, we: &Endpoint, v| {
        workload_entry(we, None, true, v)
    });
}

/// `schema.ValidationAnalyzer.WorkloadGroup`.
pub fn workload_groups(input: &Input, out: &mut Vec<Finding>) {
    each(input, "WorkloadGroup", out, validate_workload_group);
}

fn resolution(spec: &ServiceEntrySpec) -> &str {
    if spec.resolution.is_empty() {
        "NONE"
    } else {
        &spec.resolution
    }
}

fn validate_service_entry(
    resource: &Located<ConfigObject>,
    se: &ServiceEntrySpec,
    v: &mut Validation,
) {
    let (warning, errors) =
        alpha_workload_selector(se.workload_selector.as_ref().map(|s| &s.labels));
    if !errors.is_empty() {
        v.extend(errors);
        return;
    }
    if let Some(w) = warning {
        v.warn(format!(
            "service entry: {w}, will be applied to all services in namespace"
        ));
    }
    if se.workload_selector.is_some() && se.endpoints.is_some() {
        v.error("only one of WorkloadSelector or Endpoints is allowed in Service Entry");
    }
    let resolution = resolution(se);
    if se.hosts.is_empty() {
        v.error("service entry must have at least one host");
    }
    for host in &se.hosts {
        if host == "*" {
            v.error(format!("invalid host {host}"));
        } else {
            v.check(validate_wildcard_domain(host));
            if resolution != "DYNAMIC_DNS"
                && let Some(w) = validate_partial_wildcard(host)
            {
                v.warn(w);
            }
        }
    }
    let mut cidr = false;
    for address in &se.addresses {
        cidr = cidr || address.contains('/');
        v.check(validate_ip_subnet(address));
    }
    if cidr && resolution != "NONE" && resolution != "STATIC" {
        v.error("CIDR addresses are allowed only for NONE/STATIC resolution types");
    }
    let labels = resource.object.metadata.labels.as_ref();
    let opted_out = labels
        .and_then(|l| l.get("networking.istio.io/enable-autoallocate-ip"))
        .is_some_and(|v| v.eq_ignore_ascii_case("false"));
    let auto_allocation = resolution != "NONE" && !opted_out && se.addresses.is_empty();
    let mut names: Vec<&str> = Vec::new();
    let mut numbers: Vec<i64> = Vec::new();
    for port in &se.ports {
        if names.contains(&port.name.as_str()) {
            v.error(format!(
                "service entry port name {:?} already defined",
                port.name
            ));
        }
        names.push(&port.name);
        if numbers.contains(&port.number) {
            v.error(format!(
                "service entry port {} already defined",
                port.number
            ));
        }
        numbers.push(port.number);
        if port.target_port != 0 {
            v.check(validate_port(port.target_port));
        }
        if se.addresses.is_empty()
            && !auto_allocation
            && (port.protocol.is_empty() || port.protocol == "TCP")
        {
            v.warn("addresses are required for ports serving TCP (or unset) protocol when IP Autoallocation is not enabled");
        }
        v.check(validate_port_name(&port.name));
        v.check(validate_protocol(&port.protocol));
        v.check(validate_port(port.number));
    }
    let endpoints: Vec<Option<&Endpoint>> =
        se.endpoints.iter().flatten().map(Option::as_ref).collect();
    match resolution {
        "NONE" => {
            if !endpoints.is_empty() {
                v.error("no endpoints should be provided for resolution type none");
            }
            if se.workload_selector.is_some() {
                v.warn("workloadSelector should not be set when resolution mode is NONE");
            }
        }
        "STATIC" => {
            for endpoint in &endpoints {
                match endpoint {
                    Some(e) => workload_entry(e, Some(&names), false, v),
                    None => v.error("endpoint cannot be nil"),
                }
            }
        }
        "DNS" | "DNS_ROUND_ROBIN" => {
            if endpoints.is_empty()
                && let Some(e) = se.hosts.iter().find_map(|h| validate_fqdn(h))
            {
                v.error(format!("hosts must be FQDN or contain only prefix wildcards if no endpoints are provided for resolution mode {resolution}, {e}"));
            }
            if resolution == "DNS_ROUND_ROBIN" && endpoints.len() > 1 {
                v.error(format!(
                    "there must only be 0 or 1 endpoint for resolution mode {resolution}"
                ));
            }
            for endpoint in &endpoints {
                let Some(e) = endpoint else {
                    v.error("endpoint cannot be nil");
                    continue;
                };
                if !is_ip(&e.address) && validate_fqdn(&e.address).is_some() {
                    v.error(format!(
                        "endpoint address {:?} is not a valid FQDN or an IP address",
                        e.address
                    ));
                }
                validate_labels(&e.labels, &mut v.errors);
                for (name, port) in &e.ports {
                    if !names.contains(&name.as_str()) {
                        v.error(format!(
                            "endpoint port {port} is not defined by the service entry"
                        ));
                    }
                    v.check(validate_port_name(name));
                    v.check(validate_port(*port));
                }
            }
            if !se.addresses.is_empty() && se.hosts.len() > 1 {
                let first_tcp = se.ports.iter().any(|p| is_tcp(protocol(&p.protocol)));
                if first_tcp {
                    v.warn("service entry can not have more than one host specified simultaneously with address and tcp port");
                }
            }
        }
        "DYNAMIC_DNS" => {
            for host in &se.hosts {
                if !host.starts_with('*') {
                    v.error(format!(
                        "host must be wildcarded for resolution mode {resolution}"
                    ));
                }
            }
            if !se.addresses.is_empty() {
                v.error(format!("addresses cannot be set for resolution type {resolution}. HTTP route domains will only be generatedfrom the hosts field values"));
            }
            if !endpoints.is_empty() {
                v.error(format!("endpoints cannot be set for resolution type {resolution}. Destination IP address determined from hostsfield values"));
            }
            for port in se.ports.iter() {
                if !matches!(
                    protocol(&port.protocol),
                    Some("HTTP" | "TLS" | "GRPC" | "HTTP2")
                ) {
                    v.error(format!("only HTTP, TLS, GRPC, and HTTP2 protocols are supported for resolution type {resolution}"));
                }
            }
            let location = if se.location.is_empty() {
                "MESH_EXTERNAL"
            } else {
                se.location.as_str()
            };
            let waypoint = labels
                .and_then(|l| l.get("istio.io/use-waypoint"))
                .is_some_and(|w| !w.is_empty() && !w.eq_ignore_ascii_case("none"));
            if location == "MESH_INTERNAL" && waypoint {
                v.error(format!("location MESH_INTERNAL with resolution type {resolution} is not supported when using waypoints"));
            }
        }
        other => v.error(format!("unsupported resolution type {other}")),
    }
    if resolution != "NONE" && se.hosts.len() > 1 {
        let plain = se.ports.iter().any(|p| {
            let p = protocol(&p.protocol);
            !is_http(p) && !is_tls(p)
        });
        if plain {
            v.error("multiple hosts provided with non-HTTP, non-TLS ports");
        }
    }
    let namespace = resource.object.metadata.namespace.as_deref().unwrap_or("");
    export_to(namespace, &se.export_to, true, false, &mut v.errors);
}

/// `validateWorkloadEntry`: a WorkloadEntry (`service_ports` `None`, FQDN addresses allowed) or
/// a STATIC ServiceEntry's endpoint.
fn workload_entry(
    we: &Endpoint,
    service_ports: Option<&[&str]>,
    allow_fqdn: bool,
    v: &mut Validation,
) {
    let addr = we.address.as_str();
    if addr.is_empty() {
        if we.network.is_empty() {
            v.error("address is required");
            return;
        }
        v.warn(format!("address is unset with network {:?}", we.network));
    }
    let unix = addr.starts_with(UNIX);
    if let Some(path) = addr.strip_prefix(UNIX) {
        v.check(validate_unix_address(path));
        if !we.ports.is_empty() {
            v.error(format!("unix endpoint {addr} must not include ports"));
        }
    } else if !addr.is_empty() && !is_ip(addr) {
        if !allow_fqdn {
            v.error(format!(
                "endpoint address {addr:?} is not a valid IP address"
            ));
        } else if validate_fqdn(addr).is_some() {
            v.error(format!(
                "endpoint address {addr:?} is not a valid FQDN or an IP address"
            ));
        }
    }
    for (name, port) in &we.ports {
        if let Some(ports) = service_ports
            && !ports.contains(&name.as_str())
        {
            v.error(format!(
                "endpoint port {port} is not defined by the service entry"
            ));
        }
        v.check(validate_port_name(name));
        v.check(validate_port(*port));
    }
    validate_labels(&we.labels, &mut v.errors);
    if unix && service_ports.is_some_and(|p| p.len() != 1) {
        v.error("exactly 1 service port required for unix endpoints");
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadGroupSpec {
    metadata: Option<Selector>,
    template: Option<Value>,
    probe: Option<Probe>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Probe {
    period_seconds: i64,
    initial_delay_seconds: i64,
    timeout_seconds: i64,
    success_threshold: i64,
    failure_threshold: i64,
    http_get: Option<HttpGet>,
    tcp_socket: Option<PortOnly>,
    exec: Option<Exec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct HttpGet {
    port: i64,
    scheme: String,
    #[serde(deserialize_with = "zero::list")]
    http_headers: Vec<Header>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Header {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PortOnly {
    port: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Exec {
    #[serde(deserialize_with = "zero::list")]
    command: Vec<String>,
}

fn validate_workload_group(_: &Located<ConfigObject>, wg: &WorkloadGroupSpec, v: &mut Validation) {
    if wg.template.is_none() {
        v.error("template is required");
        return;
    }
    if let Some(meta) = &wg.metadata {
        let mut errors = Vec::new();
        validate_labels(&meta.labels, &mut errors);
        if !errors.is_empty() {
            v.error(format!("invalid labels: {}", multierror_text(&errors)));
            return;
        }
    }
    let Some(probe) = &wg.probe else {
        return;
    };
    for (value, field) in [
        (probe.period_seconds, "periodSeconds"),
        (probe.initial_delay_seconds, "initialDelaySeconds"),
        (probe.timeout_seconds, "timeoutSeconds"),
        (probe.success_threshold, "successThreshold"),
        (probe.failure_threshold, "failureThreshold"),
    ] {
        if value < 0 {
            v.error(format!("{field} must be non-negative"));
        }
    }
    if let Some(h) = &probe.http_get {
        v.check(validate_port(h.port));
        if !h.scheme.is_empty() && h.scheme != "HTTPS" && h.scheme != "HTTP" {
            v.error("httpGet.scheme must be one of \"HTTPS\", \"HTTP\"");
        }
        for header in &h.http_headers {
            v.check(probe_header_name(&header.name));
        }
    } else if let Some(t) = &probe.tcp_socket {
        v.check(validate_port(t.port));
    } else if let Some(e) = &probe.exec {
        if e.command.is_empty() {
            v.error("exec.command is required");
        }
    } else {
        v.error("unknown health check method <nil>");
    }
}

/// `ValidateProbeHeaderName`: `[-A-Za-z0-9]+`.
fn probe_header_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    let token = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (!token).then(|| format!("header name {name} is not a valid header name"))
}

/// `schema.ValidationAnalyzer.ProxyConfig`: `ValidateProxyConfig` (selector labels, concurrency).
pub fn proxy_configs(input: &Input, out: &mut Vec<Finding>) {
    for pc in &input.snapshot.proxy_configs {
        let object = &pc.object;
        let spec = object.get("spec").unwrap_or(&Value::Null);
        let mut v = Validation::default();
        if let Some(selector) = spec.get("selector") {
            let labels: BTreeMap<String, String> = selector
                .get("matchLabels")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default();
            for (k, val) in &labels {
                let pair = format!("{k}={val}");
                if k.is_empty() {
                    v.error(format!("empty key is not supported in selector: {pair:?}"));
                }
                if k.contains('*') || val.contains('*') {
                    v.error(format!("wildcard is not supported in selector: {pair:?}"));
                }
            }
            if labels.is_empty() {
                v.warn("workload selector specified without labels");
            }
        }
        if spec
            .get("concurrency")
            .and_then(Value::as_i64)
            .is_some_and(|c| c < 0)
        {
            v.error("concurrency must be greater than or equal to 0");
        }
        if v.errors.is_empty() && v.warnings.is_empty() {
            continue;
        }
        let meta = object.get("metadata");
        let text = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let reference = ResourceRef {
            kind: "ProxyConfig".into(),
            namespace: text("namespace"),
            name: text("name").unwrap_or_default(),
            file: pc.origin.file.clone(),
            line: pc.origin.line,
            cluster: pc.origin.cluster.clone(),
        };
        v.report(&reference, out);
    }
}
