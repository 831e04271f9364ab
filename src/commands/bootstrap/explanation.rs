//! `bootstrap explain POD`, pure: each ingredient of a pod's bootstrap (node.id, metadata,
//! token audience, root certificate, bootstrapOverride) with its value, its source and its check;
//! the override's `bootstrap validate` problems on its merge over pilot-agent's bootstrap; the
//! comparison with the live bootstrap from `/config_dump`. The inputs come from `inputs.rs`.

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod};
use serde::Serialize;
use serde_json::Value;

use crate::diagnosis::Lookup;
use crate::envoy::bootstrap::{ISTIO_NODE_TYPES, NodeId};
use crate::istio::constants::{ROOT_CERT_CONFIG_MAP, TOKEN_AUDIENCE};
use crate::istio::sidecar;

pub use super::checks::{LiveField, OverrideProblem, Status};
use super::inputs::*;
use super::overlay::{compare_live, override_problems};

/// The annotation naming a ConfigMap whose `custom_bootstrap.json` Envoy merges over the
/// bootstrap pilot-agent writes.
pub const BOOTSTRAP_OVERRIDE_ANNOTATION: &str = "sidecar.istio.io/bootstrapOverride";
/// The key of that ConfigMap (the injector mounts the ConfigMap at /etc/istio/custom-bootstrap).
pub const BOOTSTRAP_OVERRIDE_KEY: &str = "custom_bootstrap.json";
/// The ISTIO_BOOTSTRAP_OVERRIDE the injector sets for that annotation.
pub const BOOTSTRAP_OVERRIDE_PATH: &str = "/etc/istio/custom-bootstrap/custom_bootstrap.json";
/// The projected volume holding the token the proxy presents to istiod.
pub const TOKEN_VOLUME: &str = "istio-token";

/// Which part of the bootstrap an ingredient feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// The four parts of node.id (and the type before them).
    NodeId,
    /// node.cluster, where configuration and certificates come from, ports.
    Bootstrap,
    /// node.metadata from ISTIO_META_* variables.
    Metadata,
    /// The token and the root certificate the proxy needs to talk to istiod.
    Credentials,
    /// A custom bootstrap merged over pilot-agent's (sidecar.istio.io/bootstrapOverride).
    CustomBootstrap,
}

impl Group {
    pub fn title(self) -> &'static str {
        match self {
            Group::NodeId => "node.id",
            Group::Bootstrap => "node and control plane",
            Group::Metadata => "node.metadata (ISTIO_META_*)",
            Group::Credentials => "credentials for istiod",
            Group::CustomBootstrap => "custom bootstrap",
        }
    }
}

/// One input of the bootstrap: its value, where it came from, and whether it is right.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ingredient {
    pub group: Group,
    /// `pod IP`, `metadata.CLUSTER_ID`, `istio-token`...
    pub name: String,
    pub value: String,
    pub source: String,
    pub status: Status,
    /// The verdict in a few words (`audience istio-ca`); empty when nothing was checked.
    pub check: String,
    /// Why it matters and what to do, for a check that did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The comparison with the bootstrap the running Envoy loaded (its /config_dump).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Live {
    pub available: bool,
    /// How the admin port was reached (`port-forward to shop/web-1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Why there is no live bootstrap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub fields: Vec<LiveField>,
}

impl Live {
    pub fn mismatches(&self) -> usize {
        self.fields
            .iter()
            .filter(|f| f.matches == Some(false))
            .count()
    }
}

/// What `bootstrap explain` says about one pod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub pod: String,
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    pub native_sidecar: bool,
    pub node_id: String,
    pub ingredients: Vec<Ingredient>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub override_problems: Vec<OverrideProblem>,
    pub notes: Vec<String>,
    pub live: Live,
}

impl Explanation {
    /// Ingredients with this status.
    pub fn count(&self, status: Status) -> usize {
        self.ingredients
            .iter()
            .filter(|i| i.status == status)
            .count()
    }

    /// True when a check failed at Error level.
    pub fn failed(&self) -> bool {
        self.count(Status::Error) > 0
    }
}

/// The objects around the pod that its bootstrap depends on, as read from the cluster.
#[derive(Clone, Debug)]
pub struct Surroundings {
    /// The mesh ConfigMaps (`istio`, `istio-<revision>`) of istio-system.
    pub mesh_config_maps: Vec<ConfigMap>,
    /// `istio-ca-root-cert` in the pod's namespace.
    pub root_cert: Lookup<ConfigMap>,
    /// The ConfigMap the pod's bootstrapOverride annotation names; `None` without the annotation.
    pub bootstrap_override: Option<Lookup<ConfigMap>>,
}

/// The bootstrap the running Envoy loaded (`/config_dump`'s bootstrap section) and how it was
/// reached, or why it could not be read.
pub type LiveBootstrap = Result<(String, Value), String>;

/// Explains a pod's bootstrap: every ingredient with its value, source and check, problems of
/// a bootstrapOverride ConfigMap, and (when `live` has one) the comparison with what the running
/// Envoy loaded.
pub fn explain_pod(
    pod: &Pod,
    around: &Surroundings,
    live: LiveBootstrap,
) -> Result<Explanation, NotMeshed> {
    let inputs = explain(pod, &around.mesh_config_maps)?;
    let spec = pod.spec.as_ref().ok_or(NotMeshed::NoProxy)?;
    let proxy = sidecar::proxy_container(spec).ok_or(NotMeshed::NoProxy)?;
    let container = proxy.container;
    let env = Env::of(pod, container);
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let config = ProxyConfig::resolve(pod, &env, &around.mesh_config_maps, &labels);
    let name = pod.metadata.name.clone().unwrap_or_default();
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let pod_ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone());

    let mut rows = Vec::new();
    node_id_rows(&inputs, &name, &namespace, pod_ip.as_deref(), &mut rows);
    bootstrap_rows(&inputs, &env, &mut rows);
    for c in collisions(spec, container, &inputs) {
        rows.push(Ingredient {
            group: Group::Bootstrap,
            name: format!("port {}", c.port),
            value: format!("container {}", c.container),
            source: "the container's ports".to_string(),
            status: Status::Error,
            check: format!("also used by {}", c.owner),
            detail: Some(format!(
                "container {:?} listens on port {}, which {} uses: one of them fails to bind. Move the application to another port.",
                c.container, c.port, c.owner
            )),
        });
    }
    let metadata = metadata_rows(&env, &config, &mut rows);
    credential_rows(pod, container, &namespace, &around.root_cert, &mut rows);
    let mut override_problems = Vec::new();
    if let Some(lookup) = &around.bootstrap_override {
        let cm = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(BOOTSTRAP_OVERRIDE_ANNOTATION))
            .cloned()
            .unwrap_or_default();
        override_problems = override_row(&inputs, &env, &cm, &namespace, lookup, &mut rows);
    }

    let live = match live {
        Ok((via, bootstrap)) => Live {
            available: true,
            via: Some(via),
            reason: None,
            fields: compare_live(&inputs, &metadata, &bootstrap),
        },
        Err(reason) => Live {
            available: false,
            via: None,
            reason: Some(reason),
            fields: Vec::new(),
        },
    };
    Ok(Explanation {
        pod: name,
        namespace,
        pod_ip,
        native_sidecar: inputs.native_sidecar,
        node_id: inputs.get("node.id").unwrap_or_default().to_string(),
        ingredients: rows,
        override_problems,
        // The override the annotation names is validated above: no need to say "check it".
        notes: inputs
            .notes
            .iter()
            .filter(|n| {
                around.bootstrap_override.is_none()
                    || !n.starts_with("ISTIO_BOOTSTRAP_OVERRIDE")
                    || !n.contains(BOOTSTRAP_OVERRIDE_PATH)
            })
            .cloned()
            .collect(),
        live,
    })
}

fn row(
    group: Group,
    name: &str,
    value: impl Into<String>,
    source: impl Into<String>,
    status: Status,
    check: impl Into<String>,
) -> Ingredient {
    Ingredient {
        group,
        name: name.to_string(),
        value: value.into(),
        source: source.into(),
        status,
        check: check.into(),
        detail: None,
    }
}

impl Ingredient {
    fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

fn node_id_rows(
    inputs: &BootstrapInputs,
    pod_name: &str,
    pod_namespace: &str,
    pod_ip: Option<&str>,
    rows: &mut Vec<Ingredient>,
) {
    let part = |field: &str| {
        inputs
            .node_id_parts
            .iter()
            .find(|d| d.field == field)
            .map(|d| (d.value.clone(), d.source.clone()))
            .unwrap_or_default()
    };
    let g = Group::NodeId;

    let (kind, source) = part("proxy type");
    rows.push(if ISTIO_NODE_TYPES.contains(&kind.as_str()) {
        row(g, "proxy type", &kind, source, Status::Ok, "a type istiod knows")
    } else {
        row(g, "proxy type", &kind, source, Status::Error, "not a proxy type").detail(format!(
            "pilot-agent refuses to start with proxy type {kind:?} (\"invalid proxy Type\") and istiod knows only {}: use `proxy sidecar` (or `proxy router` for a gateway)",
            ISTIO_NODE_TYPES.join(", ")
        ))
    });

    let (ip, source) = part("pod IP");
    rows.push(if ip.starts_with('<') {
        row(g, "pod IP", &ip, source, Status::Unknown, "not known yet").detail(
            "the pod has no IP (or INSTANCE_IP is not one): node.id gets the IP pilot-agent finds when the pod runs",
        )
    } else {
        match pod_ip.filter(|p| *p != ip) {
            Some(real) => row(g, "pod IP", &ip, source, Status::Warning, format!("not the pod's IP {real}")).detail(format!(
                "INSTANCE_IP is {ip} but the pod's IP is {real}: istiod matches the proxy to its pod and endpoints by this IP. Take INSTANCE_IP from status.podIP (valueFrom.fieldRef)."
            )),
            None => row(g, "pod IP", &ip, source, Status::Ok, "an IP address"),
        }
    });

    let (name, source) = part("pod name");
    rows.push(if name.is_empty() {
        row(g, "pod name", "", source, Status::Error, "empty").detail(
            "POD_NAME is not set: node.id's third part has no pod name, and istiod cannot find the proxy's pod. Set POD_NAME from metadata.name (valueFrom.fieldRef).",
        )
    } else if name != pod_name {
        row(g, "pod name", &name, source, Status::Warning, format!("not the pod's name {pod_name}")).detail(format!(
            "POD_NAME is {name:?} but the pod is {pod_name:?}: istiod looks the proxy's pod up by this name. Take POD_NAME from metadata.name (valueFrom.fieldRef)."
        ))
    } else {
        row(g, "pod name", &name, source, Status::Ok, "the pod's name")
    });

    let (namespace, source) = part("namespace");
    rows.push(if namespace.is_empty() {
        row(g, "namespace", "", source, Status::Error, "empty").detail(
            "POD_NAMESPACE is not set: node.id has no namespace and istiod refuses a proxy whose namespace differs from its identity's. Set POD_NAMESPACE from metadata.namespace (valueFrom.fieldRef).",
        )
    } else if namespace != pod_namespace {
        row(g, "namespace", &namespace, source, Status::Error, format!("not the pod's namespace {pod_namespace}")).detail(format!(
            "POD_NAMESPACE is {namespace:?} but the pod runs in {pod_namespace:?}: istiod refuses a proxy whose namespace is not the one of its service account's token. Take POD_NAMESPACE from metadata.namespace."
        ))
    } else {
        row(g, "namespace", &namespace, source, Status::Ok, "the pod's namespace")
    });

    let (domain, source) = part("domain");
    let domain_ns = domain
        .split_once(".svc.")
        .filter(|(ns, cd)| !ns.is_empty() && !cd.is_empty())
        .map(|(ns, _)| ns);
    rows.push(match domain_ns {
        Some(ns) if ns == namespace => row(
            g,
            "domain",
            &domain,
            source,
            Status::Ok,
            "<namespace>.svc.<cluster domain>",
        ),
        Some(ns) => row(g, "domain", &domain, source, Status::Warning, format!("namespace {ns}, not {namespace}")).detail(format!(
            "the domain names namespace {ns:?} while the proxy is in {namespace:?}: istiod builds the proxy's short host names (\"reviews\", \"reviews.{namespace}\") from it, so they point at the wrong namespace. The injector passes --domain $(POD_NAMESPACE).svc.<cluster domain>."
        )),
        None => row(g, "domain", &domain, source, Status::Warning, "not <namespace>.svc.<cluster domain>").detail(
            "istiod builds the proxy's short host names from this domain: the injector passes --domain $(POD_NAMESPACE).svc.<cluster domain>",
        ),
    });

    let id = inputs.get("node.id").unwrap_or_default().to_string();
    let source = "<type>~<pod IP>~<pod name>.<namespace>~<domain>";
    rows.push(if id.contains('<') {
        row(
            g,
            "node.id",
            &id,
            source,
            Status::Unknown,
            "complete once the pod has an IP",
        )
    } else {
        let parsed = NodeId::parse(&id, None);
        if let Some(error) = parsed.errors.first() {
            row(
                g,
                "node.id",
                &id,
                source,
                Status::Error,
                "istiod refuses it",
            )
            .detail(format!("istiod refuses this node.id: {error}"))
        } else if let Some(oddity) = parsed.oddities.first() {
            row(
                g,
                "node.id",
                &id,
                source,
                Status::Warning,
                "not as pilot-agent writes it",
            )
            .detail(oddity.clone())
        } else {
            row(g, "node.id", &id, source, Status::Ok, "istiod accepts it")
        }
    });
}

fn bootstrap_rows(inputs: &BootstrapInputs, env: &Env, rows: &mut Vec<Ingredient>) {
    let g = Group::Bootstrap;
    let derived = |field: &str| {
        inputs
            .values
            .iter()
            .find(|d| d.field == field)
            .map(|d| (d.value.clone(), d.source.clone()))
            .unwrap_or_default()
    };
    let (cluster, source) = derived("node.cluster");
    rows.push(row(g, "node.cluster", cluster, source, Status::Info, ""));

    let (discovery, source) = derived("discovery address");
    let well_formed = |address: &str| {
        address
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
    };
    rows.push(if well_formed(&discovery) {
        row(g, "discovery address", &discovery, source, Status::Ok, "host:port")
    } else {
        row(g, "discovery address", &discovery, source, Status::Error, "not host:port").detail(
            "pilot-agent's XDS proxy dials this address: without a port it cannot connect to istiod (ProxyConfig discoveryAddress, e.g. istiod.istio-system.svc:15012)",
        )
    });

    let provider = env.get("PILOT_CERT_PROVIDER");
    let (ca, ca_source) = match env.get("CA_ADDR") {
        Some((value, source)) => (value, source),
        None => (
            discovery.clone(),
            "the discovery address (CA_ADDR is not set)".to_string(),
        ),
    };
    rows.push(if ca == discovery {
        row(g, "CA_ADDR", &ca, ca_source, Status::Ok, "the same istiod as the discovery address")
    } else if well_formed(&ca) {
        row(g, "CA_ADDR", &ca, ca_source, Status::Info, "certificates from another address than configuration")
    } else {
        row(g, "CA_ADDR", &ca, ca_source, Status::Error, "not host:port")
            .detail("pilot-agent sends its certificate requests to CA_ADDR: without a port it gets no certificate")
    });
    let (provider, provider_source) = provider.unwrap_or_else(|| {
        (
            "istiod".to_string(),
            "pilot-agent's default (PILOT_CERT_PROVIDER is not set)".to_string(),
        )
    });
    rows.push(row(
        g,
        "certificate provider",
        provider,
        provider_source,
        Status::Info,
        "",
    ));

    for field in [
        "admin port",
        "pilot-agent status port",
        "health listener port",
        "Prometheus listener port",
        "ADS cluster",
    ] {
        let (value, source) = derived(field);
        rows.push(row(g, field, value, source, Status::Info, ""));
    }
}

/// node.metadata from ISTIO_META_* (and ProxyConfig proxyMetadata): the rows, and the
/// (key, value) pairs to compare with the live bootstrap.
fn metadata_rows(
    env: &Env,
    config: &ProxyConfig,
    rows: &mut Vec<Ingredient>,
) -> Vec<(String, String)> {
    // (key, value, source); a repeated variable keeps its first place and its last value, as
    // Kubernetes does.
    let mut entries: Vec<(String, Option<String>, String)> = Vec::new();
    for (name, value, source) in &env.vars {
        let Some(key) = name.strip_prefix("ISTIO_META_").filter(|k| !k.is_empty()) else {
            continue;
        };
        let entry = (key.to_string(), value.clone(), source.clone());
        match entries.iter_mut().find(|(k, _, _)| k == key) {
            Some(slot) => *slot = entry,
            None => entries.push(entry),
        }
    }
    // proxyMetadata comes first in pilot-agent, so the environment wins over it.
    if let Some((Value::Object(meta), layer)) = config.fields.get("proxyMetadata") {
        for (name, value) in meta {
            let Some(key) = name.strip_prefix("ISTIO_META_").filter(|k| !k.is_empty()) else {
                continue;
            };
            if entries.iter().any(|(k, _, _)| k == key) {
                continue;
            }
            let value = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            entries.push((
                key.to_string(),
                Some(value),
                format!("proxyMetadata {name} in {layer}"),
            ));
        }
    }
    if !entries.iter().any(|(k, _, _)| k == "CLUSTER_ID") {
        entries.push((
            "CLUSTER_ID".to_string(),
            None,
            "ISTIO_META_CLUSTER_ID is not set".to_string(),
        ));
    }
    let g = Group::Metadata;
    let mut pairs = Vec::new();
    for (key, value, source) in entries {
        let name = format!("metadata.{key}");
        rows.push(match (&value, key.as_str()) {
            (Some(v), "CLUSTER_ID") if !v.trim().is_empty() => row(g, &name, v, source, Status::Ok, "set"),
            (_, "CLUSTER_ID") => row(g, &name, value.clone().unwrap_or_default(), source, Status::Warning, "not set").detail(
                "without ISTIO_META_CLUSTER_ID istiod assumes the proxy runs in istiod's own cluster. That is right in a single cluster; in a multi-cluster mesh istiod then checks the proxy's token against the wrong API server. The injector sets it from values.global.multiCluster.clusterName (default Kubernetes).",
            ),
            (Some(v), _) => row(g, &name, v, source, Status::Info, ""),
            (None, _) => row(g, &name, "", source, Status::Unknown, "value not known from the pod spec"),
        });
        if let Some(v) = value {
            pairs.push((key, v));
        }
    }
    pairs
}

fn credential_rows(
    pod: &Pod,
    container: &Container,
    namespace: &str,
    root_cert: &Lookup<ConfigMap>,
    rows: &mut Vec<Ingredient>,
) {
    let g = Group::Credentials;
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mount = |volume: &str| {
        container
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.name == volume)
            .map(|m| m.mount_path.clone())
    };

    // The projected token.
    let token = volumes.iter().find(|v| v.name == TOKEN_VOLUME);
    let sources: Vec<_> = token
        .and_then(|v| v.projected.as_ref())
        .and_then(|p| p.sources.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|s| s.service_account_token.as_ref())
        .collect();
    let ingredient = match (token, sources.first()) {
        (None, _) => row(g, "istio-token", "", "the pod has no istio-token volume", Status::Warning, "no projected token").detail(format!(
            "istio-proxy has no token with audience {TOKEN_AUDIENCE}: its certificate requests fail unless istiod accepts the default service-account token. The injector adds a projected volume istio-token (serviceAccountToken, audience {TOKEN_AUDIENCE})."
        )),
        (Some(_), None) => row(g, "istio-token", "", "volume istio-token", Status::Error, "not a serviceAccountToken").detail(format!(
            "the istio-token volume has no serviceAccountToken source: pilot-agent finds no token for istiod. It should be a projected serviceAccountToken with audience {TOKEN_AUDIENCE}."
        )),
        (Some(_), Some(t)) => {
            let audience = t.audience.clone().unwrap_or_default();
            let value = match t.expiration_seconds {
                Some(s) => format!("audience {audience:?}, expires after {s}s"),
                None => format!("audience {audience:?}"),
            };
            let mounted = mount(TOKEN_VOLUME);
            let source = match &mounted {
                Some(path) => format!("projected serviceAccountToken, volume istio-token mounted at {path}"),
                None => "projected serviceAccountToken, volume istio-token (not mounted in istio-proxy)".to_string(),
            };
            if audience != TOKEN_AUDIENCE {
                let shown = if audience.is_empty() { "the API server's default".to_string() } else { format!("{audience:?}") };
                row(g, "istio-token", value, source, Status::Error, format!("audience is not {TOKEN_AUDIENCE}")).detail(format!(
                    "the token's audience is {shown}, istiod expects {TOKEN_AUDIENCE} (TOKEN_AUDIENCES): it rejects the proxy's certificate requests and the proxy never gets a certificate. Fix the audience in the injection template (values.global.sds.token.aud) or istiod's TOKEN_AUDIENCES, then restart the pod."
                ))
            } else if mounted.is_none() {
                row(g, "istio-token", value, source, Status::Warning, "not mounted in istio-proxy").detail(
                    "istio-proxy does not mount the istio-token volume: pilot-agent reads its token from /var/run/secrets/tokens/istio-token",
                )
            } else {
                row(g, "istio-token", value, source, Status::Ok, format!("audience {TOKEN_AUDIENCE}"))
            }
        }
    };
    rows.push(ingredient);

    // The root certificate ConfigMap.
    let volume = volumes.iter().find(|v| {
        v.config_map
            .as_ref()
            .is_some_and(|c| c.name == ROOT_CERT_CONFIG_MAP)
    });
    let source = match volume {
        Some(v) => match mount(&v.name) {
            Some(path) => format!("volume {} mounted at {path}", v.name),
            None => format!("volume {} (not mounted in istio-proxy)", v.name),
        },
        None => "not mounted by the pod".to_string(),
    };
    let value = format!("ConfigMap {namespace}/{ROOT_CERT_CONFIG_MAP}");
    let name = "root certificate";
    rows.push(match root_cert {
        Lookup::Found(cm) => {
            let has_cert = cm
                .data
                .as_ref()
                .and_then(|d| d.get("root-cert.pem"))
                .is_some_and(|v| !v.trim().is_empty());
            if has_cert {
                row(g, name, value, source, Status::Ok, "present, with root-cert.pem")
            } else {
                row(g, name, value, source, Status::Error, "no root-cert.pem").detail(
                    "the ConfigMap has no root-cert.pem: the proxy cannot verify istiod's certificate. istiod writes it; check istiod's logs.",
                )
            }
        }
        Lookup::Missing => row(g, name, value, source, Status::Error, "ConfigMap not found").detail(format!(
            "{ROOT_CERT_CONFIG_MAP} does not exist in {namespace}: the kubelet cannot mount the proxy's istiod-ca-cert volume (the pod stays in ContainerCreating) and the proxy cannot verify istiod. istiod writes it into every namespace it watches: check that istiod runs and that its discoverySelectors include {namespace}."
        )),
        Lookup::Unknown(reason) => row(g, name, value, source, Status::Unknown, format!("could not be read: {reason}")),
    });
}

/// The bootstrapOverride row, and the problems of the override's bootstrap.
fn override_row(
    inputs: &BootstrapInputs,
    env: &Env,
    cm: &str,
    namespace: &str,
    lookup: &Lookup<ConfigMap>,
    rows: &mut Vec<Ingredient>,
) -> Vec<OverrideProblem> {
    let g = Group::CustomBootstrap;
    let name = "bootstrapOverride";
    let value = format!("ConfigMap {namespace}/{cm}, key {BOOTSTRAP_OVERRIDE_KEY}");
    let source = match env.get("ISTIO_BOOTSTRAP_OVERRIDE") {
        Some((path, _)) => {
            format!("annotation {BOOTSTRAP_OVERRIDE_ANNOTATION}; ISTIO_BOOTSTRAP_OVERRIDE={path}")
        }
        None => format!(
            "annotation {BOOTSTRAP_OVERRIDE_ANNOTATION} (but ISTIO_BOOTSTRAP_OVERRIDE is not set: the injector did not see the annotation, so Envoy does not use it)"
        ),
    };
    let text = match lookup {
        Lookup::Missing => {
            rows.push(row(g, name, value, source, Status::Error, "ConfigMap not found").detail(format!(
                "ConfigMap {cm} does not exist in {namespace}: the kubelet cannot mount the custom-bootstrap volume and the pod does not start. Create it (key {BOOTSTRAP_OVERRIDE_KEY}) or remove the annotation and restart the pod."
            )));
            return Vec::new();
        }
        Lookup::Unknown(reason) => {
            rows.push(row(
                g,
                name,
                value,
                source,
                Status::Unknown,
                format!("could not be read: {reason}"),
            ));
            return Vec::new();
        }
        Lookup::Found(config_map) => config_map
            .data
            .as_ref()
            .and_then(|d| d.get(BOOTSTRAP_OVERRIDE_KEY))
            .cloned(),
    };
    let Some(text) = text else {
        rows.push(row(g, name, value, source, Status::Warning, format!("no key {BOOTSTRAP_OVERRIDE_KEY}")).detail(format!(
            "ConfigMap {cm} has no {BOOTSTRAP_OVERRIDE_KEY}: pilot-agent finds no file at {BOOTSTRAP_OVERRIDE_PATH}, logs \"Failed to read bootstrap override\" and starts Envoy without the override"
        )));
        return Vec::new();
    };
    let problems = override_problems(&text, inputs);
    let errors = problems
        .iter()
        .filter(|p| p.status == Status::Error)
        .count();
    let warnings = problems
        .iter()
        .filter(|p| p.status == Status::Warning)
        .count();
    rows.push(if errors > 0 {
        row(g, name, value, source, Status::Error, format!("{errors} error(s), {warnings} warning(s)"))
            .detail("Envoy refuses the bootstrap merged from pilot-agent's and this override: istio-proxy crash-loops (the problems are listed below)")
    } else if warnings > 0 {
        row(g, name, value, source, Status::Warning, format!("{warnings} warning(s)"))
            .detail("Envoy starts, but part of the override has no effect (the problems are listed below)")
    } else {
        row(g, name, value, source, Status::Ok, "passes the bootstrap validate checks, merged over pilot-agent's bootstrap")
    });
    problems
}

#[cfg(test)]
mod tests {
    use super::super::overlay::*;
    use super::*;
    use crate::envoy::bootstrap::{self, Bootstrap, Format};
    use crate::formats::yaml;

    const GOLDEN: &str = "tests/fixtures/istio/injection-golden/native-sidecar.yaml.injected";

    fn pod(text: &str) -> Pod {
        let docs = yaml::parse_stream(text).unwrap();
        serde_json::from_value(docs[0].value.clone()).unwrap()
    }

    fn injected() -> Pod {
        let mut pod = pod(&std::fs::read_to_string(GOLDEN).unwrap());
        pod.metadata.namespace = Some("shop".into());
        pod.status = Some(k8s_openapi::api::core::v1::PodStatus {
            pod_ip: Some("10.0.0.5".into()),
            ..Default::default()
        });
        pod
    }

    /// `bootstrap explain -o json`, byte for byte.
    #[test]
    fn explain_json_is_pinned() {
        let e = explain_pod(&injected(), &around(), Err("not probed".into())).unwrap();
        insta::assert_snapshot!("explain_json", super::super::explain::json_text(&e));
    }

    #[test]
    fn istio_injected_pod() {
        let inputs = explain(&injected(), &[]).unwrap();
        assert!(inputs.native_sidecar);
        assert_eq!(
            inputs.get("node.id"),
            Some("sidecar~10.0.0.5~hello.shop~shop.svc.cluster.local")
        );
        // No app label: the canonical-name label counts as the app.
        assert_eq!(inputs.get("node.cluster"), Some("hello.shop"));
        assert_eq!(
            inputs.get("discovery address"),
            Some("istiod.istio-system.svc:15012")
        );
        assert_eq!(inputs.get("admin port"), Some("15000"));
        assert_eq!(inputs.get("health listener port"), Some("15021"));
        assert!(inputs.problems.is_empty(), "{:?}", inputs.problems);
        assert!(inputs.notes.is_empty(), "{:?}", inputs.notes);
        let id = &inputs.values[0];
        assert!(
            id.source
                .contains("--domain $(POD_NAMESPACE).svc.cluster.local")
        );
    }

    #[test]
    fn compares_with_a_real_bootstrap() {
        let inputs = explain(&injected(), &[]).unwrap();
        let good = serde_json::json!({
            "node": {"id": "sidecar~10.0.0.5~hello.shop~shop.svc.cluster.local", "cluster": "hello.shop"},
            "admin": {"address": {"socket_address": {"port_value": 15000}}},
            "dynamic_resources": {"ads_config": {"grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]}}
        });
        assert!(inputs.compare(&good).is_empty());
        let mut bad = good.clone();
        bad["node"]["cluster"] = "istio-proxy".into();
        bad["dynamic_resources"]["ads_config"]["grpc_services"][0]["envoy_grpc"]["cluster_name"] =
            "xds_grpc".into();
        let diffs = inputs.compare(&bad);
        assert_eq!(
            diffs,
            vec![
                (
                    "node.cluster",
                    "hello.shop".to_string(),
                    "istio-proxy".to_string()
                ),
                (
                    "ADS cluster",
                    "xds-grpc".to_string(),
                    "xds_grpc".to_string()
                ),
            ]
        );
    }

    #[test]
    fn proxy_config_layers_and_overrides() {
        let mut pod = injected();
        pod.metadata.annotations.get_or_insert_default().insert(
            PROXY_CONFIG_ANNOTATION.into(),
            "proxyAdminPort: 15100\nserviceCluster: payments\ncustomConfigFile: /etc/custom.json\n"
                .into(),
        );
        let inputs = explain(&pod, &[]).unwrap();
        assert_eq!(inputs.get("admin port"), Some("15100"));
        assert_eq!(inputs.get("node.cluster"), Some("payments"));
        assert!(inputs.values[1].source.contains(PROXY_CONFIG_ANNOTATION));
        assert!(
            inputs
                .notes
                .iter()
                .any(|n| n.contains("customConfigFile /etc/custom.json"))
        );
    }

    #[test]
    fn mesh_config_map_when_not_injected_yet() {
        let mut pod = injected();
        let spec = pod.spec.as_mut().unwrap();
        for c in spec.init_containers.iter_mut().flatten() {
            if let Some(env) = c.env.as_mut() {
                env.retain(|e| e.name != "PROXY_CONFIG");
            }
        }
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "istio", "namespace": "istio-system"},
            "data": {"mesh": "defaultConfig:\n  discoveryAddress: istiod-canary.istio-system.svc:15012\n"}
        }))
        .unwrap();
        let inputs = explain(&pod, &[cm]).unwrap();
        assert_eq!(
            inputs.get("discovery address"),
            Some("istiod-canary.istio-system.svc:15012")
        );
        let source = &inputs
            .values
            .iter()
            .find(|d| d.field == "discovery address")
            .unwrap()
            .source;
        assert!(source.contains("istio ConfigMap"), "{source}");
    }

    #[test]
    fn problems_and_notes() {
        let mut pod = injected();
        pod.status = None;
        let spec = pod.spec.as_mut().unwrap();
        spec.containers[0].ports.as_mut().unwrap()[0].container_port = 15021;
        let inputs = explain(&pod, &[]).unwrap();
        assert_eq!(
            inputs.get("node.id"),
            Some("sidecar~<pod IP>~hello.shop~shop.svc.cluster.local")
        );
        assert!(inputs.notes.iter().any(|n| n.contains("no IP yet")));
        assert_eq!(inputs.problems.len(), 1, "{:?}", inputs.problems);
        assert!(inputs.problems[0].contains("container \"hello\" listens on port 15021"));

        let mut gateway = injected();
        let spec = gateway.spec.as_mut().unwrap();
        let proxy = spec
            .init_containers
            .iter_mut()
            .flatten()
            .find(|c| c.name == "istio-proxy")
            .unwrap();
        proxy.args.as_mut().unwrap()[1] = "gateway".into();
        let inputs = explain(&gateway, &[]).unwrap();
        assert!(inputs.problems[0].contains("is not one istiod accepts"));
    }

    #[test]
    fn pods_without_pilot_agent() {
        let plain = pod(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: app\n    image: x\n",
        );
        assert_eq!(explain(&plain, &[]).unwrap_err(), NotMeshed::NoProxy);
        let other = pod(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: istio-proxy\n    image: envoy\n    args: [envoy, -c, /etc/envoy.yaml]\n",
        );
        assert!(matches!(
            explain(&other, &[]).unwrap_err(),
            NotMeshed::NotPilotAgent(_)
        ));
    }

    fn root_cert() -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "istio-ca-root-cert", "namespace": "shop"},
            "data": {"root-cert.pem": "-----BEGIN CERTIFICATE-----\n..."}
        }))
        .unwrap()
    }

    fn around() -> Surroundings {
        Surroundings {
            mesh_config_maps: Vec::new(),
            root_cert: Lookup::Found(root_cert()),
            bootstrap_override: None,
        }
    }

    fn proxy_mut(pod: &mut Pod) -> &mut Container {
        pod.spec
            .as_mut()
            .unwrap()
            .init_containers
            .iter_mut()
            .flatten()
            .find(|c| c.name == "istio-proxy")
            .unwrap()
    }

    fn ingredient<'a>(e: &'a Explanation, name: &str) -> &'a Ingredient {
        e.ingredients
            .iter()
            .find(|i| i.name == name)
            .unwrap_or_else(|| panic!("no ingredient {name}: {:#?}", e.ingredients))
    }

    /// The bootstrap pilot-agent would write for the golden pod, as /config_dump shows it.
    fn live_bootstrap(e: &Explanation) -> Value {
        serde_json::json!({
            "node": {
                "id": e.node_id,
                "cluster": "hello.shop",
                "metadata": {
                    "CLUSTER_ID": "Kubernetes",
                    "MESH_ID": "cluster.local",
                    "WORKLOAD_NAME": "hello",
                    "INTERCEPTION_MODE": "REDIRECT",
                    "APP_CONTAINERS": "hello",
                    "OWNER": "kubernetes://apis/v1/namespaces/default/pods/hello",
                    "POD_PORTS": "[{\"name\":\"http\",\"containerPort\":80}]"
                }
            },
            "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 15000}}},
            "dynamic_resources": {"ads_config": {"grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]}}
        })
    }

    #[test]
    fn every_ingredient_of_an_injected_pod() {
        let e = explain_pod(&injected(), &around(), Err("not probed".into())).unwrap();
        assert_eq!(
            e.node_id,
            "sidecar~10.0.0.5~hello.shop~shop.svc.cluster.local"
        );
        let parts: Vec<(&str, &str, &str, Status)> = e
            .ingredients
            .iter()
            .filter(|i| i.group == Group::NodeId)
            .map(|i| {
                (
                    i.name.as_str(),
                    i.value.as_str(),
                    i.source.as_str(),
                    i.status,
                )
            })
            .collect();
        assert_eq!(
            parts,
            [
                (
                    "proxy type",
                    "sidecar",
                    "`pilot-agent proxy sidecar`",
                    Status::Ok
                ),
                (
                    "pod IP",
                    "10.0.0.5",
                    "env INSTANCE_IP from status.podIP",
                    Status::Ok
                ),
                (
                    "pod name",
                    "hello",
                    "env POD_NAME from metadata.name",
                    Status::Ok
                ),
                (
                    "namespace",
                    "shop",
                    "env POD_NAMESPACE from metadata.namespace",
                    Status::Ok
                ),
                (
                    "domain",
                    "shop.svc.cluster.local",
                    "--domain $(POD_NAMESPACE).svc.cluster.local",
                    Status::Ok
                ),
                (
                    "node.id",
                    "sidecar~10.0.0.5~hello.shop~shop.svc.cluster.local",
                    "<type>~<pod IP>~<pod name>.<namespace>~<domain>",
                    Status::Ok
                ),
            ]
        );
        assert_eq!(
            ingredient(&e, "CA_ADDR").value,
            "istiod.istio-system.svc:15012"
        );
        assert_eq!(ingredient(&e, "CA_ADDR").status, Status::Ok);
        assert_eq!(ingredient(&e, "metadata.CLUSTER_ID").value, "Kubernetes");
        assert_eq!(ingredient(&e, "metadata.CLUSTER_ID").status, Status::Ok);
        // spec.nodeName is not set in the golden file: the value is not known.
        assert_eq!(ingredient(&e, "metadata.NODE_NAME").status, Status::Unknown);
        assert_eq!(ingredient(&e, "istio-token").status, Status::Ok);
        assert_eq!(
            ingredient(&e, "istio-token").source,
            "projected serviceAccountToken, volume istio-token mounted at /var/run/secrets/tokens"
        );
        assert_eq!(ingredient(&e, "root certificate").status, Status::Ok);
        assert!(!e.failed());
        assert!(!e.live.available);
        assert_eq!(e.live.reason.as_deref(), Some("not probed"));
    }

    #[test]
    fn a_missing_root_cert_a_wrong_audience_and_no_cluster_id() {
        let mut pod = injected();
        for volume in pod.spec.as_mut().unwrap().volumes.iter_mut().flatten() {
            if volume.name == TOKEN_VOLUME {
                let sources = volume.projected.as_mut().unwrap().sources.as_mut().unwrap();
                sources[0].service_account_token.as_mut().unwrap().audience =
                    Some("kubernetes.default.svc".into());
            }
        }
        proxy_mut(&mut pod)
            .env
            .as_mut()
            .unwrap()
            .retain(|v| v.name != "ISTIO_META_CLUSTER_ID");
        let around = Surroundings {
            root_cert: Lookup::Missing,
            ..around()
        };
        let e = explain_pod(&pod, &around, Err("not probed".into())).unwrap();
        let token = ingredient(&e, "istio-token");
        assert_eq!(token.status, Status::Error);
        assert!(token.detail.as_deref().unwrap().starts_with(
            "the token's audience is \"kubernetes.default.svc\", istiod expects istio-ca"
        ));
        let cert = ingredient(&e, "root certificate");
        assert_eq!(
            (cert.status, cert.check.as_str()),
            (Status::Error, "ConfigMap not found")
        );
        let cluster_id = ingredient(&e, "metadata.CLUSTER_ID");
        assert_eq!(cluster_id.status, Status::Warning);
        assert_eq!(cluster_id.source, "ISTIO_META_CLUSTER_ID is not set");
        assert!(e.failed());
        assert_eq!((e.count(Status::Error), e.count(Status::Warning)), (2, 1));

        let unknown = Surroundings {
            root_cert: Lookup::Unknown("forbidden".into()),
            ..around
        };
        let e = explain_pod(&pod, &unknown, Err("not probed".into())).unwrap();
        assert_eq!(ingredient(&e, "root certificate").status, Status::Unknown);
    }

    #[test]
    fn env_that_does_not_match_the_pod() {
        let mut pod = injected();
        let proxy = proxy_mut(&mut pod);
        for var in proxy.env.iter_mut().flatten() {
            match var.name.as_str() {
                "POD_NAMESPACE" => {
                    var.value_from = None;
                    var.value = Some("default".into());
                }
                "POD_NAME" => {
                    var.value_from = None;
                    var.value = Some("other".into());
                }
                _ => {}
            }
        }
        proxy.args.as_mut().unwrap()[3] = "default.svc.cluster.local".into();
        let e = explain_pod(&pod, &around(), Err("x".into())).unwrap();
        assert_eq!(
            e.node_id,
            "sidecar~10.0.0.5~other.default~default.svc.cluster.local"
        );
        assert_eq!(ingredient(&e, "namespace").status, Status::Error);
        assert_eq!(
            ingredient(&e, "namespace").check,
            "not the pod's namespace shop"
        );
        assert_eq!(ingredient(&e, "pod name").status, Status::Warning);
        // The domain agrees with POD_NAMESPACE, which is what istiod compares it with.
        assert_eq!(ingredient(&e, "domain").status, Status::Ok);

        let mut pod = injected();
        proxy_mut(&mut pod)
            .env
            .as_mut()
            .unwrap()
            .retain(|v| v.name != "POD_NAME");
        let e = explain_pod(&pod, &around(), Err("x".into())).unwrap();
        assert_eq!(e.node_id, "sidecar~10.0.0.5~.shop~shop.svc.cluster.local");
        assert_eq!(ingredient(&e, "pod name").status, Status::Error);
        assert_eq!(ingredient(&e, "node.id").status, Status::Warning);
    }

    #[test]
    fn compared_with_the_live_bootstrap() {
        let e = explain_pod(&injected(), &around(), Err("x".into())).unwrap();
        let live = live_bootstrap(&e);
        let e = explain_pod(
            &injected(),
            &around(),
            Ok(("captures".into(), live.clone())),
        )
        .unwrap();
        assert!(e.live.available);
        assert_eq!(e.live.via.as_deref(), Some("captures"));
        let field = |name: &str| e.live.fields.iter().find(|f| f.field == name).unwrap();
        assert_eq!(field("node.id").matches, Some(true));
        assert_eq!(field("node.cluster").matches, Some(true));
        assert_eq!(field("admin port").matches, Some(true));
        // Whitespace in a JSON value is not a difference.
        assert_eq!(field("metadata.POD_PORTS").matches, Some(true));
        assert_eq!(e.live.mismatches(), 0);

        let mut other = live;
        other["node"]["id"] = "sidecar~10.0.0.9~hello.shop~shop.svc.cluster.local".into();
        other["node"]["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("CLUSTER_ID");
        let e = explain_pod(&injected(), &around(), Ok(("captures".into(), other))).unwrap();
        let field = |name: &str| e.live.fields.iter().find(|f| f.field == name).unwrap();
        assert_eq!(field("node.id").matches, Some(false));
        assert_eq!(field("metadata.CLUSTER_ID").live, "");
        assert_eq!(e.live.mismatches(), 2);
        // Differences with the running proxy are shown, not failed.
        assert!(!e.failed());
    }

    #[test]
    fn the_bootstrap_of_a_config_dump() {
        let dump: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_config_dump_bootstrap_mask.json"
        )))
        .unwrap();
        let bootstrap = bootstrap_of_config_dump(&dump).unwrap();
        assert_eq!(
            bootstrap.pointer("/node/id").and_then(Value::as_str),
            Some("sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local")
        );
        assert!(bootstrap_of_config_dump(&serde_json::json!({"configs": []})).is_none());
    }

    #[test]
    fn pilot_agents_bootstrap_passes_the_checks() {
        let inputs = explain(&injected(), &[]).unwrap();
        let base = pilot_agent_bootstrap(&inputs);
        let problems = bootstrap::check(&Bootstrap {
            value: base,
            lines: None,
            format: Format::Json,
        });
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn bootstrap_override_problems() {
        let inputs = explain(&injected(), &[]).unwrap();
        // A tracing cluster: the usual override, no problem.
        let fine = "static_resources:\n  clusters:\n  - name: zipkin\n    type: STRICT_DNS\n    connect_timeout: 1s\n    load_assignment:\n      cluster_name: zipkin\n      endpoints:\n      - lb_endpoints:\n        - endpoint: {address: {socket_address: {address: zipkin.istio-system, port_value: 9411}}}\n";
        assert_eq!(override_problems(fine, &inputs), []);
        // Envoy appends the override's clusters: a second xds-grpc is a duplicate, found at its line.
        let duplicate = "{\n  \"staticResources\": {\n    \"clusters\": [\n      {\"name\": \"zipkin\", \"type\": \"STATIC\"},\n      {\"name\": \"xds-grpc\", \"type\": \"STATIC\"}\n    ]\n  }\n}\n";
        let problems = override_problems(duplicate, &inputs);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].code, "MD0302");
        assert_eq!(problems[0].status, Status::Error);
        assert_eq!(problems[0].path, "staticResources.clusters[1].name");
        assert_eq!(problems[0].line, Some(5));
        // pilot-agent runs Envoy with --allow-unknown-static-fields: an unknown field is ignored.
        let unknown = "admin:\n  bogus: 1\n";
        let problems = override_problems(unknown, &inputs);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(
            (problems[0].code, problems[0].status),
            ("MD0308", Status::Warning)
        );
        assert_eq!(problems[0].line, Some(2));
        assert!(
            problems[0]
                .message
                .contains("--allow-unknown-static-fields")
        );
        // A listener on a port the sidecar uses.
        let port = "static_resources:\n  listeners:\n  - name: mine\n    address: {socket_address: {address: 0.0.0.0, port_value: 15001}}\n";
        let problems = override_problems(port, &inputs);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(
            (problems[0].code, problems[0].status),
            ("MD0306", Status::Error)
        );
        assert_eq!(problems[0].line, Some(4));
        // Unreadable: pilot-agent skips the override.
        let broken = "static_resources: [\n";
        let problems = override_problems(broken, &inputs);
        assert_eq!(
            (problems[0].code, problems[0].status),
            ("MD0307", Status::Warning)
        );
        assert!(
            problems[0]
                .message
                .contains("starts Envoy without the override")
        );
    }

    #[test]
    fn the_bootstrap_override_row() {
        let mut pod = injected();
        pod.metadata
            .annotations
            .get_or_insert_default()
            .insert(BOOTSTRAP_OVERRIDE_ANNOTATION.into(), "custom".into());
        let cm = |data: serde_json::Value| -> ConfigMap {
            serde_json::from_value(
                serde_json::json!({"metadata": {"name": "custom"}, "data": data}),
            )
            .unwrap()
        };
        let with = |lookup: Lookup<ConfigMap>| Surroundings {
            bootstrap_override: Some(lookup),
            ..around()
        };
        let e = explain_pod(&pod, &with(Lookup::Missing), Err("x".into())).unwrap();
        let row = ingredient(&e, "bootstrapOverride");
        assert_eq!(
            (row.status, row.check.as_str()),
            (Status::Error, "ConfigMap not found")
        );
        assert!(row.source.contains("ISTIO_BOOTSTRAP_OVERRIDE is not set"));

        let e = explain_pod(
            &pod,
            &with(Lookup::Found(cm(serde_json::json!({})))),
            Err("x".into()),
        )
        .unwrap();
        assert_eq!(ingredient(&e, "bootstrapOverride").status, Status::Warning);

        let bad = cm(
            serde_json::json!({BOOTSTRAP_OVERRIDE_KEY: "static_resources:\n  clusters:\n  - name: agent\n"}),
        );
        let e = explain_pod(&pod, &with(Lookup::Found(bad)), Err("x".into())).unwrap();
        let row = ingredient(&e, "bootstrapOverride");
        assert_eq!(
            (row.status, row.check.as_str()),
            (Status::Error, "1 error(s), 0 warning(s)")
        );
        assert_eq!(e.override_problems[0].code, "MD0302");
        assert_eq!(e.override_problems[0].line, Some(3));
        assert!(e.failed());
    }
}
