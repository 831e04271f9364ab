//! The rules of Istio's `ValidateVirtualService` about the whole VirtualService and its TLS and
//! TCP routes: delegates, gateway names, JWT claim routes outside gateways, hosts and duplicate
//! hosts, at least one route, `exportTo`, TLS matches and SNI hosts, L4 matches, and the L4
//! route destinations (host, subset, port, weight). The rules of one HTTP route are
//! [`super::schema_http_route`]'s.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::istio::config::zero;

use super::schema_common::{
    Validation, export_to, is_ip, validate_ip_subnet, validate_labels, validate_port,
    validate_wildcard_domain,
};
use super::schema_http_headers::is_routing_claim;
use super::schema_http_route::{HttpRoute, Target, gateway_names, http_route, target};
use crate::istio::config::host;
use crate::kube::snapshot::{ConfigObject, Located};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VirtualServiceSpec {
    #[serde(deserialize_with = "zero::list")]
    hosts: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    gateways: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    http: Vec<HttpRoute>,
    #[serde(deserialize_with = "zero::list")]
    tls: Vec<L4Route>,
    #[serde(deserialize_with = "zero::list")]
    tcp: Vec<L4Route>,
    #[serde(deserialize_with = "zero::list")]
    export_to: Vec<String>,
}

/// A TLS or TCP route.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct L4Route {
    #[serde(rename = "match")]
    #[serde(deserialize_with = "zero::list")]
    matches: Vec<L4Match>,
    #[serde(deserialize_with = "zero::list")]
    route: Vec<Destination>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct L4Match {
    #[serde(deserialize_with = "zero::list")]
    sni_hosts: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    destination_subnets: Vec<String>,
    port: i64,
    #[serde(deserialize_with = "zero::map")]
    source_labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "zero::list")]
    gateways: Vec<String>,
}

/// A TLS or TCP route's destination (`RouteDestination`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Destination {
    destination: Option<Target>,
    weight: i64,
}

const MESH: &str = "mesh";

/// The whole-VirtualService rules (the unreachable rules are [`super::schema`]'s).
pub fn validate(resource: &Located<ConfigObject>, vs: &VirtualServiceSpec, v: &mut Validation) {
    if vs.hosts.is_empty() {
        if !vs.gateways.is_empty() {
            v.error("delegate virtual service must have no gateways specified");
        }
        if !vs.tls.is_empty() {
            v.error("delegate virtual service must have no tls route specified");
        }
        if !vs.tcp.is_empty() {
            v.error("delegate virtual service must have no tcp route specified");
        }
    }
    let (applies_to_mesh, applies_to_gateway) = if vs.gateways.is_empty() {
        (true, false)
    } else {
        gateway_names(&vs.gateways, v);
        let gateway = !vs.gateways.iter().any(|g| g == MESH);
        (!gateway, gateway)
    };
    if !applies_to_gateway {
        for key in vs.http.iter().flat_map(HttpRoute::match_header_names) {
            if is_routing_claim(key) {
                v.error(format!(
                    "JWT claim based routing (key: {key}) is only supported for gateway, found no gateways: [{}]",
                    vs.gateways.join(" ")
                ));
            }
        }
    }
    let sni = vs
        .tls
        .iter()
        .any(|t| t.matches.iter().any(|m| !m.sni_hosts.is_empty()));
    let mut all_valid = true;
    for h in &vs.hosts {
        let err = if applies_to_gateway {
            gateway_bound_domain(sni, h)
        } else {
            validate_wildcard_domain(h)
        };
        match err {
            Some(e) if !is_ip(h) => {
                v.error(e);
                all_valid = false;
            }
            Some(_) => {}
            None if applies_to_mesh && h == "*" => {
                v.error(
                    "wildcard host * is not allowed for virtual services bound to the mesh gateway",
                );
                all_valid = false;
            }
            None => {}
        }
    }
    if all_valid {
        for (i, a) in vs.hosts.iter().enumerate() {
            for b in &vs.hosts[i + 1..] {
                if host::matches(a, b) {
                    v.error(format!("duplicate hosts in virtual service: {a} & {b}"));
                }
            }
        }
    }
    if vs.http.is_empty() && vs.tcp.is_empty() && vs.tls.is_empty() {
        v.error("http, tcp or tls must be provided in virtual service");
    }
    for http in &vs.http {
        http_route(http, vs.hosts.is_empty(), v);
    }
    for tls in vs.tls.iter() {
        if tls.matches.is_empty() {
            v.error("TLS route must have at least one match condition");
        }
        for m in &tls.matches {
            if m.sni_hosts.is_empty() {
                v.error("TLS match must have at least one SNI host");
            }
            for s in &m.sni_hosts {
                sni_host(s, vs, applies_to_gateway, v);
            }
            l4_match(m, v);
        }
        if tls.route.is_empty() {
            v.error("TLS route is required");
        }
        destinations(&tls.route, v);
    }
    for tcp in vs.tcp.iter() {
        for m in &tcp.matches {
            l4_match(m, v);
        }
        if tcp.route.is_empty() {
            v.error("TCP route is required");
        }
        destinations(&tcp.route, v);
    }
    let namespace = resource.object.metadata.namespace.as_deref().unwrap_or("");
    export_to(namespace, &vs.export_to, false, false, &mut v.errors);
}

/// `ValidateWildcardDomainForVirtualServiceBoundToGateway`; an auto-generated SNI name
/// (`outbound_.<port>_._.<host>`) is accepted without the checks of its parts.
fn gateway_bound_domain(sni: bool, domain: &str) -> Option<String> {
    if sni && domain.starts_with("outbound_") && !domain.is_empty() && domain.len() <= 255 {
        return None;
    }
    validate_wildcard_domain(domain)
}

/// `validateSniHost`.
fn sni_host(sni: &str, vs: &VirtualServiceSpec, gateway: bool, v: &mut Validation) {
    let err = if gateway {
        gateway_bound_domain(true, sni)
    } else {
        validate_wildcard_domain(sni)
    };
    if let Some(e) = err {
        if is_ip(sni) {
            v.warn(format!(
                "using an IP address ({sni:?}) goes against SNI spec and most clients do not support this"
            ));
        } else {
            v.error(e);
        }
        return;
    }
    if vs.hosts.iter().any(|h| subset_of(sni, h)) {
        return;
    }
    v.error(format!(
        "SNI host {sni:?} is not a compatible subset of any of the virtual service hosts: [{}]",
        vs.hosts.join(", ")
    ));
}

/// Istio's `host.Name.SubsetOf`.
fn subset_of(a: &str, b: &str) -> bool {
    match (a.strip_prefix('*'), b.strip_prefix('*')) {
        (Some(x), Some(y)) => a.len() >= b.len() && x.ends_with(y),
        (Some(_), None) => false,
        (None, Some(y)) => a.ends_with(y),
        (None, None) => a == b,
    }
}

/// `validateTCPMatch` / the L4 part of `validateTLSMatch`.
fn l4_match(m: &L4Match, v: &mut Validation) {
    for subnet in &m.destination_subnets {
        v.check(validate_ip_subnet(subnet));
    }
    if m.port != 0 {
        v.check(validate_port(m.port));
    }
    validate_labels(&m.source_labels, &mut v.errors);
    gateway_names(&m.gateways, v);
}

/// `validateRouteDestinations`.
fn destinations(routes: &[Destination], v: &mut Validation) {
    let mut total = 0;
    for r in routes {
        match &r.destination {
            None => v.error("destination is required"),
            Some(d) => target(d, v),
        }
        if r.weight < 0 {
            v.error(format!("weight {} < 0", r.weight));
        }
        total += r.weight;
    }
    if routes.len() > 1 && total == 0 {
        v.error("total destination weight = 0");
    }
}
