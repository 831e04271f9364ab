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

/// The Duration paths of one kind as a tree of steps: the paths that share a prefix share its
/// nodes, so a spec is walked once for all of them (a DestinationRule has 54 paths, most of them
/// under two fields).
struct Step {
    /// The field by its camel-case and its snake-case name.
    name: String,
    snake: String,
    /// A list: the rest of the path is in each of its items.
    list: bool,
    /// The position of the path that ends here, in the kind's list of paths.
    ends: Option<usize>,
    next: Vec<Step>,
}

impl Step {
    /// The tree of `paths` (`a.b[].c`), in their order.
    fn tree(paths: &[String]) -> Vec<Step> {
        let mut roots: Vec<Step> = Vec::new();
        for (position, path) in paths.iter().enumerate() {
            let mut level = &mut roots;
            let steps: Vec<&str> = path.split('.').collect();
            for (depth, step) in steps.iter().enumerate() {
                let (name, list) = match step.strip_suffix("[]") {
                    Some(n) => (n, true),
                    None => (*step, false),
                };
                let at = match level.iter().position(|s| s.name == name && s.list == list) {
                    Some(at) => at,
                    None => {
                        level.push(Step {
                            name: name.to_string(),
                            snake: snake(name),
                            list,
                            ends: None,
                            next: Vec::new(),
                        });
                        level.len() - 1
                    }
                };
                if depth + 1 == steps.len() {
                    level[at].ends = Some(position);
                }
                level = &mut level[at].next;
            }
        }
        roots
    }
}

/// The tree of the Duration paths of each kind that has some, made once.
fn steps_of(kind: &str) -> &'static [Step] {
    static STEPS: std::sync::OnceLock<Vec<(&'static str, Vec<Step>)>> = std::sync::OnceLock::new();
    let table = STEPS.get_or_init(|| {
        paths()
            .into_iter()
            .map(|(kind, paths)| (kind, Step::tree(&paths)))
            .collect()
    });
    table
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[], |(_, steps)| steps.as_slice())
}

/// A member of a JSON object by either of its names: a scan of the small objects specs are
/// made of (comparing a few keys costs less than hashing one), the map's index for the others.
fn member<'v>(
    object: &'v serde_json::Map<String, Value>,
    name: &str,
    snake: &str,
) -> Option<&'v Value> {
    if object.len() <= 8 {
        let named = |wanted: &str| object.iter().find(|(k, _)| *k == wanted).map(|(_, v)| v);
        named(name).or_else(|| named(snake))
    } else {
        object.get(name).or_else(|| object.get(snake))
    }
}

/// The first Duration of the spec that Go's `time.ParseDuration` refuses, as Istio's reader
/// says it (`bad Duration: time: ...`): of the paths in their order, the first that has one,
/// and on it the first in the spec's order.
pub fn refused(kind: &str, spec: &Value) -> Option<String> {
    /// The refusal of the path with the lowest position, found so far.
    type Found = Option<(usize, String)>;
    fn walk(node: &Value, steps: &[Step], found: &mut Found) {
        let Some(object) = node.as_object() else {
            return;
        };
        for step in steps {
            let Some(child) = member(object, &step.name, &step.snake) else {
                continue;
            };
            let items = if step.list {
                let Some(items) = child.as_array() else {
                    continue;
                };
                items.as_slice()
            } else {
                std::slice::from_ref(child)
            };
            for item in items {
                if let (Some(position), Value::String(text)) = (step.ends, item)
                    && found.as_ref().is_none_or(|(first, _)| position < *first)
                    && let Err(e) = go_parse_duration(text)
                {
                    *found = Some((position, format!("bad Duration: {e}")));
                }
                walk(item, &step.next, found);
            }
        }
    }
    let mut found = None;
    walk(spec, steps_of(kind), &mut found);
    found.map(|(_, reason)| reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_path_with_a_refused_duration_is_said_then_its_first_in_the_spec() {
        // connectionPool comes first in the spec, outlierDetection first among the paths.
        let spec = json!({"trafficPolicy": {
            "connectionPool": {"tcp": {"connectTimeout": "1x"}},
            "outlierDetection": {"interval": "2y"}
        }, "subsets": [
            {"trafficPolicy": {"outlierDetection": {"interval": "3s"}}},
            {"trafficPolicy": {"outlierDetection": {"interval": "4z"}}},
            {"trafficPolicy": {"outlierDetection": {"interval": "5w"}}}
        ]});
        assert_eq!(
            refused("DestinationRule", &spec),
            Some(r#"bad Duration: time: unknown unit "y" in duration "2y""#.into())
        );
        let subsets_only = json!({"subsets": spec["subsets"].clone()});
        assert_eq!(
            refused("DestinationRule", &subsets_only),
            Some(r#"bad Duration: time: unknown unit "z" in duration "4z""#.into())
        );
        // snake-case names are read too; a value that is not a string is not a Duration
        assert_eq!(
            refused(
                "VirtualService",
                &json!({"http": [{"timeout": 5}, {"retries": {"per_try_timeout": "7q"}}]})
            ),
            Some(r#"bad Duration: time: unknown unit "q" in duration "7q""#.into())
        );
        assert_eq!(refused("Gateway", &spec), None);
    }

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
