//! Reading a protobuf message written as JSON: fields by their proto or JSON name, children and
//! list items with their paths, port numbers, the static clusters and the gRPC cluster names.

use serde_json::{Map, Value};

use super::JsonPath;

/// A field of a protobuf message written as JSON: by its proto name or its lowerCamelCase JSON
/// name (Envoy accepts both). Returns the key as written.
pub(super) fn object_field<'a>(
    obj: &'a Map<String, Value>,
    name: &str,
) -> Option<(&'a str, &'a Value)> {
    if let Some((k, v)) = obj.get_key_value(name) {
        return Some((k.as_str(), v));
    }
    let camel = camel_case(name);
    obj.get_key_value(camel.as_str())
        .map(|(k, v)| (k.as_str(), v))
}

/// The child object at a field, with its path.
pub(super) fn child<'a>(
    obj: &'a Map<String, Value>,
    path: &JsonPath,
    name: &str,
) -> Option<(&'a Map<String, Value>, JsonPath)> {
    let (key, value) = object_field(obj, name)?;
    Some((value.as_object()?, path.key(key)))
}

/// The items of the list at a field, with their paths.
pub(super) fn items<'a>(
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

pub(super) fn camel_case(snake: &str) -> String {
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
pub(super) fn port_number(value: &Value) -> Option<u32> {
    match value {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A static cluster of the bootstrap.
#[derive(Debug)]
pub(super) struct StaticCluster<'a> {
    pub(super) name: &'a str,
    pub(super) path: JsonPath,
    pub(super) eds: bool,
}

pub(super) fn static_clusters(root: &Map<String, Value>) -> Vec<StaticCluster<'_>> {
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
pub(super) fn grpc_cluster_names(source: &Value, path: &JsonPath) -> Vec<(String, JsonPath)> {
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
