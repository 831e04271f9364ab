//! Istio's schema validation (`schema.ValidationAnalyzer.<Kind>`) of the security, telemetry and
//! extensions kinds: the rules of Istio's webhook validation (`ValidateAuthorizationPolicy`,
//! `ValidatePeerAuthentication`, `ValidateRequestAuthentication`, `ValidateTelemetry`,
//! `ValidateWasmPlugin`; AuthorizationPolicy's are in [`super::schema_authz`]) with Istio's
//! wording. Errors are IST0106, warnings IST0133, one finding per error as Istio reports them. The rules not written (JWKS documents, access-log
//! filter expressions, URL syntax beyond the scheme) are listed in docs/compat.md.

use serde_json::Value;

use super::Input;
use super::schema_common::duration;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{
    JwtRule, MatchLabels, PeerAuthentication, PolicyTargetRef, ProviderRef, RequestAuthentication,
    Telemetry, WasmPlugin,
};
use crate::kube::snapshot::{ConfigObject, Located};

/// Errors and warnings of one resource, in Istio's order.
#[derive(Default)]
pub(super) struct Validation {
    pub(super) errors: Vec<String>,
    pub(super) warnings: Vec<String>,
}

impl Validation {
    pub(super) fn error(&mut self, e: impl Into<String>) {
        self.errors.push(e.into());
    }
    pub(super) fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }
    pub(super) fn report(self, resource: &Located<ConfigObject>, out: &mut Vec<Finding>) {
        for e in self.errors {
            out.push(Finding::new(
                messages::IST0106::message(e),
                Some(ResourceRef::of(resource)),
            ));
        }
        for w in self.warnings {
            out.push(Finding::new(
                messages::IST0133::message(w),
                Some(ResourceRef::of(resource)),
            ));
        }
    }
}

/// Istio's `validateWorkloadSelector`.
pub(super) fn workload_selector(selector: Option<&MatchLabels>, v: &mut Validation) {
    let Some(selector) = selector else { return };
    for (k, val) in &selector.match_labels {
        let pair = format!("{k}={val}");
        if k.is_empty() {
            v.error(format!(
                "empty key is not supported in selector: {}",
                quote(&pair)
            ));
        }
        if k.contains('*') || val.contains('*') {
            v.error(format!(
                "wildcard is not supported in selector: {}",
                quote(&pair)
            ));
        }
    }
    if selector.match_labels.is_empty() {
        v.warn("workload selector specified without labels");
    }
}

pub(super) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// The kinds a `targetRef` may name (Istio's `allowedTargetRefs`), as Go prints the list.
const ALLOWED_TARGET_REFS: &str = "[core/v1/Service networking.istio.io/v1/ServiceEntry gateway.networking.k8s.io/v1/Gateway gateway.networking.k8s.io/v1/GatewayClass]";

/// Istio's `validateOneOfSelectorType` and `validatePolicyTargetReference(s)`.
pub(super) fn target_refs(
    has_selector: bool,
    target_ref: Option<&PolicyTargetRef>,
    refs: &[PolicyTargetRef],
    v: &mut Validation,
) {
    let set = usize::from(has_selector)
        + usize::from(target_ref.is_some())
        + usize::from(!refs.is_empty());
    if set > 1 {
        v.error("only one of targetRefs or workloadSelector can be set");
    }
    for r in target_ref.into_iter().chain(refs) {
        if r.name.is_empty() {
            v.error("targetRef name must be set");
        }
        if !r.namespace.is_empty() {
            v.error(
                "targetRef namespace must not be set; cross namespace referencing is not supported",
            );
        }
        let group = if r.group.is_empty() { "core" } else { &r.group };
        let allowed = matches!(
            (group, r.kind.as_str()),
            ("core", "Service")
                | ("networking.istio.io", "ServiceEntry")
                | ("gateway.networking.k8s.io", "Gateway" | "GatewayClass")
        );
        if !allowed {
            v.error(format!(
                "targetRef must be to one of {ALLOWED_TARGET_REFS} but was {}/{}",
                r.group, r.kind
            ));
        }
    }
}

fn has(spec: &Value, field: &str) -> bool {
    spec.get(field).is_some_and(|s| !s.is_null())
}

// --- PeerAuthentication ----------------------------------------------------------------------

fn peer_authentication(pa: &PeerAuthentication) -> Validation {
    let mut v = Validation::default();
    let empty_selector = pa
        .selector
        .as_ref()
        .is_none_or(|s| s.match_labels.is_empty());
    if empty_selector && !pa.port_level_mtls.is_empty() {
        v.error("mesh/namespace peer authentication cannot have port level mTLS");
    }
    for port in pa.port_level_mtls.keys() {
        if port.parse::<u32>().map_or(true, |p| p == 0 || p > 65535) {
            v.error("port must be in range 1..65535");
        }
    }
    workload_selector(pa.selector.as_ref(), &mut v);
    v
}

/// `schema.ValidationAnalyzer.PeerAuthentication`.
pub fn peer_authentications(input: &Input, out: &mut Vec<Finding>) {
    for pa in &input.config.peer_authentications {
        peer_authentication(&pa.spec).report(pa.resource, out);
    }
}

// --- RequestAuthentication -------------------------------------------------------------------

/// The scheme of a URI as Go's `url.Parse` finds it (lower-cased), `""` for none.
fn uri_scheme(uri: &str) -> String {
    match uri.split_once(':') {
        Some((scheme, _))
            if scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            scheme.to_ascii_lowercase()
        }
        _ => String::new(),
    }
}

/// Go's `url.Parse` error for a port that is not a number (`http://host:abc/`).
fn invalid_port(uri: &str) -> Option<String> {
    let (_, rest) = uri.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match host.rfind(']') {
        Some(end) => host[end + 1..].strip_prefix(':')?,
        None => host.rsplit_once(':')?.1,
    };
    (!port.bytes().all(|b| b.is_ascii_digit())).then(|| {
        format!(
            "parse {}: invalid port {} after host",
            quote(uri),
            quote(&format!(":{port}"))
        )
    })
}

fn jwt_rule(rule: &JwtRule, v: &mut Validation) {
    for audience in &rule.audiences {
        if audience.is_empty() {
            v.error("audience must be non-empty string");
        }
    }
    if rule.issuer.is_empty() && rule.jwks_uri.is_empty() {
        v.error("issuer or jwksUri must be non-empty string");
    }
    if !rule.jwks_uri.is_empty() {
        let scheme = uri_scheme(&rule.jwks_uri);
        if let Some(e) = invalid_port(&rule.jwks_uri) {
            v.error(e);
        } else if scheme != "http" && scheme != "https" {
            v.error(format!("URI scheme {} is not supported", quote(&scheme)));
        }
    }
    for header in &rule.from_headers {
        if header.name.is_empty() {
            v.error("location header name must be non-empty string");
        }
    }
    for param in &rule.from_params {
        if param.is_empty() {
            v.error("location query must be non-empty string");
        }
    }
    for cookie in &rule.from_cookies {
        if cookie.is_empty() {
            v.error("cookie name must be non-empty string");
        }
    }
    for claim in &rule.output_claim_to_headers {
        if claim.claim.is_empty() || claim.header.is_empty() {
            v.error("outputClaimToHeaders header and claim value must be non-empty string");
            continue;
        }
        let valid = claim
            .header
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            v.error(format!(
                "header name {} is not a valid header name",
                claim.header
            ));
        }
    }
    if let Some(e) = rule.timeout.as_deref().and_then(duration) {
        v.error(e);
    }
}

fn request_authentication(ra: &RequestAuthentication, spec: &Value) -> Validation {
    let mut v = Validation::default();
    let selector = has(spec, "selector").then_some(&ra.selector);
    target_refs(
        selector.is_some(),
        ra.target_ref.as_ref(),
        &ra.target_refs,
        &mut v,
    );
    workload_selector(selector, &mut v);
    for rule in ra.jwt_rules.iter() {
        jwt_rule(rule, &mut v);
    }
    v
}

/// `schema.ValidationAnalyzer.RequestAuthentication`.
pub fn request_authentications(input: &Input, out: &mut Vec<Finding>) {
    for ra in &input.config.request_authentications {
        request_authentication(&ra.spec, &ra.resource.object.spec).report(ra.resource, out);
    }
}

// --- Telemetry -------------------------------------------------------------------------------

fn providers(list: &[ProviderRef], v: &mut Validation) {
    if list.iter().any(|p| p.name.is_empty()) {
        v.error("providers.name may not be empty");
    }
}

fn telemetry(t: &Telemetry) -> Validation {
    let mut v = Validation::default();
    target_refs(
        t.selector.is_some(),
        t.target_ref.as_ref(),
        &t.target_refs,
        &mut v,
    );
    workload_selector(t.selector.as_ref(), &mut v);
    for m in t.metrics.iter() {
        providers(&m.providers, &mut v);
        for o in &m.overrides {
            for (name, tag) in &o.tag_overrides {
                if name.is_empty() {
                    v.warn("tagOverrides.name may not be empty");
                }
                match tag.operation.as_str() {
                    "" | "UPSERT" if tag.value.is_empty() => {
                        v.error("tagOverrides.value must be set when operation is UPSERT")
                    }
                    "REMOVE" if !tag.value.is_empty() => {
                        v.error("tagOverrides.value may only be set when operation is UPSERT")
                    }
                    _ => {}
                }
            }
            if o.matches
                .as_ref()
                .and_then(|m| m.custom_metric.as_deref())
                .is_some_and(str::is_empty)
            {
                v.error("customMetric may not be empty");
            }
        }
    }
    if t.tracing.len() > 1 {
        v.warn("multiple tracing is not currently supported");
    }
    for tracing in t.tracing.iter() {
        if tracing.providers.len() > 1 {
            v.warn("multiple providers is not currently supported");
        }
        providers(&tracing.providers, &mut v);
        let percentage = tracing.random_sampling_percentage.unwrap_or(0.0);
        if !(0.0..=100.0).contains(&percentage) {
            v.error("randomSamplingPercentage must be in range [0.0, 100.0]");
        }
        for (name, tag) in &tracing.custom_tags {
            if name.is_empty() {
                v.error("tag name may not be empty");
            }
            if tag.literal.as_ref().is_some_and(|l| l.value.is_empty()) {
                v.error("literal tag value may not be empty");
            } else if tag.header.as_ref().is_some_and(|h| h.name.is_empty()) {
                v.error("header tag name may not be empty");
            } else if tag.environment.as_ref().is_some_and(|e| e.name.is_empty()) {
                v.error("environment tag name may not be empty");
            }
        }
    }
    for logging in t.access_logging.iter() {
        providers(&logging.providers, &mut v);
    }
    v
}

/// `schema.ValidationAnalyzer.Telemetry`.
pub fn telemetries(input: &Input, out: &mut Vec<Finding>) {
    for t in &input.config.telemetries {
        telemetry(&t.spec).report(t.resource, out);
    }
}

// --- WasmPlugin ------------------------------------------------------------------------------

fn wasm_plugin(w: &WasmPlugin) -> Validation {
    let mut v = Validation::default();
    target_refs(
        w.selector.is_some(),
        w.target_ref.as_ref(),
        &w.target_refs,
        &mut v,
    );
    workload_selector(w.selector.as_ref(), &mut v);
    if w.url.is_empty() {
        v.error("url field needs to be set");
    } else {
        // Without a scheme (`ghcr.io/x:1`), Istio retries with `http://` in front, which is
        // supported; `localhost:8080/x` has the scheme `localhost` for Go's parser.
        let scheme = uri_scheme(&w.url);
        if !matches!(scheme.as_str(), "" | "file" | "http" | "https" | "oci") {
            v.error(format!("url contains unsupported scheme: {scheme}"));
        }
    }
    if !w.sha256.is_empty() {
        if w.sha256.len() != 64 {
            v.error("sha256 field must be 64 characters long");
        } else if !w
            .sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            v.error("sha256 field must match [a-f0-9]{64} pattern");
        }
    }
    if w.image_pull_secret.len() > 253 {
        v.error("imagePullSecret field must be less than 253 characters long");
    }
    if w.plugin_name.len() > 256 {
        v.error("pluginName field must be less than 255 characters long");
    }
    if let Some(vm) = &w.vm_config {
        let mut seen = std::collections::HashSet::new();
        for env in vm.env.iter() {
            let e = if env.name.is_empty() {
                Some("spec.vmConfig.env invalid")
            } else if env.name.len() > 256 {
                Some("env.name field must be less than 255 characters long")
            } else if !seen.insert(env.name.as_str()) {
                Some("duplicate env")
            } else if !matches!(env.value_from.as_str(), "" | "INLINE") && !env.value.is_empty() {
                Some("value may only be set when valueFrom is INLINE")
            } else {
                None
            };
            if let Some(e) = e {
                v.error(e);
                break;
            }
        }
    }
    'matches: for (i, sel) in w.matches.iter().enumerate() {
        for (j, port) in sel.ports.iter().enumerate() {
            if port.number <= 0 || port.number > 65535 {
                v.error(format!(
                    "spec.Match[{i}].Ports[{j}] is out of range: {}",
                    port.number
                ));
                break 'matches;
            }
        }
    }
    v
}

/// `schema.ValidationAnalyzer.WasmPlugin`.
pub fn wasm_plugins(input: &Input, out: &mut Vec<Finding>) {
    for w in &input.config.wasm_plugins {
        wasm_plugin(&w.spec).report(w.resource, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(
            duration("0.0001s"),
            Some("duration must be greater than 1ms")
        );
        assert_eq!(
            duration("1.0005s"),
            Some("only durations to ms precision are supported")
        );
        assert_eq!(duration("5s"), None);
    }
}
