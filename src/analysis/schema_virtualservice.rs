//! The rules of Istio's `ValidateVirtualService` about the whole VirtualService and its TLS and
//! TCP routes: delegates, gateway names, JWT claim routes outside gateways, hosts and duplicate
//! hosts, `exportTo`, TLS matches and SNI hosts, L4 matches, and every route destination (host,
//! subset, port, weight). The HTTP route rules (matches, redirects, retries...) are in
//! [`super::schema`] as far as they are written.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::schema_common::{
    Validation, duration, export_to, is_dns1123_label, is_ip, validate_fqdn, validate_ip_subnet,
    validate_labels, validate_port, validate_wildcard_domain,
};
use crate::istio::config::host;
use crate::kube::snapshot::{ConfigObject, Located};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VirtualServiceSpec {
    hosts: Vec<String>,
    gateways: Vec<String>,
    http: Vec<Option<HttpRoute>>,
    tls: Vec<Option<L4Route>>,
    tcp: Vec<Option<L4Route>>,
    export_to: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct HttpRoute {
    name: String,
    #[serde(rename = "match")]
    matches: Vec<Option<HttpMatch>>,
    route: Vec<Option<Destination>>,
    redirect: Option<Value>,
    direct_response: Option<Value>,
    delegate: Option<Value>,
    fault: Option<Value>,
    rewrite: Option<Value>,
    mirror: Option<Target>,
    mirrors: Vec<Value>,
    headers: Option<Headers>,
    mirror_percent: Option<Value>,
    mirror_percentage: Option<Percent>,
    cors_policy: Option<CorsPolicy>,
    retries: Option<Value>,
    timeout: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Percent {
    value: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Headers {
    request: Option<HeaderOperations>,
    response: Option<HeaderOperations>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HeaderOperations {
    set: BTreeMap<String, String>,
    add: BTreeMap<String, String>,
    remove: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct HttpMatch {
    headers: BTreeMap<String, Option<StringMatch>>,
    without_headers: BTreeMap<String, Option<StringMatch>>,
    uri: Option<StringMatch>,
    scheme: Option<StringMatch>,
    method: Option<StringMatch>,
    authority: Option<StringMatch>,
    query_params: BTreeMap<String, Option<StringMatch>>,
    port: i64,
    source_labels: BTreeMap<String, String>,
    gateways: Vec<String>,
    source_namespace: String,
}

/// One of `exact`, `prefix`, `regex` (`Some("")` when given empty).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StringMatch {
    exact: Option<String>,
    prefix: Option<String>,
    regex: Option<String>,
}

/// The parts of a CORS policy Istio's webhook checks here.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CorsPolicy {
    allow_origins: Vec<Option<StringMatch>>,
    allow_methods: Vec<String>,
}

/// `validateHTTPRewrite`, with `validateURIRegexRewrite` (its error joined under Go's
/// `errors.Join`, one line each).
fn http_rewrite(rewrite: &Value) -> Option<String> {
    let text = |key: &str| rewrite.get(key).and_then(Value::as_str).unwrap_or("");
    let regex = rewrite.get("uriRegexRewrite").filter(|r| !r.is_null());
    if !text("uri").is_empty() && regex.is_some() {
        return Some("rewrite may only contain one of URI or UriRegexRewrite".into());
    }
    if text("uri").is_empty() && regex.is_none() && text("authority").is_empty() {
        return Some("rewrite must specify at least one of URI, UriRegexRewrite, or authority. Only one of URI or UriRegexRewrite may be specified".into());
    }
    let regex = regex?;
    let field = |key: &str| regex.get(key).and_then(Value::as_str).unwrap_or("");
    let error = if field("match").is_empty() || field("rewrite").is_empty() {
        "UriRegexRewrite requires both Rewrite and Match fields to be specified".to_string()
    } else {
        let place = "HTTPRewrite.UriRegexRewrite.Match";
        if field("match").len() > 1024 {
            format!("{place:?}: regex is too large, max length allowed is 1024")
        } else {
            let e = crate::istio::re2::go_compile_error(field("match"))?;
            format!(
                "{place:?}: {e}; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"
            )
        }
    };
    Some(format!("UriRegexRewrite has errors\n{error}"))
}

/// `supportedCORSMethods`: Go's `http.Method*` and `*`.
const CORS_METHODS: &[&str] = &[
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "*",
];

/// `validateCORSPolicy`'s origins (`validateAllowOrigins`) and methods.
fn cors_policy(policy: &CorsPolicy, v: &mut Validation) {
    for origin in policy.allow_origins.iter().flatten() {
        let given = origin
            .exact
            .as_deref()
            .or(origin.prefix.as_deref())
            .or(origin.regex.as_deref())
            .unwrap_or("");
        if given.is_empty() {
            v.error(format!(
                "'{given}' is not a valid match type for CORS allow origins"
            ));
            continue;
        }
        v.check(string_match_regexp(Some(origin), "corsPolicy.allowOrigins"));
    }
    for method in &policy.allow_methods {
        if !CORS_METHODS.contains(&method.as_str()) {
            v.error(format!("{method:?} is not a supported HTTP method"));
        }
    }
}

/// A TLS or TCP route.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct L4Route {
    #[serde(rename = "match")]
    matches: Vec<Option<L4Match>>,
    route: Vec<Option<Destination>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct L4Match {
    sni_hosts: Vec<String>,
    destination_subnets: Vec<String>,
    port: i64,
    source_labels: BTreeMap<String, String>,
    gateways: Vec<String>,
}

/// A route destination (`HTTPRouteDestination` or `RouteDestination`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Destination {
    destination: Option<Target>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Target {
    host: String,
    subset: String,
    port: Option<PortSelector>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PortSelector {
    number: i64,
}

const MESH: &str = "mesh";

/// The whole-VirtualService rules (the HTTP route weights and the unreachable rules are
/// [`super::schema`]'s).
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
        for m in vs
            .http
            .iter()
            .flatten()
            .flat_map(|h| h.matches.iter().flatten())
        {
            for key in m.headers.keys().chain(m.without_headers.keys()) {
                if is_routing_claim(key) {
                    v.error(format!(
                        "JWT claim based routing (key: {key}) is only supported for gateway, found no gateways: [{}]",
                        vs.gateways.join(" ")
                    ));
                }
            }
        }
    }
    let sni = vs
        .tls
        .iter()
        .flatten()
        .any(|t| t.matches.iter().flatten().any(|m| !m.sni_hosts.is_empty()));
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
    for http in vs.http.iter() {
        match http {
            None => v.error("http route may not be null"),
            Some(h) => {
                http_route(h, vs.hosts.is_empty(), v);
                destinations(&h.route, v);
            }
        }
    }
    for tls in vs.tls.iter().flatten() {
        if tls.matches.is_empty() {
            v.error("TLS route must have at least one match condition");
        }
        for m in &tls.matches {
            let Some(m) = m else {
                v.error("TLS match may not be null");
                continue;
            };
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
    for tcp in vs.tcp.iter().flatten() {
        for m in &tcp.matches {
            match m {
                Some(m) => l4_match(m, v),
                None => v.error("tcp match may not be nil"),
            }
        }
        if tcp.route.is_empty() {
            v.error("TCP route is required");
        }
        destinations(&tcp.route, v);
    }
    let namespace = resource.object.metadata.namespace.as_deref().unwrap_or("");
    export_to(namespace, &vs.export_to, false, &mut v.errors);
}

/// `jwt.ToRoutingClaim(key).Match`.
fn is_routing_claim(key: &str) -> bool {
    const PREFIX: &str = "@request.auth.claims";
    if !key.to_ascii_lowercase().starts_with(PREFIX) {
        return false;
    }
    let name = &key[PREFIX.len()..];
    (name.starts_with('.') && name.len() > 1)
        || (name.starts_with('[') && name.ends_with(']') && name.len() > 2)
}

/// `validateGatewayNames` (it stops at the first name without a namespace, as Istio's does).
fn gateway_names(names: &[String], v: &mut Validation) {
    for name in names {
        let Some((ns, gw)) = name.split_once('/') else {
            if name.contains('.') {
                let parts: Vec<&str> = name.split('.').collect();
                v.warn(format!(
                    "using legacy gatewayName format {name:?}; prefer the <namespace>/<name> format: \"{}/{}\"",
                    parts[1], parts[0]
                ));
            }
            v.check(validate_fqdn(name));
            return;
        };
        if ns.is_empty() || gw.is_empty() {
            v.error("config namespace and gateway name cannot be empty");
        }
        if !is_dns1123_label(ns) {
            v.error(format!("invalid value for namespace: {ns:?}"));
        }
        if !is_dns1123_label(gw) {
            v.error(format!("invalid value for gateway name: {gw:?}"));
        }
    }
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

/// `validateDestination` of every route destination.
fn destinations(routes: &[Option<Destination>], v: &mut Validation) {
    for r in routes.iter().flatten() {
        if let Some(d) = &r.destination {
            target(d, v);
        }
    }
}

/// `validateDestination`.
fn target(d: &Target, v: &mut Validation) {
    if d.host == "*" {
        v.error(format!("invalid destination host {}", d.host));
    } else {
        v.check(validate_wildcard_domain(&d.host));
    }
    if !d.subset.is_empty() && !is_dns1123_label(&d.subset) {
        v.error(format!("subset name is invalid: {}", d.subset));
    }
    if let Some(p) = &d.port {
        v.check(validate_port(p.number));
    }
}

/// The rules of Istio's `validateHTTPRoute` (route conflicts, matches, header operations,
/// mirrors) that are not about weights; regexes are only checked for emptiness and length.
fn http_route(http: &HttpRoute, delegate: bool, v: &mut Validation) {
    route_conflicts(http, delegate, v);
    if let Some(policy) = &http.cors_policy {
        cors_policy(policy, v);
    }
    if let Some(rewrite) = &http.rewrite {
        v.check(http_rewrite(rewrite));
    }
    for m in http.matches.iter().flatten() {
        for (name, header) in &m.headers {
            if header.is_none() {
                v.error(format!("header match {name} cannot be null"));
            }
            v.check(header_name_or_claim(name));
            v.check(string_match(header.as_ref(), "headers"));
        }
        for (name, header) in &m.without_headers {
            v.check(header_name_or_claim(name));
            if header
                .as_ref()
                .is_some_and(|h| h.regex.as_deref() != Some("*"))
            {
                v.check(string_match(header.as_ref(), "withoutHeaders"));
            }
        }
        v.check(string_match_regexp(m.uri.as_ref(), "uri"));
        v.check(string_match(m.scheme.as_ref(), "scheme"));
        v.check(string_match(m.method.as_ref(), "method"));
        v.check(string_match(m.authority.as_ref(), "authority"));
        for qp in m.query_params.values() {
            v.check(string_match(qp.as_ref(), "queryParams"));
        }
    }
    for m in http.matches.iter().flatten() {
        if m.port != 0 {
            v.check(validate_port(m.port));
        }
        validate_labels(&m.source_labels, &mut v.errors);
        gateway_names(&m.gateways, v);
        if !m.source_namespace.is_empty() && !is_dns1123_label(&m.source_namespace) {
            v.error(format!(
                "sourceNamespace match {} is invalid",
                m.source_namespace
            ));
        }
    }
    if let Some(h) = &http.headers {
        if let Some(r) = &h.request {
            for name in r.add.keys().chain(r.set.keys()) {
                v.check(header_with_authority_operation(name));
            }
            for name in &r.remove {
                v.check(header_operation(name));
            }
        }
        if let Some(r) = &h.response {
            for name in r.add.keys().chain(r.set.keys()).chain(&r.remove) {
                v.check(header_operation(name));
            }
        }
    }
    if let Some(p) = &http.mirror_percent {
        let value = p
            .get("value")
            .and_then(Value::as_i64)
            .or_else(|| p.as_i64())
            .unwrap_or(0);
        if value > 100 {
            v.error(format!(
                "mirror_percent must have a max value of 100 (it has {value})"
            ));
        }
        v.warn("using deprecated setting \"mirrorPercent\", use \"mirrorPercentage\" instead");
    }
    if let Some(p) = &http.mirror_percentage {
        if p.value > 100.0 {
            v.error(format!(
                "mirror_percentage must have a max value of 100 (it has {:.6})",
                p.value
            ));
        }
        if p.value < 0.0 {
            v.error(format!(
                "mirror_percentage must have a min value of 0 (it has {:.6})",
                p.value
            ));
        }
    }
    if let Some(m) = &http.mirror {
        target(m, v);
    }
    if let Some(retries) = &http.retries {
        http_retry(retries, v);
    }
    if let Some(timeout) = http.timeout.as_ref().and_then(Value::as_str) {
        v.check(duration(timeout).map(str::to_string));
    }
}

/// The `x-envoy-retry-on` and `x-envoy-retry-grpc-on` policies Istio accepts in `retryOn`
/// (besides HTTP status codes).
const RETRY_ON_POLICIES: &[&str] = &[
    "5xx",
    "gateway-error",
    "reset",
    "reset-before-request",
    "connect-failure",
    "retriable-4xx",
    "refused-stream",
    "retriable-status-codes",
    "retriable-headers",
    "envoy-ratelimited",
    "http3-post-connect-failure",
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// True for a status code Go's `http.StatusText` knows, which Istio accepts in `retryOn`.
fn is_known_status(code: &str) -> bool {
    let Ok(n) = code.parse::<u16>() else {
        return false;
    };
    matches!(n,
        100..=103 | 200..=208 | 226 | 300..=305 | 307 | 308 | 400..=418 | 421..=426 | 428
        | 429 | 431 | 451 | 500..=508 | 510 | 511)
}

/// Istio's `validateHTTPRetry`.
fn http_retry(retries: &Value, v: &mut Validation) {
    let attempts = retries.get("attempts").and_then(Value::as_i64).unwrap_or(0);
    if attempts < 0 {
        v.error("attempts cannot be negative");
    }
    let text = |key: &str| {
        retries
            .get(key)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    };
    let per_try = text("perTryTimeout");
    let retry_on = text("retryOn");
    let remote = retries
        .get("retryRemoteLocalities")
        .is_some_and(|r| !r.is_null());
    if attempts == 0 && (per_try.is_some() || retry_on.is_some() || remote) {
        v.error("http retry policy configured when attempts are set to 0 (disabled)");
    }
    if let Some(per_try) = per_try {
        v.check(duration(per_try).map(str::to_string));
    }
    if let Some(retry_on) = retry_on {
        for policy in retry_on.split(',') {
            if !is_known_status(policy) && !RETRY_ON_POLICIES.contains(&policy) {
                v.error(format!("{policy:?} is not a valid retryOn policy"));
            }
        }
    }
    if let Some(backoff) = text("backoff") {
        v.check(duration(backoff).map(str::to_string));
    }
}

/// `validateHTTPRouteConflict`.
fn route_conflicts(http: &HttpRoute, delegate: bool, v: &mut Validation) {
    if !delegate && http.delegate.is_some() {
        if http.redirect.is_some() {
            v.error(format!(
                "root HTTP route {} must not specify redirect",
                http.name
            ));
        }
        if !http.route.is_empty() {
            v.error(format!(
                "root HTTP route {} must not specify route",
                http.name
            ));
        }
        return;
    }
    if delegate && http.delegate.is_some() {
        v.error("delegate HTTP route cannot contain delegate");
    }
    if http.redirect.is_some() {
        if !http.route.is_empty() {
            v.error("HTTP route cannot contain both route and redirect");
        }
        if http.fault.is_some() {
            v.error("HTTP route cannot contain both fault and redirect");
        }
        if http.rewrite.is_some() {
            v.error("HTTP route rule cannot contain both rewrite and redirect");
        }
        if http.direct_response.is_some() {
            v.error("HTTP route rule cannot contain both direct_response and redirect");
        }
    } else if http.direct_response.is_some() {
        if !http.route.is_empty() {
            v.error("HTTP route cannot contain both route and direct_response");
        }
        if http.fault.is_some() {
            v.error("HTTP route cannot contain both fault and direct_response");
        }
        if http.rewrite.is_some() {
            v.error("HTTP route rule cannot contain both rewrite and direct_response");
        }
    } else if http.route.is_empty() {
        v.error("HTTP route, redirect or direct_response is required");
    }
    if http.mirror.is_some() && !http.mirrors.is_empty() {
        v.error("HTTP route cannot contain both mirror and mirrors");
    }
}

/// `validateStringMatch`: an empty prefix, or a regex as [`string_match_regexp`].
fn string_match(m: Option<&StringMatch>, place: &str) -> Option<String> {
    let m = m?;
    if m.prefix.as_deref() == Some("") {
        return Some(format!(
            "{place:?}: prefix string match should not be empty"
        ));
    }
    string_match_regexp(Some(m), place)
}

/// `validateStringMatchRegexp`: empty, too long, or not RE2 (`istio::re2`, Go's words).
fn string_match_regexp(m: Option<&StringMatch>, place: &str) -> Option<String> {
    let re = m?.regex.as_deref()?;
    if re.is_empty() {
        return Some(format!("{place:?}: regex string match should not be empty"));
    }
    if re.len() > 1024 {
        return Some(format!(
            "{place:?}: regex is too large, max length allowed is 1024"
        ));
    }
    crate::istio::re2::go_compile_error(re).map(|e| {
        format!(
            "{place:?}: {e}; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)"
        )
    })
}

const PSEUDO_HEADERS: &[&str] = &[":method", ":scheme", ":authority", ":path", ":status"];

/// `ValidateHTTPHeaderNameOrJwtClaimRoute`.
fn header_name_or_claim(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    if is_routing_claim(name) || PSEUDO_HEADERS.contains(&name) {
        return None;
    }
    let token = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    (!token).then(|| format!("header name {name} is not a valid header name"))
}

fn is_internal_header(name: &str) -> bool {
    name.starts_with(':') || name.eq_ignore_ascii_case("host")
}

/// `ValidateHTTPHeaderWithAuthorityOperationName`.
fn header_with_authority_operation(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    let authority = name.eq_ignore_ascii_case(":authority") || name.eq_ignore_ascii_case("host");
    (is_internal_header(name) && !authority)
        .then(|| format!("invalid header {name:?}: header cannot have \":\" prefix"))
}

/// `ValidateHTTPHeaderOperationName`.
fn header_operation(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    if name.eq_ignore_ascii_case("host") {
        return Some(format!("invalid header {name:?}: cannot set Host header"));
    }
    is_internal_header(name)
        .then(|| format!("invalid header {name:?}: header cannot have \":\" prefix"))
}
