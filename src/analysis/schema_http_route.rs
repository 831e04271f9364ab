//! The rules of Istio's `validateHTTPRoute` for one HTTP route of a VirtualService: conflicts
//! between route, redirect, direct response and delegate, matches (header names, string
//! matches and their RE2 regexes, ports, source labels, gateways), header operations (names,
//! values, the authority set twice), CORS, faults, mirrors, redirects, direct responses,
//! retries, rewrites, timeouts and the route's destinations, with Istio's texts.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::istio::config::zero;
use serde_json::Value;

use super::schema_common::{
    Validation, duration, duration_error, duration_nanos, is_dns1123_label, validate_fqdn,
    validate_labels, validate_port, validate_wildcard_domain,
};
use super::schema_http_headers as header;
use crate::istio::go_values::float_v;

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpRoute {
    name: String,
    #[serde(rename = "match")]
    #[serde(deserialize_with = "zero::list")]
    matches: Vec<HttpMatch>,
    #[serde(deserialize_with = "zero::list")]
    route: Vec<HttpDestination>,
    redirect: Option<Redirect>,
    direct_response: Option<DirectResponse>,
    delegate: Option<Value>,
    fault: Option<Fault>,
    rewrite: Option<Value>,
    mirror: Option<Target>,
    #[serde(deserialize_with = "zero::list")]
    mirrors: Vec<Mirror>,
    headers: Option<Headers>,
    mirror_percent: Option<Value>,
    mirror_percentage: Option<Percent>,
    cors_policy: Option<CorsPolicy>,
    retries: Option<Value>,
    timeout: Option<Value>,
}

impl HttpRoute {
    /// The header names of the route's matches (`headers` and `withoutHeaders`).
    pub fn match_header_names(&self) -> impl Iterator<Item = &String> {
        self.matches
            .iter()
            .flat_map(|m| m.headers.keys().chain(m.without_headers.keys()))
    }
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
    #[serde(deserialize_with = "zero::map")]
    set: BTreeMap<String, String>,
    #[serde(deserialize_with = "zero::map")]
    add: BTreeMap<String, String>,
    #[serde(deserialize_with = "zero::list")]
    remove: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct HttpMatch {
    #[serde(deserialize_with = "zero::map")]
    headers: BTreeMap<String, StringMatch>,
    #[serde(deserialize_with = "zero::map")]
    without_headers: BTreeMap<String, StringMatch>,
    uri: Option<StringMatch>,
    scheme: Option<StringMatch>,
    method: Option<StringMatch>,
    authority: Option<StringMatch>,
    #[serde(deserialize_with = "zero::map")]
    query_params: BTreeMap<String, StringMatch>,
    port: i64,
    #[serde(deserialize_with = "zero::map")]
    source_labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "zero::list")]
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

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CorsPolicy {
    #[serde(deserialize_with = "zero::list")]
    allow_origins: Vec<StringMatch>,
    #[serde(deserialize_with = "zero::list")]
    allow_methods: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    allow_headers: Vec<String>,
    #[serde(deserialize_with = "zero::list")]
    expose_headers: Vec<String>,
    max_age: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Fault {
    abort: Option<Abort>,
    delay: Option<Delay>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Abort {
    percentage: Option<Percent>,
    http_status: Option<i64>,
    grpc_status: Option<String>,
    http2_error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Delay {
    percentage: Option<Percent>,
    fixed_delay: Option<String>,
    exponential_delay: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Mirror {
    destination: Option<Target>,
    percentage: Option<Percent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Redirect {
    uri: String,
    authority: String,
    prefix_rewrite: String,
    scheme: String,
    redirect_code: i64,
    port: Option<i64>,
    derive_port: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct DirectResponse {
    status: i64,
    body: Option<Body>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Body {
    string: Option<String>,
    bytes: Option<String>,
}

/// An HTTP route's destination (`HTTPRouteDestination`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HttpDestination {
    destination: Option<Target>,
    weight: i64,
    headers: Option<Headers>,
}

/// A `Destination`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Target {
    host: String,
    subset: String,
    port: Option<PortSelector>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PortSelector {
    number: i64,
}

/// `validateHTTPRoute`; `delegate` for a route of a delegate VirtualService (one without
/// hosts).
pub fn http_route(http: &HttpRoute, delegate: bool, v: &mut Validation) {
    route_conflicts(http, delegate, v);
    match_requests(http, v);
    if let Some(h) = &http.headers {
        header_operations(h, v);
    }
    if let Some(policy) = &http.cors_policy {
        cors_policy(policy, v);
    }
    if let Some(fault) = &http.fault {
        fault_injection(fault, v);
    }
    mirror_percent(http, v);
    if let Some(m) = &http.mirror {
        target(m, v);
    }
    mirrors(&http.mirrors, v);
    if let Some(r) = &http.redirect {
        v.check(redirect(r, &http.matches));
    }
    if let Some(d) = &http.direct_response {
        direct_response(d, v);
    }
    if let Some(retries) = &http.retries {
        http_retry(retries, v);
    }
    if let Some(rewrite) = &http.rewrite {
        v.check(http_rewrite(rewrite));
    }
    v.check(authority_rewrite(http));
    route_destinations(&http.route, v);
    if let Some(timeout) = http.timeout.as_ref().and_then(Value::as_str) {
        v.check(duration(timeout).map(str::to_string));
    }
}

/// `validateHTTPRouteMatchRequest`.
fn match_requests(http: &HttpRoute, v: &mut Validation) {
    for m in http.matches.iter() {
        for (name, h) in &m.headers {
            v.check(header::name_or_claim(name));
            v.check(string_match(Some(h), "headers"));
        }
        for (name, h) in &m.without_headers {
            v.check(header::name_or_claim(name));
            // `*` is no regex: it is read as "present".
            if h.regex.as_deref() != Some("*") {
                v.check(string_match(Some(h), "withoutHeaders"));
            }
        }
        v.check(string_match_regexp(m.uri.as_ref(), "uri"));
        v.check(string_match(m.scheme.as_ref(), "scheme"));
        v.check(string_match(m.method.as_ref(), "method"));
        v.check(string_match(m.authority.as_ref(), "authority"));
        for qp in m.query_params.values() {
            v.check(string_match(Some(qp), "queryParams"));
        }
    }
    for m in http.matches.iter() {
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
}

/// The header operations of a route or of one of its destinations: names and values.
fn header_operations(h: &Headers, v: &mut Validation) {
    if let Some(r) = &h.request {
        for (name, value) in r.add.iter().chain(&r.set) {
            v.check(header::with_authority_operation(name));
            v.check(header::value(value));
        }
        for name in &r.remove {
            v.check(header::operation(name));
        }
    }
    if let Some(r) = &h.response {
        for (name, value) in r.add.iter().chain(&r.set) {
            v.check(header::operation(name));
            v.check(header::value(value));
        }
        for name in &r.remove {
            v.check(header::operation(name));
        }
    }
}

/// `validateAuthorityRewrite`: the authority is rewritten in one place only.
fn authority_rewrite(http: &HttpRoute) -> Option<String> {
    let mut current = http
        .rewrite
        .as_ref()
        .and_then(|r| r.get("authority"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let request = http.headers.as_ref().and_then(|h| h.request.as_ref())?;
    for (name, value) in request.set.iter().chain(&request.add) {
        if !header::is_authority(name) {
            continue;
        }
        if !current.is_empty() {
            return Some(format!(
                "authority header cannot be set multiple times: have {current:?}, attempting to set {value:?}"
            ));
        }
        current = value;
    }
    None
}

fn mirror_percent(http: &HttpRoute, v: &mut Validation) {
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
}

/// `validateHTTPMirrors`.
fn mirrors(list: &[Mirror], v: &mut Validation) {
    for m in list {
        let Some(d) = &m.destination else {
            v.error("destination is required for mirrors");
            continue;
        };
        target(d, v);
        if let Some(p) = &m.percentage {
            if p.value > 100.0 {
                v.error(format!(
                    "mirror percentage must have a max value of 100 (it has {:.6})",
                    p.value
                ));
            }
            if p.value < 0.0 {
                v.error(format!(
                    "mirror percentage must have a min value of 0 (it has {:.6})",
                    p.value
                ));
            }
        }
    }
}

/// `validatePercentage`: 0, or within [0.0001, 100].
fn percentage(p: Option<&Percent>) -> Option<String> {
    let value = p?.value;
    (!(0.0..=100.0).contains(&value) || (value > 0.0 && value < 0.0001)).then(|| {
        format!(
            "percentage {} is neither 0.0, nor in range [0.0001, 100.0]",
            float_v(value)
        )
    })
}

/// `validateHTTPStatus`.
fn http_status(status: i64) -> Option<String> {
    (!(200..=600).contains(&status))
        .then(|| format!("HTTP status {status} is not in range 200-599"))
}

/// `grpc.SupportedGRPCStatus`.
const GRPC_STATUSES: &[&str] = &[
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// `validateHTTPFaultInjection`. An abort without an error type is a warning of Istio's that
/// its own `appendErrors` drops, so it is not said either.
fn fault_injection(fault: &Fault, v: &mut Validation) {
    if fault.abort.is_none() && fault.delay.is_none() {
        v.error("HTTP fault injection must have an abort and/or a delay");
    }
    if let Some(a) = &fault.abort {
        v.check(percentage(a.percentage.as_ref()));
        if let Some(status) = &a.grpc_status {
            if !GRPC_STATUSES.contains(&status.as_str()) {
                v.error(format!("gRPC status {status:?} is not supported. See https://github.com/grpc/grpc/blob/master/doc/statuscodes.md for a list of supported codes, for example 'NOT_FOUND'"));
            }
        } else if a.http2_error.is_some() {
            v.error("HTTP/2 abort fault injection not supported yet");
        } else if let Some(status) = a.http_status {
            v.check(http_status(status));
        }
    }
    if let Some(d) = &fault.delay {
        v.check(percentage(d.percentage.as_ref()));
        if let Some(fixed) = &d.fixed_delay {
            v.check(duration(fixed).map(str::to_string));
        } else if let Some(exponential) = &d.exponential_delay {
            v.check(duration(exponential).map(str::to_string));
            v.error("exponentialDelay not supported yet");
        }
    }
}

/// `validateHTTPRedirect`: its first error only, as Istio's.
fn redirect(r: &Redirect, matches: &[HttpMatch]) -> Option<String> {
    if !r.uri.is_empty() && !r.prefix_rewrite.is_empty() {
        return Some("redirect may only specify one of uri or prefix_rewrite".into());
    }
    if !r.prefix_rewrite.is_empty()
        && matches
            .iter()
            .any(|m| m.uri.as_ref().is_some_and(|u| u.prefix.is_none()))
    {
        return Some(
            "redirect prefix_rewrite requires all URI matches to use prefix match type".into(),
        );
    }
    let port = r.port.is_some() || r.derive_port.as_ref().is_some_and(|d| !d.is_null());
    if r.uri.is_empty()
        && r.prefix_rewrite.is_empty()
        && r.authority.is_empty()
        && !port
        && r.scheme.is_empty()
    {
        return Some("redirect must specify URI, authority, scheme, or port".into());
    }
    if r.redirect_code != 0 && !(300..=399).contains(&r.redirect_code) {
        return Some(format!(
            "{} is not a valid redirect code, must be 3xx",
            r.redirect_code
        ));
    }
    if !r.scheme.is_empty() && r.scheme != "http" && r.scheme != "https" {
        return Some("invalid redirect scheme, must be \"http\" or \"https\"".into());
    }
    r.port.filter(|p| *p > 0).and_then(validate_port)
}

/// The size of a protobuf `bytes` value given in base64.
fn base64_len(text: &str) -> usize {
    let data = text.trim_end_matches('=').len();
    data * 3 / 4
}

/// `validateHTTPDirectResponse`.
fn direct_response(d: &DirectResponse, v: &mut Validation) {
    if let Some(body) = &d.body {
        let size = match (&body.string, &body.bytes) {
            (Some(s), _) => s.len(),
            (None, Some(b)) => base64_len(b),
            (None, None) => 0,
        };
        const KB: usize = 1024;
        if size > KB * KB {
            v.error("large direct_responses may impact control plane performance, must be less than 1MB");
        } else if size > 100 * KB {
            v.warn("large direct_responses may impact control plane performance");
        }
    }
    v.check(http_status(d.status));
}

/// `validateHTTPRouteDestinations`.
fn route_destinations(routes: &[HttpDestination], v: &mut Validation) {
    let mut total = 0;
    for r in routes {
        if r.destination.is_none() {
            v.error("destination is required");
        }
        if let Some(h) = &r.headers {
            header_operations(h, v);
        }
        if let Some(d) = &r.destination {
            target(d, v);
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

/// `validateDestination`.
pub fn target(d: &Target, v: &mut Validation) {
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

/// `validateCORSPolicy`: origins (`validateAllowOrigins`), methods, header names, `maxAge`.
fn cors_policy(policy: &CorsPolicy, v: &mut Validation) {
    for origin in policy.allow_origins.iter() {
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
    for name in policy.allow_headers.iter().chain(&policy.expose_headers) {
        v.check(header::cors_name(name));
    }
    if let Some(nanos) = policy.max_age.as_deref().and_then(duration_nanos) {
        v.check(duration_error(nanos).map(str::to_string));
        if nanos % 1_000_000_000 > 0 {
            v.error("max_age duration is accurate only to seconds precision");
        }
    }
}

/// `validateGatewayNames` (it stops at the first name without a namespace, as Istio's does).
pub fn gateway_names(names: &[String], v: &mut Validation) {
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
