//! The checks MD0301–MD0312 over a parsed bootstrap, each problem with its path and line.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::fields::{
    StaticCluster, child, grpc_cluster_names, items, object_field, port_number, static_clusters,
};
use super::schema::Kind::{Messages, Strs};
use super::schema::{
    ADMIN, API_CONFIG_SOURCE, BOOTSTRAP, CONFIG_SOURCE, DYNAMIC_RESOURCES, ENVOY_GRPC,
    GRPC_SERVICE, NODE, STATIC_RESOURCES, Schema, shape,
};
use super::{Bootstrap, ISTIO_XDS_CLUSTER, JsonPath, NodeId, Problem, RESERVED_PORTS};
use crate::findings::messages::{self, Message};
use crate::formats::yaml::LineTree;

/// The name closest to `wanted` among `names`, when it is close enough to be a likely typo.
pub(super) fn closest<'a>(
    wanted: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
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
            strsim::levenshtein(&wanted_norm, &normalize(name))
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

/// A bound socket: the admin interface or a static listener's address.
#[derive(Debug)]
pub(super) struct Bind {
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

pub(super) struct Checker<'a> {
    pub(super) lines: Option<&'a LineTree>,
    pub(super) problems: Vec<Problem>,
}

impl Checker<'_> {
    fn report(&mut self, message: Message, path: JsonPath) {
        let line = self.lines.map(|tree| path.line_in(tree));
        self.problems.push(Problem {
            message_type: message.message_type(),
            message: message.into_text(),
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
                        messages::MD0312::message(what, schema.name, expected, found),
                        at,
                    );
                }
                continue;
            }
            let hint = closest(key, schema.fields.iter().map(|(f, _)| *f))
                .map(|f| format!(" Did you mean {f:?}?"))
                .unwrap_or_default();
            self.report(
                messages::MD0308::message(schema.name, key, hint),
                path.key(key),
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
                    messages::MD0301::message(label, name.as_str(), why, hint),
                    path,
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
                        messages::MD0302::message(cluster.name, place),
                        cluster.path.key("name"),
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
                        messages::MD0303::message(listener_name.as_str(), verb, target, list, hint),
                        path,
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
            self.report(messages::MD0304::message(what, "Envoy refuses to start a bootstrap that has xDS config sources without node.id and node.cluster"), id_path.clone());
        }
        let cluster_field = node.and_then(|n| object_field(n, "cluster"));
        let cluster = cluster_field.and_then(|(_, v)| v.as_str()).unwrap_or("");
        let wrong_type = cluster_field.is_some_and(|(_, v)| !v.is_string() && !v.is_null());
        if cluster.is_empty() && !wrong_type {
            let (what, path) = match cluster_field {
                Some((k, _)) => ("is empty", node_path.key(k)),
                None => ("is missing", node_path.key("cluster")),
            };
            self.report(messages::MD0305::message(what), path);
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
                messages::MD0304::message(
                    format!("{id:?} is not one istiod accepts"),
                    node_id.errors.join("; "),
                ),
                id_path,
            );
        } else if !node_id.oddities.is_empty() {
            self.report(
                messages::MD0310::message(id, node_id.oddities.join("; ")),
                id_path,
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
                    messages::MD0306::message(bind.what.as_str(), i64::from(bind.port), *owner),
                    bind.path.clone(),
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
                        messages::MD0311::message(
                            a.what.as_str(),
                            other,
                            b.endpoint(),
                            consequence,
                        ),
                        b.path.clone(),
                    );
                }
            }
        }
    }
}

/// Every `HttpConnectionManager` config inside a listener (also inside a `TypedStruct`).
pub(super) fn find_http_connection_managers<'a>(
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
pub(super) fn route_targets<'a>(
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
pub(super) fn binds(root: &Map<String, Value>) -> Vec<Bind> {
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
