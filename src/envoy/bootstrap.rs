//! Envoy bootstrap checks, pure: the mistakes that make `istio-proxy` crash at start (or make
//! istiod's listeners collide later), found in the file before it is deployed.
//!
//! [`parse`] reads a bootstrap (strict JSON, or YAML) and keeps the line of every node;
//! [`check`] runs every check over it and returns [`Problem`]s, each with the JSON path into the
//! document (`dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name`) and its line.
//! [`validate`] does both. No I/O: running a real `envoy --mode validate` is the command's job;
//! [`envoy_reason`] and [`codes_covering`] only read what it printed.
//!
//! What counts as an *Istio proxy bootstrap* (the node.id format checks apply only to those): it
//! has an ADS config, and an Istio marker — the ADS uses a cluster named `xds-grpc`, node.id
//! contains `~`, or node.metadata has `ISTIO_VERSION`. A static-only bootstrap, or one for another
//! control plane, is checked for what Envoy itself requires, not for Istio's conventions.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use serde_json::{Map, Value};

use crate::findings::messages::{self, Arg, MessageType};
use crate::formats::yaml::{self, LineTree};

/// The ADS cluster pilot-agent's template uses.
pub const ISTIO_XDS_CLUSTER: &str = "xds-grpc";

/// Proxy types istiod accepts as the first part of node.id.
pub const ISTIO_NODE_TYPES: &[&str] = &["sidecar", "router", "waypoint", "ztunnel"];

/// Ports the sidecar (or pilot-agent) uses in every meshed pod, and who uses them.
pub const RESERVED_PORTS: &[(u32, &str)] = &[
    (15000, "the sidecar's Envoy admin interface"),
    (
        15001,
        "the sidecar's outbound listener (virtualOutbound, pushed by istiod)",
    ),
    (
        15006,
        "the sidecar's inbound listener (virtualInbound, pushed by istiod)",
    ),
    (15020, "pilot-agent's status and merged-metrics server"),
    (15021, "the sidecar's health-check listener"),
    (15090, "the sidecar's Prometheus metrics listener"),
];

/// A path into the document: keys and indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JsonPath(Vec<Segment>);

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// The document itself.
    pub fn root() -> Self {
        JsonPath::default()
    }

    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Key(key.to_string()));
        next
    }

    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Index(index));
        next
    }

    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The line of the node at this path, or of its deepest ancestor in the document (a missing
    /// field points at the object that should hold it).
    pub fn line_in(&self, tree: &LineTree) -> u32 {
        let mut node = tree;
        for segment in &self.0 {
            let next = match segment {
                Segment::Key(k) => node.key(k),
                Segment::Index(i) => node.index(*i),
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node.line
    }
}

impl fmt::Display for JsonPath {
    /// `a.b[0].c`; a key that is not a plain word is written `["x.y"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(k) if is_plain_key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => {
                    let quoted = serde_json::to_string(k).map_err(|_| fmt::Error)?;
                    write!(f, "[{quoted}]")?;
                }
            }
        }
        Ok(())
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '@'))
}

/// One problem in a bootstrap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub message_type: &'static MessageType,
    /// Where in the document (the root for problems with the whole file).
    pub path: JsonPath,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column, for syntax errors.
    pub column: Option<u32>,
    pub message: String,
}

impl Problem {
    pub fn code(&self) -> &'static str {
        self.message_type.code
    }
}

/// How the text is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    /// By the file name's extension (`.json`, `.yaml`, `.yml`, as Envoy decides), else by the
    /// content: a document that starts with `{` or `[` is JSON.
    pub fn detect(file_name: Option<&str>, text: &str) -> Format {
        let lower = file_name.map(str::to_ascii_lowercase).unwrap_or_default();
        if lower.ends_with(".json") {
            return Format::Json;
        }
        if lower.ends_with(".yaml") || lower.ends_with(".yml") {
            return Format::Yaml;
        }
        match text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .chars()
            .next()
        {
            Some('{' | '[') => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// A parsed bootstrap: the value and, when the reader could tell, the line of every node.
#[derive(Debug)]
pub struct Bootstrap {
    pub value: Value,
    pub lines: Option<LineTree>,
    pub format: Format,
}

/// Reads a bootstrap. JSON is read strictly (RFC 8259: no comments, no trailing commas, no
/// single quotes — Envoy's own reader is more lenient, other tools are not); YAML must hold one
/// document. A bootstrap must be a mapping.
pub fn parse(text: &str, format: Format) -> Result<Bootstrap, Box<Problem>> {
    parse_document(text, format).map_err(|mut problem| {
        if text.contains("{{") && text.contains("}}") {
            problem.message.push_str(
                " The file looks like a Go template (it has {{ }}), such as pilot-agent's envoy_bootstrap.json: validate the bootstrap rendered from it (envoy-rev.json in the istio-proxy container) instead.",
            );
        }
        problem
    })
}

fn parse_document(text: &str, format: Format) -> Result<Bootstrap, Box<Problem>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (value, lines) = match format {
        Format::Json => {
            let value: Value = serde_json::from_str(text).map_err(|e| {
                let full = e.to_string();
                let suffix = format!(" at line {} column {}", e.line(), e.column());
                let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
                syntax_problem(
                    u32::try_from(e.line()).unwrap_or(u32::MAX),
                    u32::try_from(e.column().max(1)).unwrap_or(u32::MAX),
                    &message,
                )
            })?;
            // JSON is YAML: the YAML reader gives the lines (it keeps every node's position).
            let lines = yaml::parse_stream(text)
                .ok()
                .filter(|docs| docs.len() == 1)
                .and_then(|docs| docs.into_iter().next())
                .map(|doc| doc.lines);
            (value, lines)
        }
        Format::Yaml => {
            let docs = yaml::parse_stream(text)
                .map_err(|e| syntax_problem(e.line, e.column, &e.message))?;
            let mut docs = docs.into_iter();
            let Some(first) = docs.next() else {
                return Err(syntax_problem(1, 1, "the document is empty"));
            };
            if let Some(second) = docs.next() {
                return Err(syntax_problem(
                    second.start_line,
                    1,
                    &format!(
                        "the file holds {} YAML documents; a bootstrap is a single document",
                        2 + docs.count()
                    ),
                ));
            }
            (first.value, Some(first.lines))
        }
    };
    if !value.is_object() {
        let kind = match value {
            Value::Array(_) => "a list",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            _ => "empty",
        };
        return Err(syntax_problem(
            lines.as_ref().map_or(1, |l| l.line),
            1,
            &format!(
                "the top level is {kind}; a bootstrap is a mapping (envoy.config.bootstrap.v3.Bootstrap)"
            ),
        ));
    }
    Ok(Bootstrap {
        value,
        lines,
        format,
    })
}

fn syntax_problem(line: u32, column: u32, message: &str) -> Box<Problem> {
    Box::new(Problem {
        message_type: messages::MD0307,
        path: JsonPath::root(),
        line: Some(line),
        column: Some(column),
        message: messages::format(
            messages::MD0307.template,
            &[line.into_arg(), column.into_arg(), message.into()],
        ),
    })
}

trait IntoArg {
    fn into_arg(self) -> Arg;
}
impl IntoArg for u32 {
    fn into_arg(self) -> Arg {
        Arg::Int(i64::from(self))
    }
}

/// Parses and checks: every problem, in document order.
pub fn validate(text: &str, format: Format) -> Vec<Problem> {
    match parse(text, format) {
        Ok(bootstrap) => check(&bootstrap),
        Err(problem) => vec![*problem],
    }
}

/// Runs every check over a parsed bootstrap. Problems come in document order.
pub fn check(bootstrap: &Bootstrap) -> Vec<Problem> {
    let mut checker = Checker {
        lines: bootstrap.lines.as_ref(),
        problems: Vec::new(),
    };
    let Some(root) = bootstrap.value.as_object() else {
        return checker.problems;
    };
    let clusters = static_clusters(root);
    checker.unknown_fields(root);
    checker.grpc_clusters(root, &clusters);
    checker.duplicate_clusters(&clusters);
    checker.route_clusters(root, &clusters);
    checker.node(root);
    checker.ports(root);
    let mut problems = checker.problems;
    problems.sort_by(|a, b| {
        (a.line.unwrap_or(0), &a.path, a.message_type.code).cmp(&(
            b.line.unwrap_or(0),
            &b.path,
            b.message_type.code,
        ))
    });
    problems.dedup();
    problems
}

/// True when the bootstrap looks like pilot-agent's (see the module documentation).
pub fn is_istio_proxy(root: &Map<String, Value>) -> bool {
    let Some((_, ads)) = object_field(root, "dynamic_resources")
        .and_then(|(_, d)| d.as_object())
        .and_then(|d| object_field(d, "ads_config"))
    else {
        return false;
    };
    let ads_uses_xds_grpc = grpc_cluster_names(ads, &JsonPath::root())
        .iter()
        .any(|(name, _)| name == ISTIO_XDS_CLUSTER);
    let node = object_field(root, "node").and_then(|(_, n)| n.as_object());
    let id_has_tilde = node
        .and_then(|n| object_field(n, "id"))
        .and_then(|(_, id)| id.as_str())
        .is_some_and(|id| id.contains('~'));
    let has_istio_version = node
        .and_then(|n| object_field(n, "metadata"))
        .and_then(|(_, m)| m.get("ISTIO_VERSION"))
        .is_some();
    ads.is_object() && (ads_uses_xds_grpc || id_has_tilde || has_istio_version)
}

/// A field of a protobuf message written as JSON: by its proto name or its lowerCamelCase JSON
/// name (Envoy accepts both). Returns the key as written.
fn object_field<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<(&'a str, &'a Value)> {
    if let Some((k, v)) = obj.get_key_value(name) {
        return Some((k.as_str(), v));
    }
    let camel = camel_case(name);
    obj.get_key_value(camel.as_str())
        .map(|(k, v)| (k.as_str(), v))
}

/// The child object at a field, with its path.
fn child<'a>(
    obj: &'a Map<String, Value>,
    path: &JsonPath,
    name: &str,
) -> Option<(&'a Map<String, Value>, JsonPath)> {
    let (key, value) = object_field(obj, name)?;
    Some((value.as_object()?, path.key(key)))
}

/// The items of the list at a field, with their paths.
fn items<'a>(
    obj: &'a Map<String, Value>,
    path: &JsonPath,
    name: &str,
) -> Vec<(&'a Value, JsonPath)> {
    let Some((key, Value::Array(list))) = object_field(obj, name) else {
        return Vec::new();
    };
    let base = path.key(key);
    list.iter()
        .enumerate()
        .map(|(i, v)| (v, base.index(i)))
        .collect()
}

fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A protobuf port number: a JSON number or a numeric string (both are valid proto JSON).
fn port_number(value: &Value) -> Option<u32> {
    match value {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A static cluster of the bootstrap.
#[derive(Debug)]
struct StaticCluster<'a> {
    name: &'a str,
    path: JsonPath,
    eds: bool,
}

fn static_clusters(root: &Map<String, Value>) -> Vec<StaticCluster<'_>> {
    let Some((resources, path)) = child(root, &JsonPath::root(), "static_resources") else {
        return Vec::new();
    };
    items(resources, &path, "clusters")
        .into_iter()
        .filter_map(|(cluster, path)| {
            let cluster = cluster.as_object()?;
            let name = object_field(cluster, "name")?.1.as_str()?;
            let eds = match object_field(cluster, "type").map(|(_, t)| t) {
                Some(Value::String(t)) => t.eq_ignore_ascii_case("EDS"),
                Some(Value::Number(n)) => n.as_u64() == Some(3),
                _ => false,
            };
            Some(StaticCluster { name, path, eds })
        })
        .collect()
}

/// `grpc_services[i].envoy_grpc.cluster_name` of an ApiConfigSource, with paths.
fn grpc_cluster_names(source: &Value, path: &JsonPath) -> Vec<(String, JsonPath)> {
    let Some(source) = source.as_object() else {
        return Vec::new();
    };
    items(source, path, "grpc_services")
        .into_iter()
        .filter_map(|(service, path)| {
            let (grpc, path) = child(service.as_object()?, &path, "envoy_grpc")?;
            let (key, name) = object_field(grpc, "cluster_name")?;
            Some((name.as_str()?.to_string(), path.key(key)))
        })
        .collect()
}

/// The name closest to `wanted` among `names`, when it is close enough to be a likely typo.
fn closest<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let normalize = |s: &str| s.to_ascii_lowercase().replace(['-', '.'], "_");
    let wanted_norm = normalize(wanted);
    let mut best: Option<(usize, &str)> = None;
    for name in names {
        if name == wanted {
            continue;
        }
        let distance = if normalize(name) == wanted_norm {
            0
        } else {
            edit_distance(&wanted_norm, &normalize(name))
        };
        let limit = match wanted.chars().count() {
            0..=3 => 1,
            4..=8 => 2,
            _ => 3,
        };
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, name));
        }
    }
    best.map(|(_, name)| name)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current[j + 1] = (previous[j] + cost)
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// Field names of the messages whose unknown fields are checked, as Envoy 1.40's descriptors
/// list them (read from the binary's embedded protos).
struct Schema {
    name: &'static str,
    fields: &'static [(&'static str, Kind)],
}

/// The JSON shape a field's proto type takes (proto3 JSON mapping, as Envoy reads it); `null`
/// is accepted for every field (it means "not set").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A message: a JSON object.
    Message,
    /// A repeated message: a list of objects.
    Messages,
    /// A map or google.protobuf.Struct: an object.
    Object,
    Str,
    /// A repeated string: a list of strings.
    Strs,
    /// A bool or a BoolValue: `true`/`false`.
    Bool,
    /// An integer (or a wrapper of one): a number or a string of digits.
    Int,
    /// A google.protobuf.Duration: a string such as `"1s"`.
    Duration,
    /// An enum: its name as a string, or its number.
    Enum,
}

use Kind::{Bool, Duration, Enum, Int, Message, Messages, Object, Str, Strs};

impl Kind {
    /// What the value should be, for the message.
    fn expected(self) -> &'static str {
        match self {
            Message => "a mapping (a message)",
            Messages => "a list of mappings",
            Object => "a mapping",
            Str => "a string",
            Strs => "a list of strings",
            Bool => "true or false",
            Int => "an integer",
            Duration => "a duration string such as \"1s\"",
            Enum => "an enum name (a string) or its number",
        }
    }

    /// Whether `value` has this shape; for lists, the index of the first item that has not.
    fn check(self, value: &Value) -> Result<(), Option<usize>> {
        let item_ok = |ok: fn(&Value) -> bool| match value {
            Value::Array(list) => match list.iter().position(|v| !ok(v)) {
                Some(i) => Err(Some(i)),
                None => Ok(()),
            },
            _ => Err(None),
        };
        let ok = |b: bool| if b { Ok(()) } else { Err(None) };
        match (self, value) {
            (_, Value::Null) => Ok(()),
            (Message | Object, v) => ok(v.is_object()),
            (Messages, _) => item_ok(Value::is_object),
            (Strs, _) => item_ok(Value::is_string),
            (Str | Duration, v) => ok(v.is_string()),
            // Envoy's JSON reader also takes "true" and "false" as strings.
            (Bool, Value::String(s)) => ok(s == "true" || s == "false"),
            (Bool, v) => ok(v.is_boolean()),
            (Int, Value::Number(n)) => ok(n.is_i64() || n.is_u64()),
            (Int, Value::String(s)) => ok(s.trim_start_matches('-').parse::<u64>().is_ok()),
            (Enum, v) => ok(v.is_string() || v.as_i64().is_some()),
            _ => Err(None),
        }
    }
}

/// A JSON value's kind, for messages: `a string ("oops")`, `a list`, `a number (5)`.
fn shape(value: &Value) -> String {
    let mut short = value.to_string();
    if short.len() > 40 {
        let cut = (0..=40)
            .rev()
            .find(|&i| short.is_char_boundary(i))
            .unwrap_or(0);
        short.truncate(cut);
        short.push_str("...");
    }
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => format!("a boolean ({short})"),
        Value::Number(_) => format!("a number ({short})"),
        Value::String(_) => format!("a string ({short})"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

const BOOTSTRAP: Schema = Schema {
    name: "envoy.config.bootstrap.v3.Bootstrap",
    fields: &[
        ("node", Message),
        ("static_resources", Message),
        ("dynamic_resources", Message),
        ("cluster_manager", Message),
        ("flags_path", Str),
        ("stats_sinks", Messages),
        ("stats_flush_interval", Duration),
        ("watchdog", Message),
        ("tracing", Message),
        ("admin", Message),
        ("stats_config", Message),
        ("hds_config", Message),
        ("overload_manager", Message),
        ("enable_dispatcher_stats", Bool),
        ("layered_runtime", Message),
        ("header_prefix", Str),
        ("stats_server_version_override", Int),
        ("use_tcp_for_dns_lookups", Bool),
        ("bootstrap_extensions", Messages),
        ("config_sources", Messages),
        ("default_config_source", Message),
        ("default_socket_interface", Str),
        ("certificate_provider_instances", Object),
        ("node_context_params", Strs),
        ("watchdogs", Message),
        ("fatal_actions", Messages),
        ("stats_flush_on_admin", Bool),
        ("dns_resolution_config", Message),
        ("typed_dns_resolver_config", Message),
        ("inline_headers", Messages),
        ("perf_tracing_file_path", Str),
        ("default_regex_engine", Message),
        ("xds_delegate_extension", Message),
        ("xds_config_tracker_extension", Message),
        ("listener_manager", Message),
        ("application_log_config", Message),
        ("deferred_stat_options", Message),
        ("grpc_async_client_manager_config", Message),
        ("memory_allocator_manager", Message),
        ("stats_eviction_interval", Duration),
        ("enable_worker_cpu_affinity", Bool),
    ],
};
const STATIC_RESOURCES: Schema = Schema {
    name: "envoy.config.bootstrap.v3.Bootstrap.StaticResources",
    fields: &[
        ("listeners", Messages),
        ("clusters", Messages),
        ("secrets", Messages),
    ],
};
const DYNAMIC_RESOURCES: Schema = Schema {
    name: "envoy.config.bootstrap.v3.Bootstrap.DynamicResources",
    fields: &[
        ("lds_config", Message),
        ("cds_config", Message),
        ("ads_config", Message),
        ("lds_resources_locator", Str),
        ("cds_resources_locator", Str),
    ],
};
const ADMIN: Schema = Schema {
    name: "envoy.config.bootstrap.v3.Admin",
    fields: &[
        ("access_log_path", Str),
        ("profile_path", Str),
        ("address", Message),
        ("socket_options", Messages),
        ("access_log", Messages),
        ("ignore_global_conn_limit", Bool),
        ("allow_paths", Messages),
    ],
};
const NODE: Schema = Schema {
    name: "envoy.config.core.v3.Node",
    fields: &[
        ("id", Str),
        ("cluster", Str),
        ("metadata", Object),
        ("locality", Message),
        ("user_agent_name", Str),
        ("user_agent_version", Str),
        ("user_agent_build_version", Message),
        ("extensions", Messages),
        ("client_features", Strs),
        ("listening_addresses", Messages),
        ("dynamic_parameters", Object),
    ],
};
const CONFIG_SOURCE: Schema = Schema {
    name: "envoy.config.core.v3.ConfigSource",
    fields: &[
        ("path", Str),
        ("api_config_source", Message),
        ("ads", Message),
        ("initial_fetch_timeout", Duration),
        ("self", Message),
        ("resource_api_version", Enum),
        ("authorities", Messages),
        ("path_config_source", Message),
    ],
};
const API_CONFIG_SOURCE: Schema = Schema {
    name: "envoy.config.core.v3.ApiConfigSource",
    fields: &[
        ("api_type", Enum),
        ("cluster_names", Strs),
        ("refresh_delay", Duration),
        ("grpc_services", Messages),
        ("request_timeout", Duration),
        ("rate_limit_settings", Message),
        ("set_node_on_first_message_only", Bool),
        ("transport_api_version", Enum),
        ("config_validators", Messages),
    ],
};
const GRPC_SERVICE: Schema = Schema {
    name: "envoy.config.core.v3.GrpcService",
    fields: &[
        ("envoy_grpc", Message),
        ("google_grpc", Message),
        ("timeout", Duration),
        ("initial_metadata", Messages),
        ("retry_policy", Message),
    ],
};
const ENVOY_GRPC: Schema = Schema {
    name: "envoy.config.core.v3.GrpcService.EnvoyGrpc",
    fields: &[
        ("cluster_name", Str),
        ("authority", Str),
        ("retry_policy", Message),
        ("max_receive_message_length", Int),
        ("skip_envoy_headers", Bool),
    ],
};

/// The message types whose unknown fields MD0308 covers.
pub const CHECKED_MESSAGE_TYPES: &[&str] = &[
    BOOTSTRAP.name,
    STATIC_RESOURCES.name,
    DYNAMIC_RESOURCES.name,
    ADMIN.name,
    NODE.name,
    CONFIG_SOURCE.name,
    API_CONFIG_SOURCE.name,
    GRPC_SERVICE.name,
    ENVOY_GRPC.name,
];

impl Schema {
    fn field(&self, key: &str) -> Option<Kind> {
        self.fields
            .iter()
            .find(|(f, _)| *f == key || camel_case(f) == key)
            .map(|(_, kind)| *kind)
    }
}

/// A bound socket: the admin interface or a static listener's address.
#[derive(Debug)]
struct Bind {
    /// "The admin interface" or `Listener "name"`.
    what: String,
    address: String,
    port: u32,
    udp: bool,
    admin: bool,
    path: JsonPath,
}

impl Bind {
    fn endpoint(&self) -> String {
        if self.address.contains(':') {
            format!("[{}]:{}", self.address, self.port)
        } else {
            format!("{}:{}", self.address, self.port)
        }
    }

    fn is_wildcard(&self) -> bool {
        matches!(self.address.as_str(), "" | "0.0.0.0" | "::" | "[::]")
    }
}

struct Checker<'a> {
    lines: Option<&'a LineTree>,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn report(&mut self, message_type: &'static MessageType, path: JsonPath, args: &[Arg]) {
        let line = self.lines.map(|tree| path.line_in(tree));
        self.problems.push(Problem {
            message_type,
            message: messages::format(message_type.template, args),
            path,
            line,
            column: None,
        });
    }

    /// Where a path is, for messages that point at another place: `a.b[0] (line 12)`.
    fn place(&self, path: &JsonPath) -> String {
        match self.lines {
            Some(tree) => format!("{path}, line {}", path.line_in(tree)),
            None => path.to_string(),
        }
    }

    // MD0308
    fn unknown_fields(&mut self, root: &Map<String, Value>) {
        let top = JsonPath::root();
        self.schema(root, &top, &BOOTSTRAP);
        for (name, schema) in [
            ("node", &NODE),
            ("admin", &ADMIN),
            ("static_resources", &STATIC_RESOURCES),
            ("dynamic_resources", &DYNAMIC_RESOURCES),
        ] {
            if let Some((obj, path)) = child(root, &top, name) {
                self.schema(obj, &path, schema);
            }
        }
        let Some((dynamic, path)) = child(root, &top, "dynamic_resources") else {
            return;
        };
        for name in ["lds_config", "cds_config"] {
            if let Some((source, path)) = child(dynamic, &path, name) {
                self.schema(source, &path, &CONFIG_SOURCE);
                if let Some((api, path)) = child(source, &path, "api_config_source") {
                    self.api_config_source_fields(api, &path);
                }
            }
        }
        if let Some((ads, path)) = child(dynamic, &path, "ads_config") {
            self.api_config_source_fields(ads, &path);
        }
    }

    fn api_config_source_fields(&mut self, api: &Map<String, Value>, path: &JsonPath) {
        self.schema(api, path, &API_CONFIG_SOURCE);
        for (service, path) in items(api, path, "grpc_services") {
            let Some(service) = service.as_object() else {
                continue;
            };
            self.schema(service, &path, &GRPC_SERVICE);
            if let Some((grpc, path)) = child(service, &path, "envoy_grpc") {
                self.schema(grpc, &path, &ENVOY_GRPC);
            }
        }
    }

    // MD0308, and MD0312 for the fields it knows.
    fn schema(&mut self, obj: &Map<String, Value>, path: &JsonPath, schema: &Schema) {
        for (key, value) in obj {
            if let Some(kind) = schema.field(key) {
                if let Err(item) = kind.check(value) {
                    let (at, found) = match item {
                        Some(i) => (path.key(key).index(i), shape(&value[i])),
                        None => (path.key(key), shape(value)),
                    };
                    let what = match item {
                        Some(_) => format!("an item of {key}"),
                        None => key.to_string(),
                    };
                    let expected = match (kind, item) {
                        (Messages, Some(_)) => "a mapping (a message)",
                        (Strs, Some(_)) => "a string",
                        _ => kind.expected(),
                    };
                    self.report(
                        messages::MD0312,
                        at,
                        &[
                            what.into(),
                            schema.name.into(),
                            expected.into(),
                            found.into(),
                        ],
                    );
                }
                continue;
            }
            let hint = closest(key, schema.fields.iter().map(|(f, _)| *f))
                .map(|f| format!(" Did you mean {f:?}?"))
                .unwrap_or_default();
            self.report(
                messages::MD0308,
                path.key(key),
                &[schema.name.into(), key.into(), hint.into()],
            );
        }
    }

    // MD0301
    fn grpc_clusters(&mut self, root: &Map<String, Value>, clusters: &[StaticCluster<'_>]) {
        let Some((dynamic, path)) = child(root, &JsonPath::root(), "dynamic_resources") else {
            return;
        };
        let mut sources: Vec<(&str, &Value, JsonPath)> = Vec::new();
        if let Some((key, ads)) = object_field(dynamic, "ads_config") {
            sources.push(("ADS", ads, path.key(key)));
        }
        for (label, name) in [("CDS", "cds_config"), ("LDS", "lds_config")] {
            if let Some((source, path)) = child(dynamic, &path, name)
                && let Some((key, api)) = object_field(source, "api_config_source")
            {
                sources.push((label, api, path.key(key)));
            }
        }
        let names: Vec<String> = clusters.iter().map(|c| c.name.to_string()).collect();
        for (label, source, path) in sources {
            for (name, path) in grpc_cluster_names(source, &path) {
                let found = clusters.iter().find(|c| c.name == name);
                let (why, hint) = match found {
                    Some(c) if !c.eds => continue,
                    Some(_) => (
                        "that static cluster has type EDS, and a gRPC client cluster needs its endpoints in the bootstrap".to_string(),
                        String::new(),
                    ),
                    None => {
                        let hint = closest(&name, clusters.iter().map(|c| c.name))
                            .map(|c| format!(" Did you mean {c:?}?"))
                            .unwrap_or_default();
                        let why = if names.is_empty() {
                            "the bootstrap has no static clusters".to_string()
                        } else {
                            format!(
                                "no static cluster has that name (static clusters: {})",
                                names.join(", ")
                            )
                        };
                        (why, hint)
                    }
                };
                self.report(
                    messages::MD0301,
                    path,
                    &[label.into(), name.as_str().into(), why.into(), hint.into()],
                );
            }
        }
    }

    // MD0302
    fn duplicate_clusters(&mut self, clusters: &[StaticCluster<'_>]) {
        let mut first: HashMap<&str, &JsonPath> = HashMap::new();
        for cluster in clusters {
            match first.get(cluster.name) {
                Some(earlier) => {
                    let place = self.place(earlier);
                    self.report(
                        messages::MD0302,
                        cluster.path.key("name"),
                        &[cluster.name.into(), place.into()],
                    );
                }
                None => {
                    first.insert(cluster.name, &cluster.path);
                }
            }
        }
    }

    // MD0303
    fn route_clusters(&mut self, root: &Map<String, Value>, clusters: &[StaticCluster<'_>]) {
        let Some((resources, path)) = child(root, &JsonPath::root(), "static_resources") else {
            return;
        };
        let has_cds = child(root, &JsonPath::root(), "dynamic_resources")
            .and_then(|(d, p)| child(d, &p, "cds_config"))
            .is_some();
        let mut names: Vec<&str> = clusters.iter().map(|c| c.name).collect();
        names.dedup();
        for (index, (listener, path)) in
            items(resources, &path, "listeners").into_iter().enumerate()
        {
            let listener_name = listener
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| format!("#{index}"), str::to_string);
            let mut hcms = Vec::new();
            find_http_connection_managers(listener, &path, &mut hcms);
            for (hcm, path) in hcms {
                let Some((routes_config, path)) = child(hcm, &path, "route_config") else {
                    continue;
                };
                let validate = object_field(routes_config, "validate_clusters").map(|(_, v)| v);
                let validate_off = match validate {
                    Some(Value::Bool(b)) => !b,
                    Some(Value::Object(o)) => o.get("value") == Some(&Value::Bool(false)),
                    _ => false,
                };
                if validate_off {
                    continue;
                }
                for (target, verb, path) in route_targets(routes_config, &path) {
                    if names.contains(&target) {
                        continue;
                    }
                    let mut hint = closest(target, names.iter().copied())
                        .map(|c| format!(" Did you mean {c:?}?"))
                        .unwrap_or_default();
                    if has_cds {
                        hint.push_str(" Clusters from CDS do not count: they arrive after the static route table is checked (set validate_clusters: false on the route table to allow them).");
                    }
                    let list = names.join(", ");
                    self.report(
                        messages::MD0303,
                        path,
                        &[
                            listener_name.as_str().into(),
                            verb.into(),
                            target.into(),
                            list.into(),
                            hint.into(),
                        ],
                    );
                }
            }
        }
    }

    // MD0304, MD0305, MD0310
    fn node(&mut self, root: &Map<String, Value>) {
        let top = JsonPath::root();
        let dynamic = child(root, &top, "dynamic_resources");
        let uses_xds = dynamic.as_ref().is_some_and(|(d, _)| {
            ["ads_config", "cds_config", "lds_config"]
                .iter()
                .any(|f| object_field(d, f).is_some_and(|(_, v)| !v.is_null()))
        });
        if !uses_xds {
            return;
        }
        let node_path =
            object_field(root, "node").map_or_else(|| top.key("node"), |(k, _)| top.key(k));
        let node = object_field(root, "node").and_then(|(_, n)| n.as_object());
        let id_field = node.and_then(|n| object_field(n, "id"));
        let id_path = id_field.map_or_else(|| node_path.key("id"), |(k, _)| node_path.key(k));
        // A value that is not a string is MD0312's (the wrong type), not an empty ID.
        let id_wrong_type = id_field.is_some_and(|(_, v)| !v.is_string() && !v.is_null());
        let id = id_field.and_then(|(_, v)| v.as_str()).unwrap_or("");
        if id.is_empty() && !id_wrong_type {
            let what = if id_field.is_some() {
                "is empty"
            } else {
                "is missing"
            };
            self.report(
                messages::MD0304,
                id_path.clone(),
                &[
                    what.into(),
                    "Envoy refuses to start a bootstrap that has xDS config sources without node.id and node.cluster".into(),
                ],
            );
        }
        let cluster_field = node.and_then(|n| object_field(n, "cluster"));
        let cluster = cluster_field.and_then(|(_, v)| v.as_str()).unwrap_or("");
        let wrong_type = cluster_field.is_some_and(|(_, v)| !v.is_string() && !v.is_null());
        if cluster.is_empty() && !wrong_type {
            let (what, path) = match cluster_field {
                Some((k, _)) => ("is empty", node_path.key(k)),
                None => ("is missing", node_path.key("cluster")),
            };
            self.report(messages::MD0305, path, &[what.into()]);
        }
        if id.is_empty() || !is_istio_proxy(root) {
            return;
        }
        let metadata = node
            .and_then(|n| object_field(n, "metadata"))
            .and_then(|(_, m)| m.as_object());
        let node_id = NodeId::parse(id, metadata);
        if !node_id.errors.is_empty() {
            self.report(
                messages::MD0304,
                id_path,
                &[
                    format!("{id:?} is not one istiod accepts").into(),
                    node_id.errors.join("; ").into(),
                ],
            );
        } else if !node_id.oddities.is_empty() {
            self.report(
                messages::MD0310,
                id_path,
                &[id.into(), node_id.oddities.join("; ").into()],
            );
        }
    }

    // MD0306, MD0311
    fn ports(&mut self, root: &Map<String, Value>) {
        let binds = binds(root);
        let istio = is_istio_proxy(root);
        for bind in &binds {
            if bind.udp {
                continue;
            }
            // An Istio proxy bootstrap owns the admin port and the health and Prometheus
            // listeners; anything else would collide with the sidecar or pilot-agent.
            let owned_by_this_bootstrap: &[u32] = match (istio, bind.admin) {
                (true, true) => &[15000],
                (true, false) => &[15000, 15021, 15090],
                (false, _) => &[],
            };
            if owned_by_this_bootstrap.contains(&bind.port) {
                continue;
            }
            if let Some((_, owner)) = RESERVED_PORTS.iter().find(|(p, _)| *p == bind.port) {
                self.report(
                    messages::MD0306,
                    bind.path.clone(),
                    &[
                        bind.what.as_str().into(),
                        i64::from(bind.port).into(),
                        (*owner).into(),
                    ],
                );
            }
        }
        for (i, a) in binds.iter().enumerate() {
            for b in &binds[i + 1..] {
                if a.port != b.port || a.udp != b.udp {
                    continue;
                }
                let (clash, consequence) = if a.admin || b.admin {
                    let overlap = a.address == b.address || a.is_wildcard() || b.is_wildcard();
                    (
                        overlap,
                        "whichever binds second fails at start (\"Address already in use\")",
                    )
                } else {
                    (
                        a.address == b.address,
                        "Envoy rejects the bootstrap (\"duplicate address\")",
                    )
                };
                if clash {
                    let other = if b.what.starts_with("The ") {
                        b.what.replacen("The ", "the ", 1)
                    } else {
                        b.what.replacen("Listener ", "listener ", 1)
                    };
                    self.report(
                        messages::MD0311,
                        b.path.clone(),
                        &[
                            a.what.as_str().into(),
                            other.into(),
                            b.endpoint().into(),
                            consequence.into(),
                        ],
                    );
                }
            }
        }
    }
}

/// Every `HttpConnectionManager` config inside a listener (also inside a `TypedStruct`).
fn find_http_connection_managers<'a>(
    value: &'a Value,
    path: &JsonPath,
    out: &mut Vec<(&'a Map<String, Value>, JsonPath)>,
) {
    const HCM: &str = ".http_connection_manager.v3.HttpConnectionManager";
    match value {
        Value::Object(obj) => {
            let type_url = obj.get("@type").and_then(Value::as_str).unwrap_or("");
            if type_url.ends_with(HCM) {
                out.push((obj, path.clone()));
                return;
            }
            if type_url.ends_with("TypedStruct")
                && obj
                    .get("type_url")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with(HCM))
                && let Some(inner) = obj.get("value").and_then(Value::as_object)
            {
                out.push((inner, path.key("value")));
                return;
            }
            for (key, child) in obj {
                find_http_connection_managers(child, &path.key(key), out);
            }
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                find_http_connection_managers(child, &path.index(i), out);
            }
        }
        _ => {}
    }
}

/// The clusters a static route table sends traffic to: (cluster, verb for the message, path).
fn route_targets<'a>(
    route_config: &'a Map<String, Value>,
    path: &JsonPath,
) -> Vec<(&'a str, &'static str, JsonPath)> {
    let mut out = Vec::new();
    for (vhost, path) in items(route_config, path, "virtual_hosts") {
        let Some(vhost) = vhost.as_object() else {
            continue;
        };
        for (route, path) in items(vhost, &path, "routes") {
            let Some((action, path)) = route.as_object().and_then(|r| child(r, &path, "route"))
            else {
                continue;
            };
            if let Some((key, Value::String(cluster))) = object_field(action, "cluster") {
                out.push((cluster.as_str(), "routes to", path.key(key)));
            }
            if let Some((weighted, path)) = child(action, &path, "weighted_clusters") {
                for (entry, path) in items(weighted, &path, "clusters") {
                    if let Some((key, Value::String(name))) =
                        entry.as_object().and_then(|e| object_field(e, "name"))
                    {
                        out.push((name.as_str(), "splits traffic to", path.key(key)));
                    }
                }
            }
            for (policy, path) in items(action, &path, "request_mirror_policies") {
                if let Some((key, Value::String(name))) =
                    policy.as_object().and_then(|p| object_field(p, "cluster"))
                {
                    out.push((name.as_str(), "mirrors traffic to", path.key(key)));
                }
            }
        }
    }
    out
}

/// The admin address and every static listener address that binds a port.
fn binds(root: &Map<String, Value>) -> Vec<Bind> {
    let top = JsonPath::root();
    let mut out = Vec::new();
    let socket =
        |address: &Map<String, Value>, path: &JsonPath| -> Option<(String, u32, bool, JsonPath)> {
            let (socket, path) = child(address, path, "socket_address")?;
            let (key, port) = object_field(socket, "port_value")?;
            let port = port_number(port)?;
            if port == 0 {
                return None;
            }
            let host = object_field(socket, "address")
                .and_then(|(_, a)| a.as_str())
                .unwrap_or("")
                .to_string();
            let udp = object_field(socket, "protocol")
                .and_then(|(_, p)| p.as_str())
                .is_some_and(|p| p.eq_ignore_ascii_case("UDP"));
            Some((host, port, udp, path.key(key)))
        };
    if let Some((admin, path)) = child(root, &top, "admin")
        && let Some((address, path)) = child(admin, &path, "address")
        && let Some((address, port, udp, path)) = socket(address, &path)
    {
        out.push(Bind {
            what: "The admin interface".to_string(),
            address,
            port,
            udp,
            admin: true,
            path,
        });
    }
    let Some((resources, path)) = child(root, &top, "static_resources") else {
        return out;
    };
    for (index, (listener, path)) in items(resources, &path, "listeners").into_iter().enumerate() {
        let Some(listener) = listener.as_object() else {
            continue;
        };
        let binds_port = !matches!(
            object_field(listener, "bind_to_port").map(|(_, v)| v),
            Some(Value::Bool(false))
        );
        if !binds_port {
            continue;
        }
        let name = object_field(listener, "name")
            .and_then(|(_, n)| n.as_str())
            .map_or_else(|| format!("#{index}"), str::to_string);
        let what = format!("Listener {name:?}");
        let mut addresses = Vec::new();
        if let Some((address, path)) = child(listener, &path, "address") {
            addresses.push((address, path));
        }
        for (extra, path) in items(listener, &path, "additional_addresses") {
            if let Some((address, path)) =
                extra.as_object().and_then(|e| child(e, &path, "address"))
            {
                addresses.push((address, path));
            }
        }
        for (address, path) in addresses {
            if let Some((address, port, udp, path)) = socket(address, &path) {
                out.push(Bind {
                    what: what.clone(),
                    address,
                    port,
                    udp,
                    admin: false,
                    path,
                });
            }
        }
    }
    out
}

/// An Istio node ID, `<type>~<ip>~<pod>.<namespace>~<namespace>.svc.<cluster domain>`, judged.
#[derive(Debug, Default)]
pub struct NodeId {
    /// Why istiod would refuse it (ParseServiceNodeWithMetadata).
    pub errors: Vec<String>,
    /// What istiod accepts but pilot-agent would not have written.
    pub oddities: Vec<String>,
}

impl NodeId {
    pub fn parse(id: &str, metadata: Option<&Map<String, Value>>) -> NodeId {
        let mut out = NodeId::default();
        let parts: Vec<&str> = id.split('~').collect();
        let [kind, ip, name, domain] = parts.as_slice() else {
            out.errors.push(format!(
                "it has {} part(s) separated by \"~\", istiod expects 4: <type>~<ip>~<pod>.<namespace>~<namespace>.svc.<cluster domain>",
                parts.len()
            ));
            return out;
        };
        if !ISTIO_NODE_TYPES.contains(kind) {
            out.errors.push(format!(
                "its type {kind:?} is not one istiod knows ({})",
                ISTIO_NODE_TYPES.join(", ")
            ));
        }
        let instance_ips_valid = metadata
            .and_then(|m| m.get("INSTANCE_IPS"))
            .and_then(Value::as_str)
            .is_some_and(|ips| {
                !ips.is_empty() && ips.split(',').all(|ip| ip.trim().parse::<IpAddr>().is_ok())
            });
        if ip.parse::<IpAddr>().is_err() && !instance_ips_valid {
            out.errors.push(format!(
                "its second part {ip:?} is not an IP address (and node.metadata.INSTANCE_IPS has none)"
            ));
        }
        if name.is_empty() {
            out.errors
                .push("its third part (<pod>.<namespace>) is empty".to_string());
        }
        if !out.errors.is_empty() {
            return out;
        }
        let name_namespace = match name.split_once('.') {
            Some((pod, ns)) if !pod.is_empty() && !ns.is_empty() && !ns.contains('.') => Some(ns),
            _ => {
                out.oddities
                    .push(format!("the third part {name:?} is not <pod>.<namespace>"));
                None
            }
        };
        let domain_namespace = match domain.split_once(".svc.") {
            Some((ns, cluster_domain)) if !ns.is_empty() && !cluster_domain.is_empty() => Some(ns),
            _ => {
                out.oddities.push(format!(
                    "the fourth part {domain:?} is not <namespace>.svc.<cluster domain>"
                ));
                None
            }
        };
        if let (Some(a), Some(b)) = (name_namespace, domain_namespace)
            && a != b
        {
            out.oddities.push(format!(
                "the namespace in the third part ({a}) differs from the one in the fourth ({b})"
            ));
        }
        let meta_namespace = metadata
            .and_then(|m| m.get("NAMESPACE"))
            .and_then(Value::as_str);
        if let (Some(meta), Some(ns)) = (meta_namespace, name_namespace.or(domain_namespace))
            && meta != ns
        {
            out.oddities
                .push(format!("node.metadata.NAMESPACE is {meta:?}, not {ns:?}"));
        }
        out
    }
}

/// The reason Envoy gave for refusing a bootstrap, from the stderr of `envoy --mode validate`:
/// the text after `error initializing configuration '<file>': ` on the critical line, without the
/// copy of the document Envoy appends, whitespace collapsed. Falls back to the last log line.
pub fn envoy_reason(stderr: &str) -> Option<String> {
    const MARKER: &str = "error initializing configuration '";
    let line = stderr
        .lines()
        .find(|l| l.contains(MARKER))
        .and_then(|l| {
            let rest = &l[l.find(MARKER)? + MARKER.len()..];
            Some(rest[rest.find("': ")? + 3..].to_string())
        })
        .or_else(|| {
            stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| {
                    // Drop the `[time][thread][level][logger] [file:line] ` prefix.
                    let mut text = l.trim();
                    while text.starts_with('[') {
                        match text.find(']') {
                            Some(end) => text = text[end + 1..].trim_start(),
                            None => break,
                        }
                    }
                    text.to_string()
                })
        })?;
    let mut reason = collapse_whitespace(&line);
    // "Unable to parse JSON as proto (...): {<the document>" -> keep the part in parentheses.
    if reason.starts_with("Unable to parse JSON as proto (")
        && let Some(end) = reason.rfind("):")
    {
        reason.truncate(end + 1);
    }
    let reason = reason.replace("goo.gle/debugproto ", "");
    (!reason.is_empty()).then_some(reason)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The codes whose checks claim to catch what Envoy refused a bootstrap for, from its reason
/// (see [`envoy_reason`]). Empty when no check covers it (a bad `@type`, a wrong value type...).
pub fn codes_covering(reason: &str) -> Vec<&'static MessageType> {
    let r = collapse_whitespace(reason);
    if r.contains("Unknown gRPC client cluster")
        || r.contains("must have a statically defined non-EDS cluster")
    {
        return vec![messages::MD0301];
    }
    if r.contains("duplicate cluster") {
        return vec![messages::MD0302];
    }
    if r.contains("route: unknown cluster")
        || r.contains("route: unknown weighted cluster")
        || r.contains("route: unknown shadow cluster")
    {
        return vec![messages::MD0303];
    }
    if r.contains("node 'id' and 'cluster' are required") {
        return vec![messages::MD0304, messages::MD0305];
    }
    if r.contains("has duplicate address") {
        return vec![messages::MD0311];
    }
    if let Some(at) = r.find("no such field") {
        // "... @ admin: message envoy.config.bootstrap.v3.Admin, near 42:19 ...: no such field"
        // names the message; a top-level field has no "@ path: message" part.
        let before = &r[..at];
        let message_type = match before.rfind("message ") {
            Some(m) if before[..m].contains(" @ ") => before[m + "message ".len()..]
                .split([',', ' '])
                .next()
                .unwrap_or(""),
            _ => BOOTSTRAP.name,
        };
        return if CHECKED_MESSAGE_TYPES.contains(&message_type) {
            vec![messages::MD0308]
        } else {
            Vec::new()
        };
    }
    if let Some(inner) = r.strip_prefix("Unable to parse JSON as proto (") {
        // Syntax, as opposed to a value of the wrong type: the lexer fails at the top level or
        // inside a message ("@ node: message envoy.config.core.v3.Node, near ..."), not inside a
        // scalar field ("@ node.id: string, near ...").
        if inner.contains("could not find @type") {
            return Vec::new();
        }
        let Some(at) = inner.find(" @ ") else {
            return vec![messages::MD0307];
        };
        let Some((path, rest)) = inner[at + 3..].trim_start().split_once(": ") else {
            return Vec::new();
        };
        // A value of the wrong type in a message MD0312 checks: a scalar where a message is
        // expected reads as "@ static_resources.clusters: message ..., expected '{'", a number
        // for a string as "@ node.id: string, ... expected '\"'".
        let mut codes = Vec::new();
        let in_message = rest.starts_with("message ");
        if in_message {
            codes.push(messages::MD0307);
        }
        if (!in_message || rest.contains("expected '{'")) && type_checked_field(path.trim()) {
            codes.push(messages::MD0312);
        }
        return codes;
    }
    Vec::new()
}

/// Whether MD0312 checks the field at a proto JSON path (`static_resources.clusters[1]`,
/// `node.id`): a field of one of the messages whose schema is known.
fn type_checked_field(path: &str) -> bool {
    let plain: String = {
        let mut out = String::new();
        let mut depth = 0;
        for c in path.chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out
    };
    let parent = plain.rsplit_once('.').map_or("", |(p, _)| p);
    matches!(
        parent,
        "" | "node"
            | "admin"
            | "static_resources"
            | "dynamic_resources"
            | "dynamic_resources.lds_config"
            | "dynamic_resources.cds_config"
            | "dynamic_resources.ads_config"
            | "dynamic_resources.lds_config.api_config_source"
            | "dynamic_resources.cds_config.api_config_source"
            | "dynamic_resources.ads_config.grpc_services"
            | "dynamic_resources.ads_config.grpc_services.envoy_grpc"
            | "dynamic_resources.lds_config.api_config_source.grpc_services"
            | "dynamic_resources.cds_config.api_config_source.grpc_services"
            | "dynamic_resources.lds_config.api_config_source.grpc_services.envoy_grpc"
            | "dynamic_resources.cds_config.api_config_source.grpc_services.envoy_grpc"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes found, sorted.
    fn codes(text: &str) -> Vec<&'static str> {
        let mut codes: Vec<&str> = validate(text, Format::detect(None, text))
            .iter()
            .map(Problem::code)
            .collect();
        codes.sort_unstable();
        codes
    }

    const SIDECAR: &str = r#"{
  "node": {
    "id": "sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local",
    "cluster": "web.shop",
    "metadata": {"NAMESPACE": "shop", "ISTIO_VERSION": "1.24.0"}
  },
  "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 15000}}},
  "static_resources": {
    "clusters": [
      {"name": "agent", "type": "STATIC"},
      {"name": "xds-grpc", "type": "STATIC"}
    ],
    "listeners": [
      {
        "name": "0.0.0.0_15021",
        "address": {"socket_address": {"address": "0.0.0.0", "port_value": 15021}},
        "filter_chains": [{"filters": [{"name": "hcm", "typed_config": {
          "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
          "route_config": {"virtual_hosts": [{"name": "b", "domains": ["*"], "routes": [
            {"match": {"prefix": "/healthz/ready"}, "route": {"cluster": "agent"}}
          ]}]}
        }}]}]
      }
    ]
  },
  "dynamic_resources": {
    "lds_config": {"ads": {}, "resource_api_version": "V3"},
    "cds_config": {"ads": {}, "resource_api_version": "V3"},
    "ads_config": {"api_type": "GRPC", "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]}
  }
}"#;

    fn sidecar() -> Value {
        serde_json::from_str(SIDECAR).unwrap()
    }

    fn with(edit: impl FnOnce(&mut Value)) -> String {
        let mut v = sidecar();
        edit(&mut v);
        serde_json::to_string_pretty(&v).unwrap()
    }

    // Regression (issue 11, item 9): `clusters: "oops"`, `clusters: [[1]]` and
    // `{"node":{"id":5},"admin":"x"}` were "No problems found".
    #[test]
    fn values_of_the_wrong_type_are_findings() {
        let problems = validate(r#"{"static_resources":{"clusters":"oops"}}"#, Format::Json);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].code(), "MD0312");
        assert_eq!(problems[0].path.to_string(), "static_resources.clusters");
        assert!(
            problems[0].message.starts_with("clusters (in envoy.config.bootstrap.v3.Bootstrap.StaticResources) must be a list of mappings, not a string (\"oops\")"),
            "{}",
            problems[0].message
        );
        let problems = validate("static_resources:\n  clusters:\n  - [1]\n", Format::Yaml);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path.to_string(), "static_resources.clusters[0]");
        assert_eq!(problems[0].line, Some(3));
        let codes: Vec<String> = validate(r#"{"node":{"id":5},"admin":"x"}"#, Format::Json)
            .iter()
            .map(|p| format!("{} {}", p.code(), p.path))
            .collect();
        assert_eq!(codes, ["MD0312 admin", "MD0312 node.id"]);
        // null is "not set"; numbers may be strings; enums may be numbers.
        let fine = r#"{"admin":null,"stats_server_version_override":"12","dynamic_resources":{"cds_config":{"resource_api_version":2}}}"#;
        let problems = validate(fine, Format::Json);
        assert!(
            problems.iter().all(|p| p.code() != "MD0312"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_good_sidecar_bootstrap_passes() {
        assert_eq!(codes(SIDECAR), Vec::<&str>::new());
    }

    #[test]
    fn ads_cluster_must_be_static() {
        let text = with(|v| {
            v["static_resources"]["clusters"][1]["name"] = "xds_grpc".into();
        });
        let problems = validate(&text, Format::Json);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert_eq!(p.code(), "MD0301");
        assert_eq!(
            p.path.to_string(),
            "dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name"
        );
        assert!(p.message.contains("\"xds-grpc\""), "{}", p.message);
        assert!(
            p.message
                .ends_with("(\"Unknown gRPC client cluster\"). Did you mean \"xds_grpc\"?"),
            "{}",
            p.message
        );
        assert!(p.line.is_some());
    }

    #[test]
    fn eds_cluster_is_no_grpc_client_cluster() {
        let text = with(|v| v["static_resources"]["clusters"][1]["type"] = "EDS".into());
        assert_eq!(codes(&text), vec!["MD0301"]);
    }

    #[test]
    fn duplicate_clusters_point_at_the_second() {
        let text = with(|v| {
            v["static_resources"]["clusters"][1]["name"] = "agent".into();
        });
        let problems = validate(&text, Format::Json);
        let dup: Vec<_> = problems.iter().filter(|p| p.code() == "MD0302").collect();
        assert_eq!(dup.len(), 1);
        assert_eq!(dup[0].path.to_string(), "static_resources.clusters[1].name");
        assert!(
            dup[0]
                .message
                .contains("static_resources.clusters[0], line")
        );
    }

    #[test]
    fn routes_to_unknown_clusters() {
        let text = with(|v| {
            let route = &mut v["static_resources"]["listeners"][0]["filter_chains"][0]["filters"]
                [0]["typed_config"]["route_config"]["virtual_hosts"][0]["routes"][0]["route"];
            *route = serde_json::json!({
                "weighted_clusters": {"clusters": [{"name": "agent"}, {"name": "agnet"}]},
                "request_mirror_policies": [{"cluster": "mirror"}]
            });
        });
        let problems = validate(&text, Format::Json);
        let routes: Vec<String> = problems
            .iter()
            .filter(|p| p.code() == "MD0303")
            .map(|p| p.message.clone())
            .collect();
        assert_eq!(routes.len(), 2, "{problems:?}");
        assert!(routes[0].contains("splits traffic to cluster \"agnet\""));
        assert!(routes[0].contains("Did you mean \"agent\"?"));
        assert!(routes[0].contains("Clusters from CDS do not count"));
        assert!(routes[1].contains("mirrors traffic to cluster \"mirror\""));
    }

    #[test]
    fn validate_clusters_false_allows_unknown_route_clusters() {
        let text = with(|v| {
            let rc = &mut v["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
                ["route_config"];
            rc["validate_clusters"] = false.into();
            rc["virtual_hosts"][0]["routes"][0]["route"]["cluster"] = "from-cds".into();
        });
        assert_eq!(codes(&text), Vec::<&str>::new());
    }

    #[test]
    fn node_id_and_cluster() {
        let missing = with(|v| {
            v["node"].as_object_mut().unwrap().remove("cluster");
            v["node"].as_object_mut().unwrap().remove("id");
        });
        assert_eq!(codes(&missing), vec!["MD0304", "MD0305"]);
        for (id, code) in [
            ("sidecar~10.0.0.5~web-1.shop", "MD0304"),
            ("proxy~10.0.0.5~web-1.shop~shop.svc.cluster.local", "MD0304"),
            (
                "sidecar~not-an-ip~web-1.shop~shop.svc.cluster.local",
                "MD0304",
            ),
            ("sidecar~10.0.0.5~~shop.svc.cluster.local", "MD0304"),
            ("sidecar~10.0.0.5~web-1~shop.svc.cluster.local", "MD0310"),
            ("sidecar~10.0.0.5~web-1.shop~cluster.local", "MD0310"),
            (
                "sidecar~10.0.0.5~web-1.shop~other.svc.cluster.local",
                "MD0310",
            ),
            ("router~10.0.0.5~gw-1.shop~shop.svc.cluster.local", ""),
            ("sidecar~fd00::5~web-1.shop~shop.svc.cluster.local", ""),
        ] {
            let text = with(|v| v["node"]["id"] = id.into());
            let got = codes(&text);
            let want: Vec<&str> = if code.is_empty() { vec![] } else { vec![code] };
            assert_eq!(got, want, "{id}");
        }
        // INSTANCE_IPS stands in for a missing IP, as istiod reads it.
        let text = with(|v| {
            v["node"]["id"] = "sidecar~~web-1.shop~shop.svc.cluster.local".into();
            v["node"]["metadata"]["INSTANCE_IPS"] = "10.0.0.5,fd00::5".into();
        });
        assert_eq!(codes(&text), Vec::<&str>::new());
    }

    #[test]
    fn static_only_bootstraps_need_no_node() {
        let text = with(|v| {
            v.as_object_mut().unwrap().remove("dynamic_resources");
            v.as_object_mut().unwrap().remove("node");
            v["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
                17021.into();
            v["admin"]["address"]["socket_address"]["port_value"] = 17000.into();
        });
        assert_eq!(codes(&text), Vec::<&str>::new());
    }

    #[test]
    fn reserved_ports() {
        let admin = with(|v| v["admin"]["address"]["socket_address"]["port_value"] = 15090.into());
        assert_eq!(codes(&admin), vec!["MD0306"]);
        let outbound = with(|v| {
            v["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
                "15001".into();
        });
        assert_eq!(codes(&outbound), vec!["MD0306"]);
        // Not an Istio proxy bootstrap: the sidecar's ports are all taken.
        let other = with(|v| {
            v.as_object_mut().unwrap().remove("dynamic_resources");
        });
        assert_eq!(codes(&other), vec!["MD0306", "MD0306"]);
        // Port 0 picks a free port.
        let zero = with(|v| v["admin"]["address"]["socket_address"]["port_value"] = 0.into());
        assert_eq!(codes(&zero), Vec::<&str>::new());
    }

    #[test]
    fn address_conflicts() {
        let text = with(|v| {
            let listeners = v["static_resources"]["listeners"].as_array_mut().unwrap();
            let mut second = listeners[0].clone();
            second["name"] = "again".into();
            listeners.push(second);
        });
        let problems = validate(&text, Format::Json);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].code(), "MD0311");
        assert!(problems[0].message.starts_with(
            "Listener \"0.0.0.0_15021\" and listener \"again\" both bind 0.0.0.0:15021"
        ));
        let admin = with(|v| {
            v["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
                15000.into();
        });
        assert_eq!(codes(&admin), vec!["MD0311"]);
    }

    #[test]
    fn unknown_fields_in_checked_messages() {
        let text = with(|v| {
            v["admni"] = serde_json::json!({});
            v["admin"]["bogus_field"] = true.into();
            v["dynamic_resources"]["ads_config"]["grpc_services"][0]["envoy_grpc"]["clusterName2"] =
                "x".into();
            // camelCase names are proto JSON names: accepted.
            v["staticResources"] = v["static_resources"].take();
            v.as_object_mut().unwrap().remove("static_resources");
        });
        let problems = validate(&text, Format::Json);
        let mut unknown: Vec<String> = problems
            .iter()
            .filter(|p| p.code() == "MD0308")
            .map(|p| p.path.to_string())
            .collect();
        unknown.sort();
        assert_eq!(
            unknown,
            [
                "admin.bogus_field",
                "admni",
                "dynamic_resources.ads_config.grpc_services[0].envoy_grpc.clusterName2",
            ],
            "{problems:?}"
        );
        let typo = problems
            .iter()
            .find(|p| p.path.to_string() == "admni")
            .unwrap();
        assert!(
            typo.message.contains("Did you mean \"admin\"?"),
            "{}",
            typo.message
        );
    }

    #[test]
    fn syntax_errors_have_positions() {
        let problems = validate("{\n  \"node\": {\"id\": \"x\",,}\n}\n", Format::Json);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].code(), "MD0307");
        assert_eq!(problems[0].line, Some(2));
        assert!(problems[0].column.is_some());
        assert_eq!(validate("", Format::Json)[0].code(), "MD0307");
        assert_eq!(validate("[]", Format::Json)[0].code(), "MD0307");
        assert_eq!(
            validate("a: 1\n---\nb: 2\n", Format::Yaml)[0].code(),
            "MD0307"
        );
        assert_eq!(validate("a: [1, 2\n", Format::Yaml)[0].code(), "MD0307");
        assert_eq!(validate("", Format::Yaml)[0].code(), "MD0307");
    }

    #[test]
    fn go_templates_are_named() {
        let problems = validate("{\n  \"node\": {\n    {{ .node }}\n  }\n}\n", Format::Json);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("looks like a Go template"));
    }

    #[test]
    fn yaml_bootstraps_have_lines() {
        let text = "node:\n  id: sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local\n  cluster: web.shop\ndynamic_resources:\n  ads_config:\n    api_type: GRPC\n    grpc_services:\n    - envoy_grpc:\n        cluster_name: xds-grpc\n";
        let problems = validate(text, Format::detect(Some("b.yaml"), text));
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].code(), "MD0301");
        assert_eq!(problems[0].line, Some(9));
        assert!(
            problems[0]
                .message
                .contains("the bootstrap has no static clusters")
        );
    }

    #[test]
    fn paths_quote_odd_keys() {
        let path = JsonPath::root()
            .key("typed_extension_protocol_options")
            .key("envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
            .index(0);
        assert_eq!(
            path.to_string(),
            "typed_extension_protocol_options[\"envoy.extensions.upstreams.http.v3.HttpProtocolOptions\"][0]"
        );
    }

    #[test]
    fn envoy_reasons() {
        let stderr = "[2026-11-29 14:18:55.874][8598][info][config] [source/server/configuration_impl.cc:138] loading 3 cluster(s)\n[2026-11-29 14:18:55.875][8598][critical][main] [source/server/config_validation/server.cc:76] error initializing configuration 'bootstraps/B.json': Unknown gRPC client cluster 'xds-grpc'\n";
        let reason = envoy_reason(stderr).unwrap();
        assert_eq!(reason, "Unknown gRPC client cluster 'xds-grpc'");
        assert_eq!(codes_covering(&reason), vec![messages::MD0301]);

        let stderr = "[x][1][critical][main] [s.cc:76] error initializing configuration 'D2.json': Unable to parse JSON as proto (INVALID_ARGUMENT: unexpected EOF): {\n  \"node\": {\n";
        let reason = envoy_reason(stderr).unwrap();
        assert_eq!(
            reason,
            "Unable to parse JSON as proto (INVALID_ARGUMENT: unexpected EOF)"
        );
        assert_eq!(codes_covering(&reason), vec![messages::MD0307]);

        let cases: &[(&str, &[&str])] = &[
            (
                "Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @   admin:   message envoy.config.bootstrap.v3.Admin, near 42:19 (offset 892): no such  field: 'bogus_field') has unknown fields",
                &["MD0308"],
            ),
            (
                "Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap, near 305:11 (offset 8697): no such field: 'bogus') has unknown fields",
                &["MD0308"],
            ),
            (
                "Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ static_resources.clusters[0]: message envoy.config.cluster.v3.Cluster, near 1:1 (offset 1): no such field: 'x') has unknown fields",
                &[],
            ),
            (
                "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ node: message envoy.config.core.v3.Node, near 4:27 (offset 104): expected bare word)",
                &["MD0307"],
            ),
            (
                "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ node.id: string, near 3:11 (offset 24): unexpected character: '5'; expected '\"')",
                &["MD0312"],
            ),
            (
                "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ static_resources.clusters[1]: message envoy.config.cluster.v3.Cluster, near 1:35 (offset 34): unexpected character: '1'; expected '{')",
                &["MD0307", "MD0312"],
            ),
            (
                "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ static_resources.clusters[0].connect_timeout: string, near 1:35 (offset 34): unexpected character: '5'; expected '\"')",
                &[],
            ),
            (
                "Unable to parse JSON as proto (INVALID_ARGUMENT: could not find @type 'type.googleapis.com/x.Typo')",
                &[],
            ),
            ("route: unknown shadow cluster 'nope'", &["MD0303"]),
            (
                "cluster manager: duplicate cluster 'prometheus_stats'",
                &["MD0302"],
            ),
            (
                "ads: node 'id' and 'cluster' are required. Set it either in 'node' config or via --service-node and --service-cluster options.",
                &["MD0304", "MD0305"],
            ),
            (
                "error adding listener: 'b' has duplicate address '127.0.0.1:15090' as existing listener",
                &["MD0311"],
            ),
            (
                "envoy.config.core.v3.ApiConfigSource must have a statically defined non-EDS cluster: 'cds-nope' does not exist, was added via api, or is an EDS cluster",
                &["MD0301"],
            ),
        ];
        for (reason, want) in cases {
            let got: Vec<&str> = codes_covering(reason).iter().map(|m| m.code).collect();
            assert_eq!(&got, want, "{reason}");
        }
    }
}
