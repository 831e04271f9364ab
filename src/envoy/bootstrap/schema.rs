//! The schema the checks know: the fields of the messages MD0308 and MD0312 check, with the
//! JSON shape of each, as Envoy's descriptors list them.

use serde_json::Value;

use super::fields::camel_case;

/// Field names of the messages whose unknown fields are checked, as Envoy 1.40's descriptors
/// list them (read from the binary's embedded protos).
pub(super) struct Schema {
    pub(super) name: &'static str,
    pub(super) fields: &'static [(&'static str, Kind)],
}

/// The JSON shape a field's proto type takes (proto3 JSON mapping, as Envoy reads it); `null`
/// is accepted for every field (it means "not set").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
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

pub(super) use Kind::{Bool, Duration, Enum, Int, Message, Messages, Object, Str, Strs};

impl Kind {
    /// What the value should be, for the message.
    pub(super) fn expected(self) -> &'static str {
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
    pub(super) fn check(self, value: &Value) -> Result<(), Option<usize>> {
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
pub(super) fn shape(value: &Value) -> String {
    let short = crate::formats::text::truncate(&value.to_string(), 40);
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => format!("a boolean ({short})"),
        Value::Number(_) => format!("a number ({short})"),
        Value::String(_) => format!("a string ({short})"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

pub(super) const BOOTSTRAP: Schema = Schema {
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
pub(super) const STATIC_RESOURCES: Schema = Schema {
    name: "envoy.config.bootstrap.v3.Bootstrap.StaticResources",
    fields: &[
        ("listeners", Messages),
        ("clusters", Messages),
        ("secrets", Messages),
    ],
};
pub(super) const DYNAMIC_RESOURCES: Schema = Schema {
    name: "envoy.config.bootstrap.v3.Bootstrap.DynamicResources",
    fields: &[
        ("lds_config", Message),
        ("cds_config", Message),
        ("ads_config", Message),
        ("lds_resources_locator", Str),
        ("cds_resources_locator", Str),
    ],
};
pub(super) const ADMIN: Schema = Schema {
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
pub(super) const NODE: Schema = Schema {
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
pub(super) const CONFIG_SOURCE: Schema = Schema {
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
pub(super) const API_CONFIG_SOURCE: Schema = Schema {
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
pub(super) const GRPC_SERVICE: Schema = Schema {
    name: "envoy.config.core.v3.GrpcService",
    fields: &[
        ("envoy_grpc", Message),
        ("google_grpc", Message),
        ("timeout", Duration),
        ("initial_metadata", Messages),
        ("retry_policy", Message),
    ],
};
pub(super) const ENVOY_GRPC: Schema = Schema {
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
    pub(super) fn field(&self, key: &str) -> Option<Kind> {
        self.fields
            .iter()
            .find(|(f, _)| *f == key || camel_case(f) == key)
            .map(|(_, kind)| *kind)
    }
}

/// Whether MD0312 checks the field at a proto JSON path (`static_resources.clusters[1]`,
/// `node.id`): a field of one of the messages whose schema is known.
pub(super) fn type_checked_field(path: &str) -> bool {
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
