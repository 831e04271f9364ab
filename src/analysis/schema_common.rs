//! The checks Istio's webhook validation shares between kinds (`pkg/config/validation`, its
//! `agent` package, `pkg/config/labels`, `pkg/config/protocol`, `pkg/config/visibility`), with
//! Istio's error texts. Each check appends its errors (one IST0106 each) or warnings (one IST0133
//! each) to a [`Validation`].

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::Input;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::kube::snapshot::{ConfigObject, Located};

/// The errors and warnings of one resource, in Istio's order.
#[derive(Debug, Default)]
pub struct Validation {
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

impl Validation {
    pub fn error(&mut self, e: impl Into<String>) {
        self.errors.push(e.into());
    }
    pub fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }
    /// Appends an optional error (Istio's `AppendValidation(v, err)` with a nil-able err).
    pub fn check(&mut self, e: Option<String>) {
        if let Some(e) = e {
            self.errors.push(e);
        }
    }
    pub fn extend(&mut self, errors: Vec<String>) {
        self.errors.extend(errors);
    }

    /// The findings: IST0106 per error, IST0133 per warning.
    pub fn report(self, resource: &ResourceRef, out: &mut Vec<Finding>) {
        for e in self.errors {
            out.push(Finding::new(
                messages::IST0106::message(e),
                Some(resource.clone()),
            ));
        }
        for w in self.warnings {
            out.push(Finding::new(
                messages::IST0133::message(w),
                Some(resource.clone()),
            ));
        }
    }
}

/// Runs `validate` over every config resource of `kind`, reading its spec into `T` (a spec that
/// does not fit `T` is left to `schema.Decode`), and reports the result.
pub fn each<T: serde::de::DeserializeOwned + Default>(
    input: &Input,
    kind: &str,
    out: &mut Vec<Finding>,
    validate: fn(&Located<ConfigObject>, &T, &mut Validation),
) {
    for resource in &input.snapshot.config {
        if resource.object.kind != kind
            || !resource
                .object
                .api_version
                .starts_with("networking.istio.io/")
        {
            continue;
        }
        let spec: T = if resource.object.spec.is_null() {
            T::default()
        } else {
            match T::deserialize(&resource.object.spec) {
                Ok(spec) => spec,
                Err(_) => continue,
            }
        };
        let mut v = Validation::default();
        metadata(resource, &mut v);
        if v.errors.is_empty() {
            validate(resource, &spec, &mut v);
        }
        v.report(&ResourceRef::of(resource), out);
    }
}

/// Istio's `validateMetadata`: annotations that reject a resource before its spec is looked at
/// (AuthorizationPolicy's `istio.io/dry-run` values are not checked here).
pub fn metadata(resource: &Located<ConfigObject>, v: &mut Validation) {
    let object = &resource.object;
    let annotations = &object.metadata.annotations;
    let has = |k: &str| annotations.as_ref().is_some_and(|a| a.contains_key(k));
    if has("istio.io/dry-run") && object.kind != "AuthorizationPolicy" {
        v.error(format!(
            "{}/{} has unsupported annotation istio.io/dry-run, please remove the annotation",
            object.metadata.namespace.as_deref().unwrap_or(""),
            object.metadata.name.as_deref().unwrap_or("")
        ));
        return;
    }
    for (key, text) in [
        (
            "internal.istio.io/webhook-always-reject",
            "annotation found, rejecting",
        ),
        (
            "internal.istio.io/parent-namespace",
            "annotation found, this may not be set by users",
        ),
        (
            "internal.istio.io/parents",
            "annotation found, this may not be set by users",
        ),
    ] {
        if has(key) {
            v.error(format!("{key:?} {text}"));
            return;
        }
    }
}

/// `labels.IsDNS1123Label`: 1..=63 of `[a-zA-Z0-9-]`, not starting or ending with `-`.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// `labels.IsWildcardDNS1123Label`: `*`, or a label optionally prefixed by `*` or `*-`.
pub fn is_wildcard_dns1123_label(s: &str) -> bool {
    if s.len() > 63 {
        return false;
    }
    if s == "*" {
        return true;
    }
    let rest = s
        .strip_prefix("*-")
        .or_else(|| s.strip_prefix('*'))
        .unwrap_or(s);
    is_dns1123_label(rest)
}

fn dns1123_preconditions(name: &str) -> Option<String> {
    if name.len() > 255 {
        return Some(format!("domain name {name:?} too long (max 255)"));
    }
    if name.is_empty() {
        return Some("empty domain name not allowed".into());
    }
    None
}

fn dns1123_labels(domain: &str) -> Option<String> {
    let parts: Vec<&str> = domain.split('.').collect();
    let top = parts[parts.len() - 1];
    if is_go_atoi(top) {
        return Some(format!(
            "domain name {domain:?} invalid (top level domain {top:?} cannot be all-numeric)"
        ));
    }
    for (i, label) in parts.iter().enumerate() {
        if i == parts.len() - 1 && label.is_empty() {
            return None;
        }
        if !is_dns1123_label(label) {
            return Some(format!(
                "domain name {domain:?} invalid (label {label:?} invalid)"
            ));
        }
    }
    None
}

/// Go's `strconv.Atoi` succeeds: an optional sign and decimal digits.
fn is_go_atoi(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && digits.len() < 19
}

/// `agent.ValidateFQDN`.
pub fn validate_fqdn(fqdn: &str) -> Option<String> {
    dns1123_preconditions(fqdn).or_else(|| dns1123_labels(fqdn))
}

/// `agent.ValidateWildcardDomain`: a wildcard only in the first label.
pub fn validate_wildcard_domain(domain: &str) -> Option<String> {
    if let Some(e) = dns1123_preconditions(domain) {
        return Some(e);
    }
    let (first, rest) = match domain.split_once('.') {
        Some((f, r)) => (f, Some(r)),
        None => (domain, None),
    };
    if !is_wildcard_dns1123_label(first) {
        return Some(format!(
            "domain name {domain:?} invalid (label {first:?} invalid)"
        ));
    }
    rest.and_then(dns1123_labels)
}

/// `netutil.IsValidIPAddress` / `netip.ParseAddr` (an IPv6 zone is accepted).
pub fn is_ip(s: &str) -> bool {
    let addr = match s.split_once('%') {
        Some((a, zone)) if a.contains(':') && !zone.is_empty() => a,
        _ => s,
    };
    addr.parse::<IpAddr>().is_ok()
}

/// `agent.ValidateIPAddress`.
pub fn validate_ip(addr: &str) -> Option<String> {
    (!is_ip(addr)).then(|| format!("{addr} is not a valid IP"))
}

/// `agent.ValidateIPSubnet`: an address or a CIDR block.
pub fn validate_ip_subnet(subnet: &str) -> Option<String> {
    if subnet.matches('/').count() == 1 {
        let (ip, bits) = subnet.split_once('/').unwrap_or_default();
        let max = match ip.parse::<IpAddr>() {
            Ok(IpAddr::V4(_)) => 32,
            Ok(IpAddr::V6(_)) => 128,
            Err(_) => 0,
        };
        let valid = max > 0
            && !bits.is_empty()
            && bits.bytes().all(|b| b.is_ascii_digit())
            && (bits == "0" || !bits.starts_with('0'))
            && bits.parse::<u32>().is_ok_and(|b| b <= max);
        return (!valid).then(|| format!("{subnet} is not a valid CIDR block"));
    }
    validate_ip(subnet)
}

/// `agent.ValidatePartialWildCard`.
pub fn validate_partial_wildcard(host: &str) -> Option<String> {
    (host.contains('*') && host.len() != 1 && !host.starts_with("*."))
        .then(|| format!("partial wildcard {host:?} not allowed"))
}

/// `agent.ValidatePort`.
pub fn validate_port(port: i64) -> Option<String> {
    (!(1..=65535).contains(&port))
        .then(|| format!("port number {port} must be in the range 1..65535"))
}

/// `ValidatePortName`.
pub fn validate_port_name(name: &str) -> Option<String> {
    (!is_dns1123_label(name)).then(|| format!("invalid port name: {name}"))
}

/// Istio's protocols (`protocol.Parse`, case-insensitive); `None` for an unsupported one.
pub fn protocol(s: &str) -> Option<&'static str> {
    Some(match s.to_ascii_lowercase().as_str() {
        "tcp" => "TCP",
        "udp" => "UDP",
        "grpc" => "GRPC",
        "grpc-web" => "GRPC-Web",
        "http" => "HTTP",
        "http_proxy" => "HTTP_PROXY",
        "http2" => "HTTP2",
        "https" => "HTTPS",
        "tls" => "TLS",
        "mongo" => "Mongo",
        "redis" => "Redis",
        "mysql" => "MySQL",
        _ => return None,
    })
}

pub fn is_http(p: Option<&str>) -> bool {
    matches!(
        p,
        Some("HTTP" | "HTTP2" | "HTTP_PROXY" | "GRPC" | "GRPC-Web")
    )
}

pub fn is_tls(p: Option<&str>) -> bool {
    matches!(p, Some("HTTPS" | "TLS"))
}

pub fn is_tcp(p: Option<&str>) -> bool {
    matches!(
        p,
        Some("TCP" | "HTTPS" | "TLS" | "Mongo" | "Redis" | "MySQL")
    )
}

/// `ValidateProtocol`: empty (sniffed) or known.
pub fn validate_protocol(p: &str) -> Option<String> {
    (!p.is_empty() && protocol(p).is_none()).then(|| format!("unsupported protocol: {p}"))
}

/// `ValidateUnixAddress`.
pub fn validate_unix_address(addr: &str) -> Option<String> {
    if addr.is_empty() {
        return Some("unix address must not be empty".into());
    }
    if addr.starts_with('@') {
        return None;
    }
    (!addr.starts_with('/') || addr.ends_with('/'))
        .then(|| format!("{addr} is not an absolute path to a file"))
}

/// `ValidateAlphaWorkloadSelector`: (warning, errors).
pub fn alpha_workload_selector(
    selector: Option<&BTreeMap<String, String>>,
) -> (Option<String>, Vec<String>) {
    let Some(labels) = selector else {
        return (None, Vec::new());
    };
    let mut errors = Vec::new();
    for (k, v) in labels {
        let pair = format!("{k}={v}");
        if k.is_empty() {
            errors.push(format!("empty key is not supported in selector: {pair:?}"));
        }
        if k.contains('*') || v.contains('*') {
            errors.push(format!("wildcard is not supported in selector: {pair:?}"));
        }
    }
    let warning = labels
        .is_empty()
        .then(|| "workload selector specified without labels".to_string());
    (warning, errors)
}

/// `validateExportTo`; `selector` for a DestinationRule with a `workloadSelector`, which may be
/// exported to its own namespace only.
pub fn export_to(
    namespace: &str,
    export_to: &[String],
    service_entry: bool,
    selector: bool,
    errors: &mut Vec<String>,
) {
    if export_to.is_empty() {
        return;
    }
    let mut set: Vec<String> = Vec::new();
    for e in export_to {
        let key = if e == "." {
            namespace.to_string()
        } else {
            e.clone()
        };
        if set.contains(&key) {
            if &key != e {
                errors.push(format!(
                    "duplicate entries in exportTo: . and current namespace {namespace}"
                ));
            } else {
                errors.push(format!("duplicate entries in exportTo for entry {e}"));
            }
        } else if service_entry && e == "~" {
            set.push(key);
        } else if let Some(err) = visibility(&key) {
            errors.push(err);
        } else {
            set.push(key);
        }
    }
    if selector && !set.is_empty() {
        if !set.iter().any(|k| k == namespace) {
            errors.push(
                "destination rule with workload selector cannot have exportTo beyond current namespace"
                    .into(),
            );
        } else if set.len() > 1 {
            errors.push(
                "destination rule with workload selector cannot have multiple entries in exportTo"
                    .into(),
            );
        }
    }
    if set.iter().any(|k| k == "*") && export_to.len() > 1 {
        errors.push(
            "cannot have both public (*) and non-public exportTo values for a resource".into(),
        );
    }
    if set.iter().any(|k| k == "~") && export_to.len() > 1 {
        errors.push("cannot export service entry to no one (~) and someone".into());
    }
}

fn visibility(v: &str) -> Option<String> {
    match v {
        "." | "*" => None,
        "~" => Some("exportTo ~ (none) is not allowed for Istio configuration objects".into()),
        _ if !is_dns1123_label(v) => {
            Some("only .,*, or a valid DNS 1123 label is allowed as exportTo entry".into())
        }
        _ => None,
    }
}

/// `labels.Instance.Validate`: label keys and values of Kubernetes' syntax.
pub fn validate_labels(labels: &BTreeMap<String, String>, errors: &mut Vec<String>) {
    for (k, v) in labels {
        if let Some(e) = validate_tag_key(k) {
            errors.push(e);
        }
        if !v.is_empty() && !qualified_name(v) {
            errors.push(format!("invalid tag value: {v:?}"));
        }
    }
}

fn qualified_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validateTagKey`: `[prefix/]name`, the prefix DNS labels of at most 253 characters, the name
/// a qualified name of at most 63.
fn validate_tag_key(k: &str) -> Option<String> {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let syntax = prefix.is_none_or(|p| p.split('.').all(is_dns1123_label)) && qualified_name(name);
    if !syntax {
        return Some(format!("invalid tag key: {k:?}"));
    }
    if prefix.is_some_and(|p| p.len() > 253) {
        return Some(format!("invalid tag key: {k:?} (DNS prefix is too long)"));
    }
    if name.len() > 63 {
        return Some(format!("invalid tag key: {k:?} (name is too long)"));
    }
    None
}

/// Go's `%v` of a multierror (`hashicorp/go-multierror`'s list format).
pub fn multierror_text(errors: &[String]) -> String {
    if errors.len() == 1 {
        return format!("1 error occurred:\n\t* {}\n\n", errors[0]);
    }
    let points: Vec<String> = errors.iter().map(|e| format!("* {e}")).collect();
    format!(
        "{} errors occurred:\n\t{}\n\n",
        errors.len(),
        points.join("\n\t")
    )
}

/// A duration as Istio's `ValidateDuration` judges it (read as Istio's reader reads it: Go's
/// `time.ParseDuration`, so `1m` and `500ms` too): under 1ms, or finer than milliseconds, is an
/// error. `None` also for text that is not a duration (the reader decides about that).
pub fn duration(text: &str) -> Option<&'static str> {
    duration_nanos(text).and_then(duration_error)
}

/// The nanoseconds of a duration as Istio's reader takes it, `None` for text it refuses.
pub fn duration_nanos(text: &str) -> Option<i64> {
    crate::istio::go_values::parse_duration(text)
}

/// `agent.ValidateDuration` of a duration in nanoseconds.
pub fn duration_error(nanos: i64) -> Option<&'static str> {
    if nanos < 1_000_000 {
        return Some("duration must be greater than 1ms");
    }
    if nanos % 1_000_000 != 0 {
        return Some("only durations to ms precision are supported");
    }
    None
}
