//! Istio's schema validation of VirtualServices (`schema.ValidationAnalyzer.VirtualService`):
//! validation errors (IST0106), rules that can never match (IST0130) and matches that an
//! earlier rule already takes (IST0131). The rules are those of Istio's
//! `ValidateVirtualService` that mesh-doctor implements (see docs/compat.md for the rest);
//! config that does not fit Istio's schema at all is IST0106 with the reader's reason.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use serde::Deserialize;

use super::Input;
use super::schema_common::{Validation, metadata};
use super::schema_virtualservice;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{HttpMatch, HttpRoute, StringMatch, Typed, VirtualService};
use crate::kube::snapshot::{ConfigObject, Located};

fn reference(resource: &Located<ConfigObject>) -> Option<ResourceRef> {
    Some(ResourceRef::of(resource))
}

/// Config resources whose spec does not fit the schema (IST0106 with the reason).
pub fn invalid(input: &Input, out: &mut Vec<Finding>) {
    for (resource, reason) in &input.config.invalid {
        out.push(Finding::new(
            messages::IST0106::message(reason),
            reference(resource),
        ));
    }
}

/// `schema.ValidationAnalyzer.VirtualService`.
pub fn virtual_services(input: &Input, out: &mut Vec<Finding>) {
    for vs in &input.config.virtual_services {
        let mut v = Validation::default();
        metadata(vs.resource, &mut v);
        if !v.errors.is_empty() {
            v.report(&ResourceRef::of(vs.resource), out);
            continue;
        }
        let spec = &vs.resource.object.spec;
        if let Ok(whole) = schema_virtualservice::VirtualServiceSpec::deserialize(spec) {
            schema_virtualservice::validate(vs.resource, &whole, &mut v);
        }
        v.report(&ResourceRef::of(vs.resource), out);
        unreachable_rules(vs, out);
    }
}

/// A match as Istio compares them: its JSON without `name`, keys sorted, zero values dropped.
fn canonical(value: &Value) -> String {
    fn clean(v: &Value) -> Option<Value> {
        match v {
            Value::Null => None,
            Value::Bool(false) => None,
            Value::Number(n) if n.as_f64() == Some(0.0) => None,
            Value::String(s) if s.is_empty() => None,
            Value::Array(a) if a.is_empty() => None,
            Value::Array(a) => Some(Value::Array(a.iter().filter_map(clean).collect())),
            Value::Object(m) => {
                let sorted: BTreeMap<&String, Value> =
                    m.iter().filter_map(|(k, v)| Some((k, clean(v)?))).collect();
                if sorted.is_empty() {
                    return None;
                }
                Some(Value::Object(
                    sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect(),
                ))
            }
            other => Some(other.clone()),
        }
    }
    let mut value = value.clone();
    if let Some(m) = value.as_object_mut() {
        m.remove("name");
    }
    clean(&value)
        .map(|v| v.to_string())
        .unwrap_or_else(|| "{}".into())
}

fn route_name(route: Option<&HttpRoute>, n: usize) -> String {
    match route {
        Some(r) if !r.name.is_empty() => format!("{:?}", r.name),
        _ => format!("#{n}"),
    }
}

fn match_name(m: Option<&HttpMatch>, n: usize) -> String {
    match m {
        Some(m) if !m.name.is_empty() => format!("{:?}", m.name),
        _ => format!("#{n}"),
    }
}

/// The raw matches of a route list (`spec.<kind>[i].match`), for the comparison.
fn raw_matches<'v>(spec: &'v Value, kind: &str, i: usize) -> Vec<&'v Value> {
    spec.get(kind)
        .and_then(|k| k.get(i))
        .and_then(|r| r.get("match"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn unreachable_rules(vs: &Typed<VirtualService>, out: &mut Vec<Finding>) {
    let spec = &vs.resource.object.spec;
    let mut unused = |rule: String, reason: &str| {
        out.push(Finding::new(
            messages::IST0130::message(rule, reason),
            reference(vs.resource),
        ))
    };
    let mut ineffective: Vec<(String, String, String)> = Vec::new();
    for kind in ["http", "tcp", "tls"] {
        let count = match kind {
            "http" => vs.spec.http.len(),
            "tcp" => vs.spec.tcp.len(),
            _ => vs.spec.tls.len(),
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut empty_seen = false;
        let mut prefixes: Vec<Overlap> = Vec::new();
        for rule in 0..count {
            let http = (kind == "http").then(|| &vs.spec.http[rule]);
            let name = route_name(http, rule);
            let matches = raw_matches(spec, kind, rule);
            if matches.is_empty() {
                if empty_seen {
                    unused(name, "only the last rule can have no matches");
                }
                empty_seen = true;
                continue;
            }
            let mut duplicates = 0;
            for (n, m) in matches.iter().enumerate() {
                if empty_seen {
                    unused(name.clone(), "route without matches defined before");
                    continue;
                }
                let key = canonical(m);
                let typed = http.and_then(|h| h.matches.get(n));
                if let Some(&dup) = seen.get(&key) {
                    let dup_name = route_name((kind == "http").then(|| &vs.spec.http[dup]), dup);
                    ineffective.push((name.clone(), match_name(typed, n), dup_name));
                    duplicates += 1;
                    continue;
                }
                seen.insert(key, rule);
                if let Some(o) =
                    typed.and_then(|t| Overlap::of(t, name.clone(), match_name(typed, n)))
                {
                    prefixes.push(o);
                }
            }
            if duplicates == matches.len() {
                unused(name, "all matches used by prior rules");
            }
        }
        if prefixes.len() > 1 {
            for (i, a) in prefixes.iter().enumerate() {
                for b in &prefixes[i + 1..] {
                    if b.prefix == a.prefix {
                        continue;
                    }
                    if covers(a, b) {
                        ineffective.push((
                            b.route.clone(),
                            format!("{} of prefix {}", b.matched, b.prefix),
                            format!("{} of prefix {} on {}", a.matched, a.prefix, a.route),
                        ));
                    }
                }
            }
        }
    }
    for (rule, matched, dup) in ineffective {
        out.push(Finding::new(
            messages::IST0131::message(rule, matched, dup),
            reference(vs.resource),
        ));
    }
}

/// Istio's `OverlappingMatchValidationForHTTPRoute`: a URI-prefix match reduced to strings.
struct Overlap {
    route: String,
    matched: String,
    prefix: String,
    port: u32,
    method: String,
    authority: String,
    headers: BTreeMap<String, String>,
    query: BTreeMap<String, String>,
    without: BTreeMap<String, String>,
}

fn exact_or_prefix(m: Option<&StringMatch>) -> String {
    match m {
        Some(StringMatch { exact: Some(e), .. }) if !e.is_empty() => format!("exact:{e}"),
        Some(StringMatch {
            prefix: Some(p), ..
        }) if !p.is_empty() => format!("prefix:{p}"),
        _ => String::new(),
    }
}

impl Overlap {
    fn of(m: &HttpMatch, route: String, matched: String) -> Option<Self> {
        let prefix = m.uri.as_ref()?.prefix.clone().filter(|p| !p.is_empty())?;
        let mut method = exact_or_prefix(m.method.as_ref());
        if method.is_empty() {
            method = "exact:GET".into();
        }
        let map = |h: &BTreeMap<String, StringMatch>| {
            h.iter()
                .map(|(k, v)| (k.clone(), exact_or_prefix(Some(v))))
                .collect()
        };
        Some(Overlap {
            route,
            matched,
            prefix,
            port: m.port,
            method,
            authority: exact_or_prefix(m.authority.as_ref()),
            headers: map(&m.headers),
            query: map(&m.query_params),
            without: map(&m.without_headers),
        })
    }
}

fn covers(a: &Overlap, b: &Overlap) -> bool {
    let covers_value = |x: &str, y: &str| x == y || x.starts_with(y);
    let covers_map = |x: &BTreeMap<String, String>, y: &BTreeMap<String, String>| {
        x.len() == y.len()
            && x.iter()
                .all(|(k, v)| y.get(k).is_some_and(|w| covers_value(v, w)))
    };
    b.prefix.starts_with(&a.prefix)
        && b.port == a.port
        && covers_value(&a.method, &b.method)
        && covers_value(&a.authority, &b.authority)
        && covers_map(&a.headers, &b.headers)
        && covers_map(&a.query, &b.query)
        && covers_map(&a.without, &b.without)
}

/// Istio's warning on every EnvoyFilter.
const ENVOY_FILTER_WARNING: &str = "EnvoyFilter exposes internal implementation details that may change at any time. Prefer other APIs if possible, and exercise extreme caution, especially around upgrades.";

/// `schema.ValidationAnalyzer.EnvoyFilter`: Istio's warning that EnvoyFilters are internal, and
/// filters given by name without `typed_config` (IST0133).
pub fn envoy_filters(input: &Input, out: &mut Vec<Finding>) {
    for ef in &input.config.envoy_filters {
        out.push(Finding::new(
            messages::IST0133::message(ENVOY_FILTER_WARNING),
            reference(ef.resource),
        ));
        for patch in &ef.spec.config_patches {
            if !matches!(
                patch.apply_to.as_str(),
                "HTTP_FILTER" | "NETWORK_FILTER" | "LISTENER_FILTER"
            ) {
                continue;
            }
            let Some(Value::Object(value)) = patch.patch.as_ref().and_then(|p| p.value.as_ref())
            else {
                continue;
            };
            let typed = [
                "typed_config",
                "typedConfig",
                "config_discovery",
                "configDiscovery",
            ]
            .iter()
            .any(|k| value.contains_key(*k));
            if !typed {
                let name = value.get("name").and_then(Value::as_str).unwrap_or("");
                out.push(Finding::new(
                    messages::IST0133::message(format!(
                        "using deprecated types by name without typed_config; {name}"
                    )),
                    reference(ef.resource),
                ));
            }
        }
    }
}
