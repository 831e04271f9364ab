//! Istio's `annotations.K8sAnalyzer` (unknown IST0108, misplaced IST0107, invalid IST0125 and
//! deprecated IST0135 Istio annotations) and `annotations.AlphaAnalyzer` (IST0136, alpha-phase
//! annotations; not run by default, as in Istio) on Namespaces, Services, Pods and Deployments.
//! The table of annotations is Istio's ([`crate::istio::annotations`]); the value checks are
//! those of Istio's injector, with its error texts.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::annotations::{self, FeatureStatus};
use crate::kube::snapshot::{Located, Object, Snapshot, WorkloadKind};

const SIDECAR_INJECT: &str = "sidecar.istio.io/inject";

/// Set by istiod or controllers, never reported.
const ALWAYS_IGNORED: &[&str] = &[
    "sidecar.istio.io/status",
    "gateway.istio.io/controller-version",
    "istio.io/rev",
];

/// Set by default on pods that istio-cni (no `istio-init` container) redirects.
const IGNORED_WITH_CNI: &[&str] = &[
    "sidecar.istio.io/interceptionMode",
    "traffic.sidecar.istio.io/includeInboundPorts",
    "traffic.sidecar.istio.io/excludeInboundPorts",
    "traffic.sidecar.istio.io/includeOutboundIPRanges",
];

/// One object whose annotations are read: its kind as Istio's table names it, its metadata,
/// the reference findings cite, and (pods) whether the CNI redirects it.
struct Annotated<'a> {
    kind: &'static str,
    meta: &'a ObjectMeta,
    reference: ResourceRef,
    lines: Option<&'a crate::formats::yaml::LineTree>,
    cni: bool,
}

fn of<'a, T: Object>(kind: &'static str, located: &'a Located<T>, cni: bool) -> Annotated<'a> {
    Annotated {
        kind,
        meta: located.object.meta(),
        reference: ResourceRef::of(located),
        lines: located.origin.lines.as_ref(),
        cni,
    }
}

/// Namespaces, Services, Pods, then Deployments, as Istio visits them.
fn objects(snapshot: &Snapshot) -> Vec<Annotated<'_>> {
    let mut out: Vec<Annotated> = Vec::new();
    out.extend(
        snapshot
            .namespaces
            .iter()
            .map(|n| of("Namespace", n, false)),
    );
    out.extend(snapshot.services.iter().map(|s| of("Service", s, false)));
    out.extend(snapshot.pods.iter().map(|p| {
        let init = p
            .object
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref());
        let cni = !init.is_some_and(|c| c.iter().any(|c| c.name == "istio-init"));
        of("Pod", p, cni)
    }));
    out.extend(
        snapshot
            .workloads
            .iter()
            .filter(|w| w.object.kind == WorkloadKind::Deployment)
            .map(|d| of("Deployment", d, false)),
    );
    out
}

/// Istio's namespace: `<anything>istio.io/...`, and the documented `kubernetes.io/ingress.class`.
fn is_istio(annotation: &str) -> bool {
    annotation == "kubernetes.io/ingress.class"
        || annotation
            .split('/')
            .next()
            .is_some_and(|prefix| prefix.ends_with("istio.io"))
}

fn at(object: &Annotated, annotation: &str) -> ResourceRef {
    let mut reference = object.reference.clone();
    if let Some(line) = object.lines.and_then(|t| {
        t.key("metadata")?
            .key("annotations")?
            .key(annotation)
            .map(|t| t.line)
    }) {
        reference.line = Some(line);
    }
    reference
}

fn annotations_of(meta: &ObjectMeta) -> impl Iterator<Item = (&String, &String)> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    meta.annotations.as_ref().unwrap_or(&EMPTY).iter()
}

/// `annotations.K8sAnalyzer`.
pub fn k8s(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for object in objects(snapshot) {
        for (name, value) in annotations_of(object.meta) {
            if !is_istio(name) || ALWAYS_IGNORED.contains(&name.as_str()) {
                continue;
            }
            let Some(def) = annotations::lookup(name) else {
                out.push(Finding::new(
                    messages::IST0108::message(name),
                    Some(at(&object, name)),
                ));
                continue;
            };
            if def.deprecated {
                let has_label = object
                    .meta
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(SIDECAR_INJECT));
                if !(has_label && name == SIDECAR_INJECT) {
                    let extra = if def.name == SIDECAR_INJECT {
                        " in favor of the \"sidecar.istio.io/inject\" label"
                    } else {
                        ""
                    };
                    out.push(Finding::new(
                        messages::IST0135::message(name, extra),
                        Some(at(&object, name)),
                    ));
                }
            }
            if def.resources.contains(&"Any") {
                continue;
            }
            if !def.resources.contains(&object.kind) {
                out.push(Finding::new(
                    messages::IST0107::message(name, def.resources.join(", ")),
                    Some(at(&object, name)),
                ));
                continue;
            }
            if let Some(Err(problem)) = validate(name, value) {
                out.push(Finding::new(
                    messages::IST0125::message(name, problem),
                    Some(at(&object, name)),
                ));
            }
        }
    }
}

/// `annotations.AlphaAnalyzer` (`maturity.AlphaAnalyzer`).
pub fn alpha(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for object in objects(snapshot) {
        for (name, _) in annotations_of(object.meta) {
            if !is_istio(name) {
                continue;
            }
            let Some(def) = annotations::lookup(name) else {
                continue;
            };
            if def.status != FeatureStatus::Alpha
                || ALWAYS_IGNORED.contains(&def.name)
                || (object.cni && IGNORED_WITH_CNI.contains(&def.name))
            {
                continue;
            }
            out.push(Finding::new(
                messages::IST0136::message(name),
                Some(at(&object, name)),
            ));
        }
    }
}

/// The injector's check of an annotation's value, with its error text; `None` when the
/// annotation's value is not checked. `proxy.istio.io/config` is not checked here (Istio
/// validates it as a ProxyConfig; see docs/compat.md).
pub fn validate(name: &str, value: &str) -> Option<Result<(), String>> {
    Some(match name {
        "sidecar.istio.io/interceptionMode" => match value {
            "REDIRECT" | "TPROXY" | "NONE" => Ok(()),
            _ => Err(format!(
                "interceptionMode invalid, use REDIRECT,TPROXY,NONE: {value}"
            )),
        },
        "status.sidecar.istio.io/port" => parse_port(value)
            .map(drop)
            .map_err(|e| format!("excludeInboundPorts invalid: {e}")),
        "readiness.status.sidecar.istio.io/initialDelaySeconds"
        | "readiness.status.sidecar.istio.io/periodSeconds"
        | "readiness.status.sidecar.istio.io/failureThreshold" => {
            parse_uint(value, u32::MAX.into()).map(drop)
        }
        "traffic.sidecar.istio.io/includeOutboundIPRanges" => {
            if value == "*" {
                Ok(())
            } else {
                cidr_list(value).map_err(|e| format!("includeIPRanges invalid: {e}"))
            }
        }
        "traffic.sidecar.istio.io/excludeOutboundIPRanges" => {
            cidr_list(value).map_err(|e| format!("excludeIPRanges invalid: {e}"))
        }
        "traffic.sidecar.istio.io/includeInboundPorts" => {
            if value == "*" {
                Ok(())
            } else {
                port_list("includeInboundPorts", value)
            }
        }
        "traffic.sidecar.istio.io/excludeInboundPorts" => port_list("excludeInboundPorts", value),
        "traffic.sidecar.istio.io/excludeOutboundPorts" => port_list("excludeOutboundPorts", value),
        "traffic.sidecar.istio.io/excludeInterfaces"
        | "traffic.sidecar.istio.io/kubevirtInterfaces"
        | "istio.io/reroute-virtual-interfaces" => interface_names(value),
        "prometheus.istio.io/merge-metrics" => match value {
            "1" | "t" | "T" | "TRUE" | "true" | "True" | "0" | "f" | "F" | "FALSE" | "false"
            | "False" => Ok(()),
            _ => Err(format!(
                "strconv.ParseBool: parsing {}: invalid syntax",
                go_quote(value)
            )),
        },
        "sidecar.istio.io/proxyCPU"
        | "sidecar.istio.io/proxyMemory"
        | "sidecar.istio.io/proxyCPULimit"
        | "sidecar.istio.io/proxyMemoryLimit" => quantity(value),
        _ => return None,
    })
}

/// Go's `strconv.Quote` for the plain strings annotation values are.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Go's `strconv.ParseUint(value, 10, bits)` with its error texts.
fn parse_uint(value: &str, max: u64) -> Result<u64, String> {
    let syntax = || {
        format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(value)
        )
    };
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(syntax());
    }
    match value.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(value)
        )),
    }
}

fn parse_port(port: &str) -> Result<u64, String> {
    parse_uint(port.trim(), u16::MAX.into())
        .map_err(|e| format!("failed parsing port '{port}': {e}"))
}

fn port_list(parameter: &str, ports: &str) -> Result<(), String> {
    let ports = ports.trim();
    if ports.is_empty() {
        return Ok(());
    }
    for port in ports.split(',') {
        parse_port(port)
            .map_err(|e| format!("{parameter} invalid: failed parsing port '{port}': {e}"))?;
    }
    Ok(())
}

fn cidr_list(cidrs: &str) -> Result<(), String> {
    if cidrs.is_empty() {
        return Ok(());
    }
    for cidr in cidrs.split(',') {
        parse_prefix(cidr).map_err(|e| {
            format!(
                "failed parsing cidr '{cidr}': netip.ParsePrefix({}): {e}",
                go_quote(cidr)
            )
        })?;
    }
    Ok(())
}

/// Go's `netip.ParsePrefix`, with the reasons it gives.
fn parse_prefix(cidr: &str) -> Result<(), String> {
    let Some((addr, bits)) = cidr.rsplit_once('/') else {
        return Err("no '/'".into());
    };
    if addr.contains('%') {
        return Err("IPv6 zones cannot be present in a prefix".into());
    }
    let ip: std::net::IpAddr = addr
        .parse()
        .map_err(|_| format!("ParseAddr({}): unable to parse IP", go_quote(addr)))?;
    let leading_zero = bits.len() > 1 && bits.starts_with('0');
    let Ok(n) = bits.parse::<u32>() else {
        return Err(format!("bad bits after slash: {}", go_quote(bits)));
    };
    if leading_zero || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad bits after slash: {}", go_quote(bits)));
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if n > max {
        return Err("prefix length out of range".into());
    }
    Ok(())
}

fn interface_names(interfaces: &str) -> Result<(), String> {
    if interfaces.is_empty() {
        return Ok(());
    }
    for name in interfaces.split(',') {
        let name = name.trim();
        if name.is_empty() {
            return Err("empty interface name".into());
        }
        if name.len() > 15 {
            return Err(format!(
                "interface name {} too long (max 15 chars)",
                go_quote(name)
            ));
        }
        let mut chars = name.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !valid {
            return Err(format!(
                "interface name {} contains invalid characters",
                go_quote(name)
            ));
        }
    }
    Ok(())
}

/// Kubernetes' `resource.ParseQuantity`, with its error texts.
fn quantity(value: &str) -> Result<(), String> {
    const FORMAT: &str = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    if value.chars().any(char::is_control) {
        return Err("value contains control characters".into());
    }
    let rest = value.strip_prefix(['+', '-']).unwrap_or(value);
    let number_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    let (number, suffix) = rest.split_at(number_len);
    if number.is_empty() {
        return Err(FORMAT.into());
    }
    // The suffix: letters of [eEinumkKMGTP], then an optional signed exponent.
    let letters = suffix
        .bytes()
        .take_while(|b| b"eEinumkKMGTP".contains(b))
        .count();
    let (unit, exponent) = suffix.split_at(letters);
    let exponent_digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if !exponent_digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FORMAT.into());
    }
    if number.matches('.').count() > 1 || number == "." {
        return Err("unable to parse numeric part of quantity".into());
    }
    let known = matches!(
        unit,
        "" | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
            | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
    ) && exponent.is_empty();
    let decimal_exponent = matches!(unit, "e" | "E") && !exponent_digits.is_empty();
    if !(known || decimal_exponent) {
        return Err("unable to parse quantity's suffix".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_checks_give_istios_error_texts() {
        assert_eq!(
            validate(
                "readiness.status.sidecar.istio.io/initialDelaySeconds",
                "bar"
            ),
            Some(Err(
                "strconv.ParseUint: parsing \"bar\": invalid syntax".into()
            ))
        );
        assert_eq!(
            validate("readiness.status.sidecar.istio.io/periodSeconds", "10"),
            Some(Ok(()))
        );
        assert_eq!(
            validate("traffic.sidecar.istio.io/excludeInboundPorts", "80,x"),
            Some(Err("excludeInboundPorts invalid: failed parsing port 'x': failed parsing port 'x': strconv.ParseUint: parsing \"x\": invalid syntax".into()))
        );
        assert_eq!(
            validate("traffic.sidecar.istio.io/includeOutboundIPRanges", "10.0.0.0"),
            Some(Err("includeIPRanges invalid: failed parsing cidr '10.0.0.0': netip.ParsePrefix(\"10.0.0.0\"): no '/'".into()))
        );
        assert_eq!(
            validate("traffic.sidecar.istio.io/includeOutboundIPRanges", "10.0.0.0/8,*"),
            Some(Err("includeIPRanges invalid: failed parsing cidr '*': netip.ParsePrefix(\"*\"): no '/'".into()))
        );
        assert_eq!(
            validate("sidecar.istio.io/interceptionMode", "TPROXY"),
            Some(Ok(()))
        );
        assert_eq!(validate("sidecar.istio.io/proxyCPU", "100m"), Some(Ok(())));
        assert_eq!(
            validate("sidecar.istio.io/proxyMemory", "1Gi"),
            Some(Ok(()))
        );
        assert_eq!(
            validate("sidecar.istio.io/proxyMemory", "1e3"),
            Some(Ok(()))
        );
        assert!(matches!(
            validate("sidecar.istio.io/proxyMemory", "lots"),
            Some(Err(_))
        ));
        assert_eq!(validate("sidecar.istio.io/userVolume", "x"), None);
    }

    #[test]
    fn istio_namespace() {
        assert!(is_istio("networking.istio.io/exportTo"));
        assert!(is_istio("istio.io/rev"));
        assert!(is_istio("kubernetes.io/ingress.class"));
        assert!(!is_istio("kubernetes.io/psp"));
        assert!(!is_istio("helm.sh/hook"));
    }
}
