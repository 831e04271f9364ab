//! pilot-agent's bootstrap rebuilt from the inputs, a `bootstrapOverride` merged over it (with
//! the `bootstrap validate` problems of the result, pointed at the override's own lines), and the
//! comparison of the expected values with the live bootstrap from `/config_dump`.

use serde_json::{Value, json};

use crate::envoy::bootstrap::{self, Bootstrap, Format, ISTIO_XDS_CLUSTER, JsonPath, Segment};

use super::checks::{LiveField, OverrideProblem, Status};
use super::inputs::*;

/// Runs the `bootstrap validate` checks on a bootstrapOverride: pilot-agent passes the file to
/// Envoy with `--config-yaml`, which Envoy merges over the bootstrap pilot-agent wrote (nested
/// messages merged, repeated fields appended, scalars replaced), so the checks run on that
/// merge and report what the override brought in. pilot-agent reads the file as YAML (JSON is
/// YAML): one it cannot read is skipped with a warning, and Envoy runs with
/// `--allow-unknown-static-fields`, so unknown fields are ignored rather than fatal.
pub fn override_problems(text: &str, inputs: &BootstrapInputs) -> Vec<OverrideProblem> {
    let overlay = match bootstrap::parse(text, Format::Yaml) {
        Ok(doc) => doc,
        Err(problem) => {
            return vec![OverrideProblem {
                code: problem.code(),
                name: problem.message_type.name,
                status: Status::Warning,
                path: problem.path.to_string(),
                line: problem.line,
                column: problem.column,
                message: format!(
                    "{} pilot-agent cannot read it either: it logs \"Failed to read bootstrap override\" and starts Envoy without the override.",
                    problem.message
                ),
            }];
        }
    };
    let base = pilot_agent_bootstrap(inputs);
    let mut merged = base.clone();
    merge(&mut merged, &overlay.value);
    let check = |value: Value| {
        bootstrap::check(&Bootstrap {
            value,
            lines: None,
            format: Format::Json,
        })
    };
    let before: Vec<(String, String, String)> = check(base.clone())
        .into_iter()
        .map(|p| (p.code().to_string(), p.path.to_string(), p.message))
        .collect();
    let mut out = Vec::new();
    for problem in check(merged) {
        let key = (
            problem.code().to_string(),
            problem.path.to_string(),
            problem.message.clone(),
        );
        if before.contains(&key) {
            continue;
        }
        let (path, line) = match overlay_path(&problem.path, &base, &overlay.value) {
            Some(path) => {
                let line = overlay.lines.as_ref().map(|l| path.line_in(l));
                (path.to_string(), line)
            }
            None => (problem.path.to_string(), None),
        };
        let (status, message) = if problem.code() == "MD0308" {
            (
                Status::Warning,
                format!(
                    "{} pilot-agent runs Envoy with --allow-unknown-static-fields, so Envoy ignores the field: the setting has no effect.",
                    problem.message
                ),
            )
        } else {
            (
                match problem.message_type.level {
                    crate::findings::messages::Level::Error => Status::Error,
                    crate::findings::messages::Level::Warning => Status::Warning,
                    crate::findings::messages::Level::Info => Status::Info,
                },
                problem.message.clone(),
            )
        };
        out.push(OverrideProblem {
            code: problem.code(),
            name: problem.message_type.name,
            status,
            path,
            line,
            column: None,
            message,
        });
    }
    out
}

/// The parts of the bootstrap pilot-agent writes for these inputs that an override can collide
/// with: node, admin, the static clusters (prometheus_stats, agent, sds-grpc, xds-grpc), the
/// Prometheus and health listeners, and ADS.
pub fn pilot_agent_bootstrap(inputs: &BootstrapInputs) -> Value {
    let get = |field: &str, default: &str| inputs.get(field).unwrap_or(default).to_string();
    let port = |field: &str, default: u32| {
        inputs
            .get(field)
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(default)
    };
    // A node.id still waiting for the pod's IP gets a stand-in, so it is not a problem here.
    let id = get("node.id", "").replace("<pod IP>", "127.0.0.1");
    let admin = port("admin port", 15000);
    let status = port("pilot-agent status port", 15020);
    let health = port("health listener port", 15021);
    let prometheus = port("Prometheus listener port", 15090);
    let endpoint = |address: Value| json!({"lb_endpoints": [{"endpoint": {"address": address}}]});
    let local = |port: u32| json!({"socket_address": {"protocol": "TCP", "address": "127.0.0.1", "port_value": port}});
    let pipe = |path: &str| json!({"pipe": {"path": path}});
    let http2 = json!({
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {"http2_protocol_options": {}}
        }
    });
    let cluster = |name: &str, timeout: &str, address: Value, h2: bool| {
        let mut c = json!({
            "name": name,
            "type": "STATIC",
            "connect_timeout": timeout,
            "lb_policy": "ROUND_ROBIN",
            "load_assignment": {"cluster_name": name, "endpoints": [endpoint(address)]}
        });
        if h2 {
            c["typed_extension_protocol_options"] = http2.clone();
        }
        c
    };
    let listener = |port: u32, prefix: &str, stat_prefix: &str, target: &str| {
        json!({
            "name": format!("0.0.0.0_{port}"),
            "address": {"socket_address": {"protocol": "TCP", "address": "0.0.0.0", "port_value": port}},
            "filter_chains": [{"filters": [{
                "name": "envoy.filters.network.http_connection_manager",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                    "codec_type": "AUTO",
                    "stat_prefix": stat_prefix,
                    "route_config": {"virtual_hosts": [{
                        "name": "backend",
                        "domains": ["*"],
                        "routes": [{"match": {"prefix": prefix}, "route": {"cluster": target}}]
                    }]},
                    "http_filters": [{
                        "name": "envoy.filters.http.router",
                        "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}
                    }]
                }
            }]}]
        })
    };
    let ads = json!({"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"});
    json!({
        "node": {"id": id, "cluster": get("node.cluster", "istio-proxy"), "metadata": {}},
        "admin": {"address": local(admin)},
        "dynamic_resources": {
            "lds_config": ads.clone(),
            "cds_config": ads,
            "ads_config": {
                "api_type": "DELTA_GRPC",
                "set_node_on_first_message_only": true,
                "transport_api_version": "V3",
                "grpc_services": [{"envoy_grpc": {"cluster_name": ISTIO_XDS_CLUSTER}}]
            }
        },
        "static_resources": {
            "clusters": [
                cluster("prometheus_stats", "0.250s", local(admin), false),
                cluster("agent", "0.250s", local(status), false),
                cluster("sds-grpc", "1s", pipe("./var/run/secrets/workload-spiffe-uds/socket"), true),
                cluster(ISTIO_XDS_CLUSTER, "1s", pipe("./etc/istio/proxy/XDS"), true),
            ],
            "listeners": [
                listener(prometheus, "/stats/prometheus", "stats", "prometheus_stats"),
                listener(health, "/healthz/ready", "agent", "agent"),
            ]
        }
    })
}

/// True when two field names are the same proto field (`static_resources`, `staticResources`).
pub(super) fn same_field(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_')
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    a == b || norm(a) == norm(b)
}

/// Protobuf's MergeFrom on JSON: objects merged field by field, arrays appended, anything else
/// replaced. (Oneofs and `Any` payloads are merged as plain objects: close enough for the checks.)
pub(super) fn merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (key, value) in o {
                let existing = b.keys().find(|k| same_field(k, key)).cloned();
                match existing.and_then(|k| b.get_mut(&k)) {
                    Some(slot) => merge(slot, value),
                    None => {
                        b.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Value::Array(b), Value::Array(o)) => b.extend(o.iter().cloned()),
        (slot, value) => *slot = value.clone(),
    }
}

/// Where a path of the merged bootstrap is in the override, when the override wrote it.
pub(super) fn overlay_path(path: &JsonPath, base: &Value, overlay: &Value) -> Option<JsonPath> {
    let mut out = JsonPath::root();
    let mut b = Some(base);
    let mut o = overlay;
    for segment in path.segments() {
        match segment {
            Segment::Key(key) => {
                let (actual, next) = o.as_object()?.iter().find(|(k, _)| same_field(k, key))?;
                out = out.key(actual);
                b = b
                    .and_then(Value::as_object)
                    .and_then(|m| m.iter().find(|(k, _)| same_field(k, key)).map(|(_, v)| v));
                o = next;
            }
            Segment::Index(i) => {
                let before = b.and_then(Value::as_array).map_or(0, Vec::len);
                let index = i.checked_sub(before)?;
                o = o.as_array()?.get(index)?;
                out = out.index(index);
                b = None;
            }
        }
    }
    Some(out)
}

/// The derived values next to what the running Envoy loaded.
pub(super) fn compare_live(
    inputs: &BootstrapInputs,
    metadata: &[(String, String)],
    bootstrap: &Value,
) -> Vec<LiveField> {
    let text = |pointer: &str| match bootstrap.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join("");
    let mut out = Vec::new();
    for (field, pointer) in [
        ("node.id", "/node/id"),
        ("node.cluster", "/node/cluster"),
        ("admin port", "/admin/address/socket_address/port_value"),
    ] {
        let Some(expected) = inputs.get(field) else {
            continue;
        };
        let live = text(pointer);
        out.push(LiveField {
            field: field.to_string(),
            expected: expected.to_string(),
            matches: (!expected.contains('<')).then(|| live == expected),
            live,
        });
    }
    let ads = text("/dynamic_resources/ads_config/grpc_services/0/envoy_grpc/cluster_name");
    out.push(LiveField {
        field: "ADS cluster".to_string(),
        expected: ISTIO_XDS_CLUSTER.to_string(),
        matches: Some(ads == ISTIO_XDS_CLUSTER),
        live: ads,
    });
    for (key, expected) in metadata {
        let pointer = format!(
            "/node/metadata/{}",
            key.replace('~', "~0").replace('/', "~1")
        );
        let live = text(&pointer);
        out.push(LiveField {
            field: format!("metadata.{key}"),
            expected: expected.clone(),
            matches: Some(live == *expected || collapse(&live) == collapse(expected)),
            live,
        });
    }
    out
}

/// The bootstrap section of a `/config_dump` answer (whole, or filtered with a mask).
pub fn bootstrap_of_config_dump(dump: &Value) -> Option<&Value> {
    dump.get("configs")?
        .as_array()?
        .iter()
        .find(|c| {
            c.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with(".BootstrapConfigDump"))
                || c.get("bootstrap").is_some()
        })?
        .get("bootstrap")
}
