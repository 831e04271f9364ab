//! What pilot-agent will write into a pod's Envoy bootstrap, derived from the pod and the mesh
//! ConfigMap alone: the inputs of `bootstrap explain POD` (`explanation.rs` checks them). No I/O.
//!
//! pilot-agent builds the bootstrap from the `istio-proxy` container's arguments and environment
//! (`proxy <type> --domain ...`, `POD_NAME`, `POD_NAMESPACE`, `INSTANCE_IP`, `PROXY_CONFIG`,
//! `ISTIO_META_*`, `ISTIO_BOOTSTRAP_OVERRIDE`), the pod's labels and its `proxy.istio.io/config`
//! annotation. Each derived value says where it came from, so a person can see why node.id or
//! node.cluster is what it is.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod};
use serde_json::{Map, Value};

use crate::envoy::bootstrap::{ISTIO_XDS_CLUSTER, NodeId, RESERVED_PORTS};
use crate::formats::yaml;
use crate::istio::injection::REVISION_LABEL;
use crate::istio::sidecar;

/// The annotation that overrides ProxyConfig fields for one pod.
pub const PROXY_CONFIG_ANNOTATION: &str = "proxy.istio.io/config";

/// One value of the bootstrap and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derived {
    /// The bootstrap field, e.g. `node.id`.
    pub field: &'static str,
    pub value: String,
    /// Why it has this value.
    pub source: String,
}

/// What pilot-agent will write, and what looks wrong with it.
#[derive(Clone, Debug, Default)]
pub struct BootstrapInputs {
    /// True when `istio-proxy` is a native sidecar (an init container with restartPolicy Always).
    pub native_sidecar: bool,
    pub values: Vec<Derived>,
    /// node.id's ingredients, in order: `proxy type`, `pod IP`, `pod name`, `namespace`, `domain`.
    pub node_id_parts: Vec<Derived>,
    /// Problems a person should know about (a node.id istiod refuses, ports that collide...).
    pub problems: Vec<String>,
    /// Facts that change how the bootstrap is made (a custom bootstrap file, a pod without IP).
    pub notes: Vec<String>,
}

impl BootstrapInputs {
    /// The value derived for a field.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|d| d.field == field)
            .map(|d| d.value.as_str())
    }

    /// Differences between what pilot-agent should have written and a real bootstrap (for example
    /// the one in the pod's /config_dump): (field, expected, found).
    pub fn compare(&self, bootstrap: &Value) -> Vec<(&'static str, String, String)> {
        let found = |pointer: &str| -> String {
            match bootstrap.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            }
        };
        let mut out = Vec::new();
        for (field, pointer) in [
            ("node.id", "/node/id"),
            ("node.cluster", "/node/cluster"),
            ("admin port", "/admin/address/socket_address/port_value"),
        ] {
            let Some(expected) = self.get(field) else {
                continue;
            };
            // A node.id with a placeholder (pod IP unknown) is compared without it.
            let actual = found(pointer);
            if expected.contains('<') {
                continue;
            }
            if actual != expected {
                out.push((field, expected.to_string(), actual));
            }
        }
        let ads = found("/dynamic_resources/ads_config/grpc_services/0/envoy_grpc/cluster_name");
        if ads != ISTIO_XDS_CLUSTER {
            out.push(("ADS cluster", ISTIO_XDS_CLUSTER.to_string(), ads));
        }
        out
    }
}

/// Why a pod has no bootstrap to explain.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotMeshed {
    #[error("the pod has no istio-proxy container")]
    NoProxy,
    #[error(
        "istio-proxy does not run `pilot-agent proxy` (args: {0}), so pilot-agent writes no bootstrap"
    )]
    NotPilotAgent(String),
}

/// Derives what pilot-agent will put in the bootstrap of `pod`. `config_maps` may hold the mesh
/// ConfigMap (`istio`, or `istio-<revision>` for the pod's revision): its `defaultConfig` is used
/// for ProxyConfig fields when the container has no `PROXY_CONFIG` (a pod not injected yet).
pub fn explain(pod: &Pod, config_maps: &[ConfigMap]) -> Result<BootstrapInputs, NotMeshed> {
    let spec = pod.spec.as_ref().ok_or(NotMeshed::NoProxy)?;
    let proxy = sidecar::proxy_container(spec).ok_or(NotMeshed::NoProxy)?;
    let container = proxy.container;
    let args: Vec<&str> = container
        .args
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if args.first() != Some(&"proxy") {
        return Err(NotMeshed::NotPilotAgent(args.join(" ")));
    }
    let mut out = BootstrapInputs {
        native_sidecar: proxy.native,
        ..BootstrapInputs::default()
    };
    let env = Env::of(pod, container);
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    // pilot-agent reads POD_NAME and POD_NAMESPACE and nothing else: unset, they are empty.
    let (namespace, namespace_source) = env.get("POD_NAMESPACE").unwrap_or_else(|| {
        (
            String::new(),
            "POD_NAMESPACE is not set, so pilot-agent leaves it empty".to_string(),
        )
    });

    let config = ProxyConfig::resolve(pod, &env, config_maps, &labels);

    // node.id = <type>~<ip>~<POD_NAME>.<POD_NAMESPACE>~<domain>
    let (proxy_type, type_source) = match args.get(1) {
        Some(t) if !t.starts_with('-') => (t.to_string(), format!("`pilot-agent proxy {t}`")),
        _ => (
            "sidecar".to_string(),
            "pilot-agent's default proxy type".to_string(),
        ),
    };
    let (ip, ip_source) = match env.get("INSTANCE_IP") {
        Some((ip, source)) if ip.parse::<std::net::IpAddr>().is_ok() => (ip, source),
        Some((raw, source)) => {
            out.notes.push(format!(
                "INSTANCE_IP ({source}) is {raw:?}, not an IP address: pilot-agent falls back to the first private IP of the pod"
            ));
            (
                "<pod IP>".to_string(),
                "the pod's first private IP".to_string(),
            )
        }
        None => {
            out.notes.push(
                "the pod has no IP yet: node.id gets it when the pod is scheduled".to_string(),
            );
            (
                "<pod IP>".to_string(),
                "status.podIP, not set yet".to_string(),
            )
        }
    };
    let (pod_name, name_source) = env.get("POD_NAME").unwrap_or_else(|| {
        (
            String::new(),
            "POD_NAME is not set, so pilot-agent leaves it empty".to_string(),
        )
    });
    let (domain, domain_source) = match flag_value(&args, "--domain") {
        Some(raw) => (env.expand(&raw), format!("--domain {raw}")),
        None => (
            format!("{namespace}.svc.cluster.local"),
            "pilot-agent's default domain <POD_NAMESPACE>.svc.cluster.local".to_string(),
        ),
    };
    let node_id = format!("{proxy_type}~{ip}~{pod_name}.{namespace}~{domain}");
    out.values.push(Derived {
        field: "node.id",
        value: node_id.clone(),
        source: format!(
            "type from {type_source}; IP from {ip_source}; {pod_name}.{namespace} from {name_source} and POD_NAMESPACE; domain from {domain_source}"
        ),
    });
    for (field, value, source) in [
        ("proxy type", proxy_type, type_source),
        ("pod IP", ip, ip_source),
        ("pod name", pod_name, name_source),
        ("namespace", namespace.clone(), namespace_source),
        ("domain", domain, domain_source),
    ] {
        out.node_id_parts.push(Derived {
            field,
            value,
            source,
        });
    }
    if !node_id.contains('<') {
        let parsed = NodeId::parse(&node_id, None);
        for error in parsed.errors {
            out.problems.push(format!(
                "node.id {node_id:?} is not one istiod accepts: {error}"
            ));
        }
        for oddity in parsed.oddities {
            out.problems.push(format!("node.id {node_id:?}: {oddity}"));
        }
    }

    let (cluster, cluster_source) = config.node_cluster(&labels, &env, &namespace, &args);
    out.values.push(Derived {
        field: "node.cluster",
        value: cluster,
        source: cluster_source,
    });
    for (field, key, default) in [
        (
            "discovery address",
            "discoveryAddress",
            "istiod.istio-system.svc:15012",
        ),
        ("admin port", "proxyAdminPort", "15000"),
        ("pilot-agent status port", "statusPort", "15020"),
    ] {
        let (value, source) = config.get(key).unwrap_or_else(|| {
            (
                default.to_string(),
                "Istio's default ProxyConfig".to_string(),
            )
        });
        out.values.push(Derived {
            field,
            value,
            source,
        });
    }
    for (field, var, default) in [
        ("health listener port", "ENVOY_STATUS_PORT", "15021"),
        ("Prometheus listener port", "ENVOY_PROMETHEUS_PORT", "15090"),
    ] {
        let (value, source) = env
            .get(var)
            .unwrap_or_else(|| (default.to_string(), format!("the default ({var} unset)")));
        out.values.push(Derived {
            field,
            value,
            source,
        });
    }
    out.values.push(Derived {
        field: "ADS cluster",
        value: ISTIO_XDS_CLUSTER.to_string(),
        source: "pilot-agent's bootstrap template (a pipe to pilot-agent's XDS proxy, which dials the discovery address)".to_string(),
    });

    if let Some((path, source)) = env.get("ISTIO_BOOTSTRAP_OVERRIDE") {
        out.notes.push(format!(
            "ISTIO_BOOTSTRAP_OVERRIDE ({source}) merges {path} into the bootstrap: check that file with `bootstrap validate`"
        ));
    }
    if let Some((path, source)) = config.get("customConfigFile")
        && !path.is_empty()
    {
        out.notes.push(format!(
            "customConfigFile {path} ({source}) replaces pilot-agent's bootstrap template: check the bootstrap rendered from it with `bootstrap validate`"
        ));
    }
    out.problems.extend(port_collisions(spec, container, &out));
    Ok(out)
}

/// `--flag value` or `--flag=value`.
pub(super) fn flag_value(args: &[&str], flag: &str) -> Option<String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if *arg == flag {
            return iter.next().map(|v| v.to_string());
        }
        if let Some(value) = arg.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            return Some(value.to_string());
        }
    }
    None
}

/// Application ports that the sidecar or pilot-agent will also bind, as sentences.
pub(super) fn port_collisions(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    proxy: &Container,
    inputs: &BootstrapInputs,
) -> Vec<String> {
    collisions(spec, proxy, inputs)
        .into_iter()
        .map(|c| {
            format!(
                "container {:?} listens on port {}, which {} uses: one of them will fail to bind",
                c.container, c.port, c.owner
            )
        })
        .collect()
}

/// An application port the sidecar or pilot-agent also binds.
pub(super) struct Collision {
    pub(super) container: String,
    pub(super) port: u32,
    pub(super) owner: String,
}

pub(super) fn collisions(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    proxy: &Container,
    inputs: &BootstrapInputs,
) -> Vec<Collision> {
    let mut taken: BTreeMap<u32, String> = RESERVED_PORTS
        .iter()
        .map(|(port, owner)| (*port, (*owner).to_string()))
        .collect();
    for (field, owner) in [
        ("admin port", "the sidecar's Envoy admin interface"),
        ("pilot-agent status port", "pilot-agent's status server"),
        (
            "health listener port",
            "the sidecar's health-check listener",
        ),
        (
            "Prometheus listener port",
            "the sidecar's Prometheus listener",
        ),
    ] {
        if let Some(port) = inputs.get(field).and_then(|p| p.parse().ok()) {
            taken.insert(port, owner.to_string());
        }
    }
    let mut out = Vec::new();
    for container in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        if container.name == proxy.name {
            continue;
        }
        for port in container.ports.iter().flatten() {
            let Ok(number) = u32::try_from(port.container_port) else {
                continue;
            };
            if let Some(owner) = taken.get(&number) {
                out.push(Collision {
                    container: container.name.clone(),
                    port: number,
                    owner: owner.clone(),
                });
            }
        }
    }
    out
}

/// The proxy container's environment, resolved as far as the pod allows.
pub(super) struct Env {
    pub(super) vars: Vec<(String, Option<String>, String)>,
}

impl Env {
    pub(super) fn of(pod: &Pod, container: &Container) -> Env {
        let mut vars = Vec::new();
        for var in container.env.iter().flatten() {
            let (value, source) = if let Some(value) = &var.value {
                (Some(value.clone()), format!("env {}", var.name))
            } else if let Some(field) = var.value_from.as_ref().and_then(|f| f.field_ref.as_ref()) {
                let value = match field.field_path.as_str() {
                    "metadata.name" => pod.metadata.name.clone(),
                    "metadata.namespace" => pod.metadata.namespace.clone(),
                    "status.podIP" => pod.status.as_ref().and_then(|s| s.pod_ip.clone()),
                    "status.hostIP" => pod.status.as_ref().and_then(|s| s.host_ip.clone()),
                    "spec.serviceAccountName" => pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.service_account_name.clone()),
                    "spec.nodeName" => pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                    _ => None,
                };
                (value, format!("env {} from {}", var.name, field.field_path))
            } else {
                (None, format!("env {}", var.name))
            };
            vars.push((var.name.clone(), value, source));
        }
        Env { vars }
    }

    /// The value of a variable and where it came from; None when unset or unknown.
    pub(super) fn get(&self, name: &str) -> Option<(String, String)> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _, _)| n == name)
            .and_then(|(_, v, s)| v.clone().map(|v| (v, s.clone())))
    }

    /// Kubernetes' `$(VAR)` expansion in arguments.
    pub(super) fn expand(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("$(") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            match after.find(')') {
                Some(end) => {
                    let name = &after[..end];
                    match self.get(name) {
                        Some((value, _)) => out.push_str(&value),
                        None => out.push_str(&format!("$({name})")),
                    }
                    rest = &after[end + 1..];
                }
                None => {
                    out.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// The ProxyConfig pilot-agent uses: Istio's defaults, overlaid by the `PROXY_CONFIG` env (or,
/// for a pod not injected yet, the mesh ConfigMap's `defaultConfig`), overlaid by the pod's
/// `proxy.istio.io/config` annotation. Each field remembers which layer set it.
pub(super) struct ProxyConfig {
    pub(super) fields: BTreeMap<String, (Value, String)>,
}

impl ProxyConfig {
    pub(super) fn resolve(
        pod: &Pod,
        env: &Env,
        config_maps: &[ConfigMap],
        labels: &BTreeMap<String, String>,
    ) -> ProxyConfig {
        let mut fields = BTreeMap::new();
        let mut layer = |value: Option<Value>, source: &str| {
            if let Some(Value::Object(map)) = value {
                for (k, v) in map {
                    fields.insert(k, (v, source.to_string()));
                }
            }
        };
        match env.get("PROXY_CONFIG") {
            Some((text, _)) => layer(parse_yaml(&text), "the PROXY_CONFIG env the injector set"),
            None => {
                let revision = labels
                    .get(REVISION_LABEL)
                    .filter(|r| !r.is_empty() && *r != "default");
                let name = revision.map_or_else(|| "istio".to_string(), |r| format!("istio-{r}"));
                let default_config = config_maps
                    .iter()
                    .find(|cm| cm.metadata.name.as_deref() == Some(name.as_str()))
                    .and_then(|cm| cm.data.as_ref()?.get("mesh"))
                    .and_then(|text| parse_yaml(text))
                    .and_then(|mesh| mesh.get("defaultConfig").cloned());
                layer(
                    default_config,
                    &format!("defaultConfig in the {name} ConfigMap"),
                );
            }
        }
        let annotation = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PROXY_CONFIG_ANNOTATION))
            .and_then(|text| parse_yaml(text));
        layer(
            annotation,
            &format!("the pod annotation {PROXY_CONFIG_ANNOTATION}"),
        );
        ProxyConfig { fields }
    }

    /// A field as text, with its source.
    pub(super) fn get(&self, key: &str) -> Option<(String, String)> {
        let (value, source) = self.fields.get(key)?;
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Null => return None,
            other => other.to_string(),
        };
        Some((text, source.clone()))
    }

    /// node.cluster, as pilot-agent's getServiceCluster decides it.
    pub(super) fn node_cluster(
        &self,
        labels: &BTreeMap<String, String>,
        env: &Env,
        namespace: &str,
        args: &[&str],
    ) -> (String, String) {
        let service_cluster = flag_value(args, "--serviceCluster")
            .map(|v| (v, "the --serviceCluster flag".to_string()))
            .or_else(|| self.get("serviceCluster"));
        if let Some((cluster, source)) = &service_cluster
            && !cluster.is_empty()
            && cluster != "istio-proxy"
        {
            return (cluster.clone(), format!("serviceCluster from {source}"));
        }
        let tracing_name = self
            .get("tracingServiceName")
            .map(|(v, _)| v)
            .unwrap_or_default();
        let app = [
            "app",
            "app.kubernetes.io/name",
            "service.istio.io/canonical-name",
        ]
        .iter()
        .find_map(|k| labels.get(*k).map(|v| (*k, v.clone())));
        let workload = env.get("ISTIO_META_WORKLOAD_NAME").map(|(v, _)| v);
        if tracing_name == "CANONICAL_NAME_ONLY" || tracing_name == "CANONICAL_NAME_AND_NAMESPACE" {
            let canonical = [
                "service.istio.io/canonical-name",
                "app.kubernetes.io/name",
                "app",
            ]
            .iter()
            .find_map(|k| labels.get(*k).cloned())
            .or_else(|| workload.clone());
            if let Some(name) = canonical {
                return if tracing_name == "CANONICAL_NAME_ONLY" {
                    (
                        name,
                        "the canonical service name (tracingServiceName CANONICAL_NAME_ONLY)"
                            .to_string(),
                    )
                } else {
                    (
                        format!("{name}.{namespace}"),
                        "<canonical service>.<namespace> (tracingServiceName CANONICAL_NAME_AND_NAMESPACE)".to_string(),
                    )
                };
            }
        }
        if let Some((label, app)) = app {
            return (
                format!("{app}.{namespace}"),
                format!("<label {label}>.<namespace>"),
            );
        }
        if let Some(workload) = workload {
            return (
                format!("{workload}.{namespace}"),
                "<ISTIO_META_WORKLOAD_NAME>.<namespace> (the pod has no app label)".to_string(),
            );
        }
        (
            format!("istio-proxy.{namespace}"),
            "istio-proxy.<namespace> (no app label, no workload name)".to_string(),
        )
    }
}

pub(super) fn parse_yaml(text: &str) -> Option<Value> {
    yaml::parse_stream(text)
        .ok()?
        .into_iter()
        .next()
        .map(|d| d.value)
        .or_else(|| Some(Value::Object(Map::new())))
}
