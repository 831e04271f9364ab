//! The Envoy admin API (port 15000) and the Istio health port (15021), pure: the answers' types
//! and their parsers, functions from a response body to a struct, tested on outputs captured
//! from a real Envoy (tests/fixtures/envoy/). The client that fetches them is `probe::admin`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// Envoy's admin port in an Istio sidecar.
pub const ADMIN_PORT: u16 = 15000;
/// The Istio health port: Envoy's `readiness_listener`, which asks pilot-agent.
pub const HEALTH_PORT: u16 = 15021;

/// The ADS cluster name Istio's bootstrap uses.
pub const ISTIO_XDS_CLUSTER: &str = "xds-grpc";

/// `/stats` filter: only the counters the diagnosis reads (a full /stats is ~700 entries).
pub const STATS_FILTER: &str = r"^(control_plane\.|cluster_manager\.(cds\.|active_clusters|warming_clusters)|listener_manager\.(lds\.|workers_started|total_listeners_)|server\.(state|live)$)";

/// `/config_dump` mask: the bootstrap's node and the clusters ADS depends on, not the whole
/// dump (which carries every dynamic listener and cluster and can be many megabytes).
pub const BOOTSTRAP_MASK: &str = "bootstrap.node.id,bootstrap.node.cluster,bootstrap.node.metadata,bootstrap.static_resources.clusters,bootstrap.dynamic_resources";

/// Envoy's server state (`/server_info` `state`, `/ready` body).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum ServerState {
    Live,
    Draining,
    /// Envoy started but has not begun initialising (for a sidecar: waiting for the first
    /// CDS/LDS answer from istiod).
    PreInitializing,
    /// Initialising: the first configuration is being applied (clusters warming).
    Initializing,
    Other(String),
}

impl ServerState {
    pub fn parse(text: &str) -> ServerState {
        match text.trim() {
            "LIVE" => ServerState::Live,
            "DRAINING" => ServerState::Draining,
            "PRE_INITIALIZING" => ServerState::PreInitializing,
            "INITIALIZING" => ServerState::Initializing,
            other => ServerState::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            ServerState::Live => "LIVE",
            ServerState::Draining => "DRAINING",
            ServerState::PreInitializing => "PRE_INITIALIZING",
            ServerState::Initializing => "INITIALIZING",
            ServerState::Other(s) => s,
        }
    }

    /// True while Envoy has not finished applying its first configuration.
    pub fn is_initializing(&self) -> bool {
        matches!(
            self,
            ServerState::PreInitializing | ServerState::Initializing
        )
    }
}

impl From<ServerState> for String {
    fn from(state: ServerState) -> String {
        state.as_str().to_string()
    }
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an admin body could not be read as.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{endpoint}: {message}")]
pub struct ParseError {
    pub endpoint: &'static str,
    pub message: String,
}

fn parse_error(endpoint: &'static str, message: impl Into<String>) -> ParseError {
    ParseError {
        endpoint,
        message: message.into(),
    }
}

fn json(endpoint: &'static str, body: &str) -> Result<Value, ParseError> {
    serde_json::from_str(body).map_err(|e| parse_error(endpoint, format!("not JSON: {e}")))
}

/// `/server_info`: version, state, uptime and the node Envoy runs as.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// e.g. `9e55.../1.40.0/Clean/RELEASE/BoringSSL`
    pub version: String,
    pub state: ServerState,
    /// Seconds since this Envoy process started (`uptime_current_epoch`).
    pub uptime_seconds: Option<u64>,
    pub node_id: Option<String>,
}

impl ServerInfo {
    /// The release number out of the version string (`1.40.0`).
    pub fn release(&self) -> Option<&str> {
        self.version.split('/').nth(1).filter(|s| !s.is_empty())
    }
}

/// Parses Envoy's duration text (`17s`, protobuf JSON) into whole seconds.
fn seconds(text: &str) -> Option<u64> {
    let number = text.trim().strip_suffix('s')?;
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value as u64)
}

pub fn parse_server_info(body: &str) -> Result<ServerInfo, ParseError> {
    const EP: &str = "/server_info";
    let v = json(EP, body)?;
    let state = v
        .get("state")
        .and_then(Value::as_str)
        .ok_or_else(|| parse_error(EP, "no \"state\" field"))?;
    Ok(ServerInfo {
        version: v
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        state: ServerState::parse(state),
        uptime_seconds: v
            .get("uptime_current_epoch")
            .and_then(Value::as_str)
            .and_then(seconds),
        node_id: v
            .pointer("/node/id")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// `/ready` (200 with `LIVE`, otherwise 503 with the state), or 15021 `/healthz/ready`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    pub status: u16,
    /// The body, trimmed and cut to 200 characters (and `…`).
    pub body: String,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.status == 200
    }

    /// For `/ready`: the state Envoy reports in the body.
    pub fn state(&self) -> ServerState {
        ServerState::parse(&self.body)
    }
}

/// A `/ready` or `/healthz/ready` answer: its HTTP status and body.
pub fn parse_readiness(status: u16, text: &str) -> Readiness {
    Readiness {
        status,
        body: crate::formats::text::truncate(text.trim(), 200),
    }
}

/// One xDS type's update counters (`cluster_manager.cds.*`, `listener_manager.lds.*`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateCounters {
    pub attempt: u64,
    pub success: u64,
    /// Network failures: the stream to the management server failed or closed.
    pub failure: u64,
    /// Configuration the proxy refused (invalid or inconsistent).
    pub rejected: u64,
    pub init_fetch_timeout: u64,
    /// The version of the last accepted update ("" = never).
    pub version_text: Option<String>,
}

/// The stats the diagnosis reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct XdsStats {
    /// `control_plane.connected_state`: 1 from the moment Envoy *starts* an ADS stream (before
    /// the connection is made) until the stream closes, 0 otherwise; read it through
    /// [`XdsStats::stream`]. `None` when Envoy has no ADS at all (a static bootstrap) or when the
    /// stat is left out (Istio's inclusion list).
    pub connected_state: Option<u64>,
    pub cds: Option<UpdateCounters>,
    pub lds: Option<UpdateCounters>,
    pub workers_started: Option<u64>,
    /// `server.state` (refreshed only on the 5 s stats flush: prefer `/server_info`).
    pub server_state: Option<u64>,
}

/// The ADS stream to istiod, as `control_plane.connected_state` and the update counters tell
/// it together.
///
/// Envoy sets the gauge to 1 when it starts a stream, before the connection is made, and back to
/// 0 when the stream is refused or closes (`GrpcStream::establishNewStream`). A proxy that cannot
/// reach istiod reads 1 for a moment at each retry, so 1 alone does not mean "connected": the
/// counters tell the rest (each failed or closed stream adds one `update_failure` to every
/// subscription; each accepted update one `update_success`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdsStream {
    /// Gauge 0: no stream.
    Closed,
    /// Gauge 1, no stream ever failed and configuration came: connected.
    Connected,
    /// Gauge 1, no stream ever failed, nothing accepted yet: the first stream is being made or
    /// waits for istiod's first answer.
    Opening,
    /// Gauge 1 after `failures` failed streams: a new one started. With configuration accepted
    /// before (`applied`), the proxy is connected again or reconnecting; without, it retries.
    Retrying { failures: u64, applied: bool },
}

impl XdsStream {
    /// `Some(true)` when connected for sure, `Some(false)` when not, `None` when a stream has
    /// started but the stats cannot tell whether it is up.
    pub fn connected(self) -> Option<bool> {
        match self {
            XdsStream::Closed => Some(false),
            XdsStream::Connected => Some(true),
            XdsStream::Opening | XdsStream::Retrying { .. } => None,
        }
    }

    /// What the stream's state means, in a few words.
    pub fn describe(self) -> String {
        match self {
            XdsStream::Closed => "not connected to istiod".to_string(),
            XdsStream::Connected => "connected to istiod".to_string(),
            XdsStream::Opening => {
                "an xDS stream to istiod started, nothing received from it yet".to_string()
            }
            XdsStream::Retrying {
                failures,
                applied: false,
            } => format!(
                "not connected to istiod yet: {failures} xDS stream(s) failed, a new one started"
            ),
            XdsStream::Retrying {
                failures,
                applied: true,
            } => format!(
                "connected to istiod or reconnecting: {failures} xDS stream(s) failed before, a new one started"
            ),
        }
    }
}

impl XdsStats {
    /// The ADS stream's state; `None` when `control_plane.connected_state` is not in the stats.
    pub fn stream(&self) -> Option<XdsStream> {
        let state = self.connected_state?;
        if state != 1 {
            return Some(XdsStream::Closed);
        }
        let counters = [self.cds.as_ref(), self.lds.as_ref()];
        let failures = counters
            .iter()
            .flatten()
            .map(|c| c.failure)
            .max()
            .unwrap_or(0);
        let applied = counters.iter().flatten().any(|c| c.success > 0);
        Some(match (failures, applied) {
            (0, true) => XdsStream::Connected,
            (0, false) => XdsStream::Opening,
            (failures, applied) => XdsStream::Retrying { failures, applied },
        })
    }

    /// Connected for sure (`Some(true)`), not connected (`Some(false)`), or not known.
    pub fn connected(&self) -> Option<bool> {
        self.stream().and_then(XdsStream::connected)
    }

    pub fn rejected(&self) -> u64 {
        self.cds.as_ref().map_or(0, |c| c.rejected) + self.lds.as_ref().map_or(0, |c| c.rejected)
    }
}

/// A stat value: counters and gauges are numbers, text readouts strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatValue {
    Number(u64),
    Text(String),
}

/// Parses `/stats` in JSON (`format=json`) or in the text format (`name: value` lines) into a map.
/// Histograms are skipped.
pub fn parse_stats_map(body: &str) -> Result<BTreeMap<String, StatValue>, ParseError> {
    const EP: &str = "/stats";
    let mut map = BTreeMap::new();
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        let v = json(EP, body)?;
        let stats = v
            .get("stats")
            .and_then(Value::as_array)
            .ok_or_else(|| parse_error(EP, "no \"stats\" array"))?;
        for stat in stats {
            let (Some(name), Some(value)) =
                (stat.get("name").and_then(Value::as_str), stat.get("value"))
            else {
                continue;
            };
            let value = match value {
                Value::Number(n) => match n.as_u64() {
                    Some(n) => StatValue::Number(n),
                    None => continue,
                },
                Value::String(s) => StatValue::Text(s.clone()),
                _ => continue,
            };
            map.insert(name.to_string(), value);
        }
        return Ok(map);
    }
    for line in body.lines() {
        let Some((name, value)) = line.split_once(": ") else {
            continue;
        };
        let value = value.trim();
        let value = if let Some(text) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            StatValue::Text(text.to_string())
        } else if let Ok(n) = value.parse::<u64>() {
            StatValue::Number(n)
        } else {
            continue; // histograms: "P0(...)" or "No recorded values"
        };
        map.insert(name.trim().to_string(), value);
    }
    if map.is_empty() && !body.trim().is_empty() {
        return Err(parse_error(EP, "no stats in the response"));
    }
    Ok(map)
}

pub fn parse_stats(body: &str) -> Result<XdsStats, ParseError> {
    let map = parse_stats_map(body)?;
    let number = |name: &str| match map.get(name) {
        Some(StatValue::Number(n)) => Some(*n),
        _ => None,
    };
    let counters = |prefix: &str| {
        let attempt = number(&format!("{prefix}.update_attempt"))?;
        Some(UpdateCounters {
            attempt,
            success: number(&format!("{prefix}.update_success")).unwrap_or(0),
            failure: number(&format!("{prefix}.update_failure")).unwrap_or(0),
            rejected: number(&format!("{prefix}.update_rejected")).unwrap_or(0),
            init_fetch_timeout: number(&format!("{prefix}.init_fetch_timeout")).unwrap_or(0),
            version_text: match map.get(&format!("{prefix}.version_text")) {
                Some(StatValue::Text(t)) => Some(t.clone()),
                _ => None,
            },
        })
    };
    Ok(XdsStats {
        connected_state: number("control_plane.connected_state"),
        cds: counters("cluster_manager.cds"),
        lds: counters("listener_manager.lds"),
        workers_started: number("listener_manager.workers_started"),
        server_state: number("server.state"),
    })
}

/// A static cluster of the bootstrap and where it points.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticCluster {
    pub name: String,
    /// `host:port` or `unix:path` of each endpoint.
    pub addresses: Vec<String>,
}

/// The bootstrap pilot-agent wrote, as Envoy loaded it (`/config_dump`, bootstrap section).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapInfo {
    /// `sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local`
    pub node_id: Option<String>,
    /// `web.shop`
    pub node_cluster: Option<String>,
    /// Istio's node metadata (NAMESPACE, NAME, ISTIO_VERSION, CLUSTER_ID, MESH_ID, LABELS...).
    pub metadata: BTreeMap<String, Value>,
    pub static_clusters: Vec<StaticCluster>,
    /// The cluster ADS (`dynamic_resources.ads_config`) talks to; `None` without ADS.
    pub ads_cluster: Option<String>,
}

impl BootstrapInfo {
    /// A node metadata field as text (`ISTIO_VERSION`, `NAMESPACE`...).
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(Value::as_str)
    }

    pub fn static_cluster(&self, name: &str) -> Option<&StaticCluster> {
        self.static_clusters.iter().find(|c| c.name == name)
    }

    /// The unix socket the ADS cluster points at: pilot-agent's local xDS proxy
    /// (`./etc/istio/proxy/XDS`), which forwards the stream to istiod.
    pub fn ads_socket(&self) -> Option<&str> {
        let cluster = self.static_cluster(self.ads_cluster.as_deref()?)?;
        cluster
            .addresses
            .iter()
            .find_map(|a| a.strip_prefix("unix:"))
    }

    /// The unix socket of Istio's `sds-grpc` cluster: pilot-agent's SDS server.
    pub fn sds_socket(&self) -> Option<&str> {
        let cluster = self.static_cluster(SDS_CLUSTER)?;
        cluster
            .addresses
            .iter()
            .find_map(|a| a.strip_prefix("unix:"))
    }
}

/// The static cluster through which Istio's bootstrap fetches certificates (SDS).
pub const SDS_CLUSTER: &str = "sds-grpc";

/// How the proxy gets its configuration, from `/stats` and the bootstrap: the stream's state when
/// `control_plane.connected_state` is there; Istio's bootstrap leaves `control_plane.*` out of
/// Envoy's stats (its inclusion list), so then the bootstrap's ADS cluster tells.
pub fn xds_source(stats: &XdsStats, bootstrap: Option<&BootstrapInfo>) -> String {
    match (stats.stream(), bootstrap) {
        (Some(stream), _) => stream.describe(),
        (None, Some(b)) => match (&b.ads_cluster, b.ads_socket()) {
            (Some(cluster), Some(socket)) => format!(
                "ADS via pilot-agent's local xDS proxy to istiod ({cluster} -> unix:{socket}); the stream's state is not in Envoy's stats"
            ),
            (Some(cluster), None) => {
                format!("ADS through cluster {cluster}; the stream's state is not in Envoy's stats")
            }
            (None, _) => "no ADS (static configuration)".to_string(),
        },
        (None, None) => {
            "ADS state unknown: not in Envoy's stats, and the bootstrap was not read".to_string()
        }
    }
}

fn address_text(address: &Value) -> Option<String> {
    if let Some(sock) = address.get("socket_address") {
        let host = sock.get("address").and_then(Value::as_str).unwrap_or("");
        let port = sock
            .get("port_value")
            .and_then(|p| p.as_u64().or_else(|| p.as_str()?.parse().ok()));
        return Some(match port {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        });
    }
    address
        .pointer("/pipe/path")
        .and_then(Value::as_str)
        .map(|path| format!("unix:{path}"))
}

/// Parses the bootstrap out of a whole `/config_dump` or one filtered with [`BOOTSTRAP_MASK`].
pub fn parse_bootstrap(body: &str) -> Result<BootstrapInfo, ParseError> {
    const EP: &str = "/config_dump";
    let v = json(EP, body)?;
    let configs = v
        .get("configs")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error(EP, "no \"configs\" array"))?;
    let bootstrap = configs
        .iter()
        .find(|c| {
            c.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with(".BootstrapConfigDump"))
                || c.get("bootstrap").is_some()
        })
        .and_then(|c| c.get("bootstrap"))
        .ok_or_else(|| parse_error(EP, "no bootstrap section"))?;
    let text = |ptr: &str| {
        bootstrap
            .pointer(ptr)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let metadata = bootstrap
        .pointer("/node/metadata")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let static_clusters = bootstrap
        .pointer("/static_resources/clusters")
        .and_then(Value::as_array)
        .map(|clusters| {
            clusters
                .iter()
                .map(|c| StaticCluster {
                    name: c
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    addresses: c
                        .pointer("/load_assignment/endpoints")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .flat_map(|e| {
                            e.get("lb_endpoints")
                                .and_then(Value::as_array)
                                .into_iter()
                                .flatten()
                        })
                        .filter_map(|lb| lb.pointer("/endpoint/address").and_then(address_text))
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    let ads_cluster = bootstrap
        .pointer("/dynamic_resources/ads_config/grpc_services")
        .and_then(Value::as_array)
        .and_then(|services| {
            services.iter().find_map(|s| {
                s.pointer("/envoy_grpc/cluster_name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        });
    Ok(BootstrapInfo {
        node_id: text("/node/id"),
        node_cluster: text("/node/cluster"),
        metadata,
        static_clusters,
        ads_cluster,
    })
}

/// Connection counters of one upstream host.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostStats {
    pub address: String,
    pub cx_total: u64,
    pub cx_connect_fail: u64,
    pub cx_active: u64,
    pub rq_total: u64,
    pub rq_success: u64,
    pub rq_error: u64,
    /// `eds_health_status`, e.g. HEALTHY.
    pub health: Option<String>,
    /// `failed_outlier_check`: ejected by outlier detection.
    pub ejected: bool,
}

/// One cluster of `/clusters?format=json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    pub name: String,
    pub added_via_api: bool,
    pub hosts: Vec<HostStats>,
}

impl ClusterStatus {
    pub fn connect_failures(&self) -> u64 {
        self.hosts.iter().map(|h| h.cx_connect_fail).sum()
    }
    pub fn connections(&self) -> u64 {
        self.hosts.iter().map(|h| h.cx_total).sum()
    }
    pub fn active_connections(&self) -> u64 {
        self.hosts.iter().map(|h| h.cx_active).sum()
    }
}

fn stat_number(v: &Value) -> u64 {
    match v {
        Value::Number(n) => n.as_u64().unwrap_or(0),
        Value::String(s) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

/// Parses `/clusters?format=json`. Zero counters carry no `value` in Envoy's JSON.
pub fn parse_clusters(body: &str) -> Result<Vec<ClusterStatus>, ParseError> {
    const EP: &str = "/clusters";
    let v = json(EP, body)?;
    let clusters = v
        .get("cluster_statuses")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error(EP, "no \"cluster_statuses\" array"))?;
    Ok(clusters
        .iter()
        .map(|c| ClusterStatus {
            name: c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            added_via_api: c
                .get("added_via_api")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            hosts: c
                .get("host_statuses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|h| {
                    let mut host = HostStats {
                        address: h.get("address").and_then(address_text).unwrap_or_default(),
                        health: h
                            .pointer("/health_status/eds_health_status")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        ejected: h
                            .pointer("/health_status/failed_outlier_check")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        ..HostStats::default()
                    };
                    for stat in h
                        .get("stats")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let value = stat.get("value").map_or(0, stat_number);
                        match stat.get("name").and_then(Value::as_str).unwrap_or("") {
                            "cx_total" => host.cx_total = value,
                            "cx_connect_fail" => host.cx_connect_fail = value,
                            "cx_active" => host.cx_active = value,
                            "rq_total" => host.rq_total = value,
                            "rq_success" => host.rq_success = value,
                            "rq_error" => host.rq_error = value,
                            _ => {}
                        }
                    }
                    host
                })
                .collect(),
        })
        .collect())
}

/// One certificate Envoy holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CertInfo {
    /// `ca` (a trust anchor) or `chain` (the workload's own certificate).
    pub role: CertRole,
    /// The file, or the SDS secret name (`default`, `ROOTCA`).
    pub path: String,
    pub serial_number: String,
    pub subject_alt_names: Vec<String>,
    pub valid_from: Option<jiff::Timestamp>,
    pub expiration_time: Option<jiff::Timestamp>,
    /// Envoy's own count; 0 both for "expired" and for "less than a day left".
    pub days_until_expiration: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CertRole {
    Ca,
    Chain,
}

impl CertInfo {
    /// Where the certificate comes from: its file, or SDS when Envoy shows `<inline>` (a secret
    /// pushed over SDS has no file) and the bootstrap has Istio's SDS cluster.
    pub fn source(&self, bootstrap: Option<&BootstrapInfo>) -> String {
        if self.path != "<inline>" {
            return self.path.clone();
        }
        match bootstrap.and_then(BootstrapInfo::sds_socket) {
            Some(socket) => format!("from SDS (pilot-agent, {SDS_CLUSTER} -> unix:{socket})"),
            None => "inline (from SDS or the configuration; the bootstrap has no SDS socket)"
                .to_string(),
        }
    }

    /// The fraction of the certificate's lifetime left at `now` (negative once expired).
    pub fn remaining_fraction(&self, now: jiff::Timestamp) -> Option<f64> {
        let from = self.valid_from?.as_second();
        let to = self.expiration_time?.as_second();
        if to <= from {
            return None;
        }
        Some((to - now.as_second()) as f64 / (to - from) as f64)
    }
}

/// Parses `/certs`.
pub fn parse_certs(body: &str) -> Result<Vec<CertInfo>, ParseError> {
    const EP: &str = "/certs";
    let v = json(EP, body)?;
    let groups = v
        .get("certificates")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error(EP, "no \"certificates\" array"))?;
    let mut out = Vec::new();
    for group in groups {
        for (key, role) in [("ca_cert", CertRole::Ca), ("cert_chain", CertRole::Chain)] {
            for cert in group
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let time = |field: &str| {
                    cert.get(field)
                        .and_then(Value::as_str)
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                };
                let info = CertInfo {
                    role,
                    path: cert
                        .get("path")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    serial_number: cert
                        .get("serial_number")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    subject_alt_names: cert
                        .get("subject_alt_names")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|san| {
                            san.as_object()?
                                .values()
                                .find_map(Value::as_str)
                                .map(str::to_string)
                        })
                        .collect(),
                    valid_from: time("valid_from"),
                    expiration_time: time("expiration_time"),
                    days_until_expiration: cert.get("days_until_expiration").map(stat_number),
                };
                // The same CA appears once per TLS context: keep one.
                if !out.iter().any(|c: &CertInfo| {
                    c.role == info.role
                        && c.serial_number == info.serial_number
                        && c.path == info.path
                }) {
                    out.push(info);
                }
            }
        }
    }
    Ok(out)
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass through).
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A_SERVER_INFO: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/envoy/A_server_info.json"
    ));
    const C_SERVER_INFO: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/envoy/C_server_info.json"
    ));

    #[test]
    fn server_info_waiting_for_istiod() {
        let info = parse_server_info(A_SERVER_INFO).unwrap();
        assert_eq!(info.state, ServerState::PreInitializing);
        assert!(info.state.is_initializing());
        assert_eq!(info.uptime_seconds, Some(17));
        assert_eq!(info.release(), Some("1.40.0"));
        assert_eq!(
            info.node_id.as_deref(),
            Some("sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local")
        );
    }

    #[test]
    fn server_info_live() {
        let info = parse_server_info(C_SERVER_INFO).unwrap();
        assert_eq!(info.state, ServerState::Live);
        assert_eq!(info.uptime_seconds, Some(7));
    }

    #[test]
    fn server_info_rejects_other_json() {
        let err = parse_server_info(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_certs.json"
        )))
        .unwrap_err();
        assert!(err.to_string().contains("state"), "{err}");
        assert!(parse_server_info("PRE_INITIALIZING").is_err());
    }

    #[test]
    fn ready_bodies() {
        let a = parse_readiness(
            503,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_ready.txt"
            )),
        );
        assert!(!a.is_ready());
        assert_eq!(a.state(), ServerState::PreInitializing);
        let c = parse_readiness(
            200,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_ready.txt"
            )),
        );
        assert!(c.is_ready());
        assert_eq!(c.state(), ServerState::Live);
        let health = parse_readiness(
            200,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_17021__healthz_ready.txt"
            )),
        );
        assert_eq!(health.body, "ok");
    }

    #[test]
    fn stats_json_waiting_for_istiod() {
        let stats = parse_stats(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_stats.json"
        )))
        .unwrap();
        assert_eq!(stats.connected_state, Some(0));
        assert_eq!(stats.connected(), Some(false));
        let cds = stats.cds.clone().unwrap();
        assert_eq!(
            (cds.attempt, cds.success, cds.failure, cds.rejected),
            (8, 0, 7, 0)
        );
        assert_eq!(cds.version_text.as_deref(), Some(""));
        let lds = stats.lds.clone().unwrap();
        assert_eq!((lds.attempt, lds.success), (0, 0));
        assert_eq!(stats.workers_started, Some(0));
        assert_eq!(stats.rejected(), 0);
    }

    #[test]
    fn connected_state_1_is_read_with_the_update_counters() {
        // The capture of a proxy whose istiod is unreachable: gauge 0, CDS failed 7 times.
        let waiting = parse_stats(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_stats.json"
        )))
        .unwrap();
        assert_eq!(waiting.stream(), Some(XdsStream::Closed));
        assert_eq!(xds_source(&waiting, None), "not connected to istiod");
        // The same proxy read while Envoy starts its next attempt: the gauge is 1 before the
        // connection is refused. Not connected, and not said to be.
        let mut retrying = waiting.clone();
        retrying.connected_state = Some(1);
        assert_eq!(
            retrying.stream(),
            Some(XdsStream::Retrying {
                failures: 7,
                applied: false
            })
        );
        assert_eq!(retrying.connected(), None);
        assert_eq!(
            xds_source(&retrying, None),
            "not connected to istiod yet: 7 xDS stream(s) failed, a new one started"
        );
        // A first stream that has not answered yet, then one that has.
        let mut opening = retrying.clone();
        opening.cds.as_mut().unwrap().failure = 0;
        assert_eq!(opening.stream(), Some(XdsStream::Opening));
        assert_eq!(opening.connected(), None);
        let mut connected = opening.clone();
        connected.cds.as_mut().unwrap().success = 1;
        assert_eq!(connected.stream(), Some(XdsStream::Connected));
        assert_eq!(connected.connected(), Some(true));
        assert_eq!(xds_source(&connected, None), "connected to istiod");
        // Configuration came once, streams failed since: connected again or reconnecting.
        let mut again = retrying.clone();
        again.cds.as_mut().unwrap().success = 3;
        assert_eq!(
            xds_source(&again, None),
            "connected to istiod or reconnecting: 7 xDS stream(s) failed before, a new one started"
        );
        assert_eq!(again.connected(), None);
    }

    #[test]
    fn stats_text_matches_json() {
        let text = parse_stats(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_stats_filtered.txt"
        )))
        .unwrap();
        let json = parse_stats(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_stats.json"
        )))
        .unwrap();
        assert_eq!(text.connected_state, json.connected_state);
        assert_eq!(text.cds, json.cds);
        assert_eq!(text.lds, json.lds);
        assert_eq!(text.server_state, Some(2));
    }

    #[test]
    fn stats_static_bootstrap_has_no_control_plane() {
        let stats = parse_stats(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/C_stats.json"
        )))
        .unwrap();
        assert_eq!(stats.connected_state, None);
        assert_eq!(stats.cds, None);
        assert_eq!(stats.workers_started, Some(1));
    }

    #[test]
    fn bootstrap_from_full_dump() {
        let b = parse_bootstrap(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_config_dump.json"
        )))
        .unwrap();
        assert_eq!(
            b.node_id.as_deref(),
            Some("sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local")
        );
        assert_eq!(b.node_cluster.as_deref(), Some("web.shop"));
        assert_eq!(b.meta("ISTIO_VERSION"), Some("1.24.0"));
        assert_eq!(b.meta("NAMESPACE"), Some("shop"));
        assert_eq!(b.ads_cluster.as_deref(), Some("xds-grpc"));
        let names: Vec<&str> = b.static_clusters.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["prometheus_stats", "agent", "xds-grpc"]);
        assert_eq!(
            b.static_cluster("xds-grpc").unwrap().addresses,
            ["127.0.0.1:15012"]
        );
    }

    #[test]
    fn bootstrap_from_masked_dump() {
        let body = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/C_config_dump_mask_node_id_cluster_metadata.json"
        ));
        // The capture script appended the HTTP status after the body.
        let body = body.trim_end().trim_end_matches("[200]");
        let b = parse_bootstrap(body).unwrap();
        assert_eq!(b.node_cluster.as_deref(), Some("web.shop"));
        assert_eq!(b.meta("CLUSTER_ID"), Some("Kubernetes"));
        assert!(b.static_clusters.is_empty());
        assert_eq!(b.ads_cluster, None);
    }

    #[test]
    fn clusters_show_xds_connect_failures() {
        let clusters = parse_clusters(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_clusters.json"
        )))
        .unwrap();
        let xds = clusters.iter().find(|c| c.name == "xds-grpc").unwrap();
        assert_eq!(xds.hosts.len(), 1);
        assert_eq!(xds.hosts[0].address, "127.0.0.1:15012");
        assert_eq!(xds.connect_failures(), 7);
        assert_eq!(xds.connections(), 7);
        assert_eq!(xds.hosts[0].rq_success, 0);
        assert_eq!(xds.hosts[0].health.as_deref(), Some("HEALTHY"));
        let c = parse_clusters(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/C_clusters.json"
        )))
        .unwrap();
        assert!(c.iter().all(|c| c.connect_failures() == 0));
    }

    #[test]
    fn certs_empty_and_real() {
        assert!(
            parse_certs(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_certs.json"
            )))
            .unwrap()
            .is_empty()
        );
        let certs = parse_certs(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/certs_valid_and_expired.json"
        )))
        .unwrap();
        // The root CA is listed twice by Envoy (once per TLS context) and kept once.
        assert_eq!(certs.len(), 3);
        let chains: Vec<&CertInfo> = certs.iter().filter(|c| c.role == CertRole::Chain).collect();
        assert_eq!(chains.len(), 2);
        assert_eq!(
            chains[0].subject_alt_names,
            ["spiffe://cluster.local/ns/shop/sa/web"]
        );
        // Both a 24 h certificate and an expired one report 0 days: only the times tell them apart.
        assert_eq!(chains[0].days_until_expiration, Some(0));
        assert_eq!(chains[1].days_until_expiration, Some(0));
        let captured: jiff::Timestamp = "2026-11-29T15:00:24Z".parse().unwrap();
        assert!(chains[0].remaining_fraction(captured).unwrap() < 0.0);
        assert!(chains[1].remaining_fraction(captured).unwrap() > 0.9);
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(url_encode("a.b,c"), "a.b%2Cc");
        assert_eq!(url_encode("^(x|y)$"), "%5E%28x%7Cy%29%24");
    }
}
