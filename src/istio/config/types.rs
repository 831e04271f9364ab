//! Istio's `networking.istio.io` resources, reduced to the fields the analyzers read. Every
//! struct takes its defaults for missing fields and ignores unknown ones, so a newer Istio API
//! (or a field mesh-doctor does not read) never stops the analysis. Field names are Istio's.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

pub type Labels = BTreeMap<String, String>;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VirtualService {
    #[serde(deserialize_with = "super::zero::list")]
    pub hosts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub gateways: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub http: Vec<HttpRoute>,
    #[serde(deserialize_with = "super::zero::list")]
    pub tls: Vec<TlsRoute>,
    #[serde(deserialize_with = "super::zero::list")]
    pub tcp: Vec<TcpRoute>,
    #[serde(deserialize_with = "super::zero::list")]
    pub export_to: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpRoute {
    pub name: String,
    #[serde(rename = "match")]
    #[serde(deserialize_with = "super::zero::list")]
    pub matches: Vec<HttpMatch>,
    #[serde(deserialize_with = "super::zero::list")]
    pub route: Vec<RouteDestination>,
    pub redirect: Option<Value>,
    pub direct_response: Option<Value>,
    pub delegate: Option<Value>,
    pub rewrite: Option<Value>,
    pub mirror: Option<Destination>,
    #[serde(deserialize_with = "super::zero::list")]
    pub mirrors: Vec<MirrorPolicy>,
    pub fault: Option<HttpFault>,
    /// A duration such as `5s`, empty when absent.
    pub timeout: String,
    pub retries: Option<Value>,
}

/// `fault`: a delay, an abort, or both.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpFault {
    pub delay: Option<FaultDelay>,
    pub abort: Option<FaultAbort>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct FaultDelay {
    pub fixed_delay: String,
    pub percentage: Option<Percent>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct FaultAbort {
    pub http_status: i32,
    pub grpc_status: String,
    pub http2_error: String,
    /// `None`: every request (Istio's default when no percentage is given).
    pub percentage: Option<Percent>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Percent {
    pub value: f64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpMatch {
    pub name: String,
    pub uri: Option<StringMatch>,
    pub scheme: Option<StringMatch>,
    pub method: Option<StringMatch>,
    pub authority: Option<StringMatch>,
    #[serde(deserialize_with = "super::zero::map")]
    pub headers: BTreeMap<String, StringMatch>,
    #[serde(deserialize_with = "super::zero::map")]
    pub without_headers: BTreeMap<String, StringMatch>,
    #[serde(deserialize_with = "super::zero::map")]
    pub query_params: BTreeMap<String, StringMatch>,
    pub port: u32,
    #[serde(deserialize_with = "super::zero::map")]
    pub source_labels: Labels,
    #[serde(deserialize_with = "super::zero::list")]
    pub gateways: Vec<String>,
    pub ignore_uri_case: bool,
    pub source_namespace: String,
    pub stat_prefix: String,
}

/// One of `exact`, `prefix`, `regex` (an empty match when none is set).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct StringMatch {
    pub exact: Option<String>,
    pub prefix: Option<String>,
    pub regex: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RouteDestination {
    pub destination: Option<Destination>,
    pub weight: i32,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MirrorPolicy {
    pub destination: Option<Destination>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Destination {
    pub host: String,
    pub subset: String,
    pub port: Option<PortSelector>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct PortSelector {
    pub number: u32,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TlsRoute {
    #[serde(rename = "match")]
    #[serde(deserialize_with = "super::zero::list")]
    pub matches: Vec<L4Match>,
    #[serde(deserialize_with = "super::zero::list")]
    pub route: Vec<RouteDestination>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TcpRoute {
    #[serde(rename = "match")]
    #[serde(deserialize_with = "super::zero::list")]
    pub matches: Vec<L4Match>,
    #[serde(deserialize_with = "super::zero::list")]
    pub route: Vec<RouteDestination>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct L4Match {
    #[serde(deserialize_with = "super::zero::list")]
    pub sni_hosts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub destination_subnets: Vec<String>,
    pub port: u32,
    #[serde(deserialize_with = "super::zero::map")]
    pub source_labels: Labels,
    #[serde(deserialize_with = "super::zero::list")]
    pub gateways: Vec<String>,
    pub source_namespace: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DestinationRule {
    pub host: String,
    pub traffic_policy: Option<TrafficPolicy>,
    #[serde(deserialize_with = "super::zero::list")]
    pub subsets: Vec<Subset>,
    #[serde(deserialize_with = "super::zero::list")]
    pub export_to: Vec<String>,
    pub workload_selector: Option<MatchLabels>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TrafficPolicy {
    pub tls: Option<ClientTls>,
    #[serde(deserialize_with = "super::zero::list")]
    pub port_level_settings: Vec<PortTrafficPolicy>,
    pub load_balancer: Option<Value>,
    pub outlier_detection: Option<Value>,
    pub connection_pool: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PortTrafficPolicy {
    pub port: Option<PortSelector>,
    pub tls: Option<ClientTls>,
    pub outlier_detection: Option<serde_json::Value>,
    pub connection_pool: Option<serde_json::Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClientTls {
    pub mode: String,
    pub ca_certificates: String,
    pub credential_name: String,
    pub client_certificate: String,
    pub private_key: String,
    pub ca_crl: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subset {
    pub name: String,
    #[serde(deserialize_with = "super::zero::map")]
    pub labels: Labels,
    pub traffic_policy: Option<TrafficPolicy>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadSelector {
    #[serde(deserialize_with = "super::zero::map")]
    pub labels: Labels,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Gateway {
    #[serde(deserialize_with = "super::zero::list")]
    pub servers: Vec<Server>,
    /// `None` when the field is absent (Istio then selects every workload); an empty map selects
    /// every workload too.
    pub selector: Option<Labels>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Server {
    pub port: Option<GatewayPort>,
    #[serde(deserialize_with = "super::zero::list")]
    pub hosts: Vec<String>,
    pub tls: Option<ServerTls>,
    pub bind: String,
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GatewayPort {
    pub number: u32,
    pub protocol: String,
    pub name: String,
    pub target_port: u32,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServerTls {
    pub mode: String,
    pub credential_name: String,
    #[serde(deserialize_with = "super::zero::list")]
    pub credential_names: Vec<String>,
    pub server_certificate: String,
    pub private_key: String,
    pub ca_certificates: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServiceEntry {
    #[serde(deserialize_with = "super::zero::list")]
    pub hosts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub addresses: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub ports: Vec<ServicePort>,
    pub location: String,
    pub resolution: String,
    #[serde(deserialize_with = "super::zero::list")]
    pub export_to: Vec<String>,
    pub workload_selector: Option<WorkloadSelector>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServicePort {
    pub number: u32,
    pub protocol: String,
    pub name: String,
    pub target_port: u32,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Sidecar {
    pub workload_selector: Option<WorkloadSelector>,
    #[serde(deserialize_with = "super::zero::list")]
    pub egress: Vec<Value>,
    #[serde(deserialize_with = "super::zero::list")]
    pub ingress: Vec<Value>,
    pub outbound_traffic_policy: Option<OutboundTrafficPolicy>,
}

/// `outboundTrafficPolicy` (of a Sidecar, or of the mesh config).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OutboundTrafficPolicy {
    /// `ALLOW_ANY` (Istio's default) or `REGISTRY_ONLY`.
    pub mode: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EnvoyFilter {
    pub workload_selector: Option<WorkloadSelector>,
    #[serde(deserialize_with = "super::zero::list")]
    pub config_patches: Vec<EnvoyConfigPatch>,
    pub priority: i32,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EnvoyConfigPatch {
    pub apply_to: String,
    #[serde(rename = "match")]
    pub matches: Option<Value>,
    pub patch: Option<Patch>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Patch {
    pub operation: String,
    pub value: Option<Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadEntry {
    pub address: String,
    #[serde(deserialize_with = "super::zero::map")]
    pub labels: Labels,
    #[serde(deserialize_with = "super::zero::map")]
    pub ports: BTreeMap<String, u32>,
    pub network: String,
    pub service_account: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadGroup {
    pub metadata: Option<WorkloadGroupMeta>,
    pub template: Option<WorkloadEntry>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadGroupMeta {
    #[serde(deserialize_with = "super::zero::map")]
    pub labels: Labels,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MatchLabels {
    #[serde(deserialize_with = "super::zero::map")]
    pub match_labels: Labels,
}

/// A `targetRef` (Istio's `PolicyTargetReference`), of security, telemetry and extension policies.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PolicyTargetRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
}
