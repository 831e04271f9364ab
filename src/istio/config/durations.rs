//! The `google.protobuf.Duration` fields of Istio's kinds (istio/api 1.31), which Istio's reader
//! decodes with Go's `time.ParseDuration`: a text Go refuses (`1e3s`, `5parsecs`, `10`) makes
//! the whole object unreadable to istioctl (`bad Duration: time: unknown unit "e" in duration
//! "1e3s"`) and to istiod, even where the CRD's schema accepts the string (`httpCookie.ttl`,
//! `retryBudget.budgetInterval` have no CEL rule). Pure.

use serde_json::Value;

use crate::formats::go_duration::go_parse_duration;

/// A connection pool's durations (`ConnectionPoolSettings`).
const POOL: &[&str] = &[
    "tcp.connectTimeout",
    "tcp.maxConnectionDuration",
    "tcp.idleTimeout",
    "tcp.tcpKeepalive.time",
    "tcp.tcpKeepalive.interval",
    "http.idleTimeout",
    "http.http2KeepAlive.interval",
    "http.http2KeepAlive.timeout",
];

/// A port traffic policy's durations, below its connection pool (`PortTrafficPolicy`, and
/// `TrafficPolicy` beside its retry budget).
const PORT_POLICY: &[&str] = &[
    "loadBalancer.warmupDurationSecs",
    "loadBalancer.warmup.duration",
    "loadBalancer.consistentHash.httpCookie.ttl",
    "outlierDetection.interval",
    "outlierDetection.baseEjectionTime",
];

const VIRTUAL_SERVICE: &[&str] = &[
    "http[].timeout",
    "http[].retries.perTryTimeout",
    "http[].retries.backoff",
    "http[].corsPolicy.maxAge",
    "http[].fault.delay.fixedDelay",
    "http[].fault.delay.exponentialDelay",
];

/// The paths (from the spec) of the Duration fields of every kind that has some.
fn paths() -> Vec<(&'static str, Vec<String>)> {
    let policy = |prefix: &str, out: &mut Vec<String>| {
        for p in PORT_POLICY {
            out.push(format!("{prefix}{p}"));
        }
        for p in POOL {
            out.push(format!("{prefix}connectionPool.{p}"));
        }
    };
    let mut destination_rule = Vec::new();
    for at in ["trafficPolicy.", "subsets[].trafficPolicy."] {
        policy(at, &mut destination_rule);
        policy(&format!("{at}portLevelSettings[]."), &mut destination_rule);
        destination_rule.push(format!("{at}retryBudget.budgetInterval"));
    }
    let sidecar = ["inboundConnectionPool.", "ingress[].connectionPool."]
        .iter()
        .flat_map(|at| POOL.iter().map(move |p| format!("{at}{p}")))
        .collect();
    vec![
        (
            "VirtualService",
            VIRTUAL_SERVICE.iter().map(|p| p.to_string()).collect(),
        ),
        ("DestinationRule", destination_rule),
        ("Sidecar", sidecar),
        ("Telemetry", vec!["metrics[].reportingInterval".into()]),
        ("RequestAuthentication", vec!["jwtRules[].timeout".into()]),
    ]
}

/// A field name as protobuf's JSON names it from its camel-case name (`perTryTimeout` is
/// `per_try_timeout`): Istio's reader takes both.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// One step of a Duration's path: a field, by its camel-case and its snake-case name, and
/// whether it is a list whose items the rest of the path is in.
struct Step {
    name: String,
    snake: String,
    list: bool,
}

/// The steps of each Duration path of one kind.
type KindPaths = (&'static str, Vec<Vec<Step>>);

/// The steps of every Duration path of the kinds that have some, made once.
fn steps_of(kind: &str) -> &'static [Vec<Step>] {
    static STEPS: std::sync::OnceLock<Vec<KindPaths>> = std::sync::OnceLock::new();
    let table = STEPS.get_or_init(|| {
        paths()
            .into_iter()
            .map(|(kind, paths)| {
                let steps = paths
                    .iter()
                    .map(|path| {
                        path.split('.')
                            .map(|step| {
                                let (name, list) = match step.strip_suffix("[]") {
                                    Some(n) => (n, true),
                                    None => (step, false),
                                };
                                Step {
                                    name: name.to_string(),
                                    snake: snake(name),
                                    list,
                                }
                            })
                            .collect()
                    })
                    .collect();
                (kind, steps)
            })
            .collect()
    });
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, paths)| paths.as_slice())
}

/// The first Duration of the spec that Go's `time.ParseDuration` refuses, as Istio's reader
/// says it (`bad Duration: time: ...`).
pub fn refused(kind: &str, spec: &Value) -> Option<String> {
    fn walk(node: &Value, steps: &[Step]) -> Option<String> {
        let Some((step, rest)) = steps.split_first() else {
            return match node {
                Value::String(s) => go_parse_duration(s)
                    .err()
                    .map(|e| format!("bad Duration: {e}")),
                _ => None,
            };
        };
        let object = node.as_object()?;
        let child = object.get(&step.name).or_else(|| object.get(&step.snake))?;
        if step.list {
            child.as_array()?.iter().find_map(|item| walk(item, rest))
        } else {
            walk(child, rest)
        }
    }
    steps_of(kind).iter().find_map(|steps| walk(spec, steps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_go_refuses() {
        assert_eq!(
            refused(
                "VirtualService",
                &json!({"http": [{"timeout": "5s"}, {"retries": {"per_try_timeout": "1e3s"}}]})
            ),
            Some(r#"bad Duration: time: unknown unit "e" in duration "1e3s""#.into())
        );
        assert_eq!(
            refused(
                "DestinationRule",
                &json!({"subsets": [{"trafficPolicy": {"portLevelSettings": [{"loadBalancer":
                    {"consistentHash": {"httpCookie": {"ttl": "10"}}}}]}}]})
            ),
            Some(r#"bad Duration: time: missing unit in duration "10""#.into())
        );
        assert_eq!(
            refused(
                "Sidecar",
                &json!({"inboundConnectionPool": {"http": {"idleTimeout": "1h"}}})
            ),
            None
        );
        assert_eq!(refused("Gateway", &json!({"timeout": "x"})), None);
    }
}
