//! Istio's `telemetry.istio.io` Telemetry and `extensions.istio.io` WasmPlugin, reduced to the
//! fields the analyzers and the schema rules read (defaults for missing fields, unknown fields
//! ignored, as in [`super::types`]).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::security::PolicyTargetRef;
use super::types::MatchLabels;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Telemetry {
    /// `None` when absent: the Telemetry applies to the whole namespace.
    pub selector: Option<MatchLabels>,
    pub target_ref: Option<PolicyTargetRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub target_refs: Vec<PolicyTargetRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub tracing: Vec<Tracing>,
    #[serde(deserialize_with = "super::zero::list")]
    pub metrics: Vec<Metrics>,
    #[serde(deserialize_with = "super::zero::list")]
    pub access_logging: Vec<AccessLogging>,
}

/// `providers[]` entry; `None` for a null entry.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProviderRef {
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Tracing {
    #[serde(deserialize_with = "super::zero::list")]
    pub providers: Vec<ProviderRef>,
    pub random_sampling_percentage: Option<f64>,
    #[serde(deserialize_with = "super::zero::map")]
    pub custom_tags: BTreeMap<String, CustomTag>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CustomTag {
    pub literal: Option<NamedValue>,
    pub header: Option<NamedValue>,
    pub environment: Option<NamedValue>,
}

/// `literal: {value}`, `header: {name}`, `environment: {name}`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NamedValue {
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Metrics {
    #[serde(deserialize_with = "super::zero::list")]
    pub providers: Vec<ProviderRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub overrides: Vec<MetricsOverride>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MetricsOverride {
    #[serde(rename = "match")]
    pub matches: Option<MetricSelector>,
    #[serde(deserialize_with = "super::zero::map")]
    pub tag_overrides: BTreeMap<String, TagOverride>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MetricSelector {
    pub metric: Option<String>,
    pub custom_metric: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TagOverride {
    /// `UPSERT` (the default when empty) or `REMOVE`.
    pub operation: String,
    pub value: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AccessLogging {
    #[serde(deserialize_with = "super::zero::list")]
    pub providers: Vec<ProviderRef>,
    pub disabled: Option<bool>,
    pub filter: Option<AccessLogFilter>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AccessLogFilter {
    pub expression: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WasmPlugin {
    pub selector: Option<MatchLabels>,
    pub target_ref: Option<PolicyTargetRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub target_refs: Vec<PolicyTargetRef>,
    pub url: String,
    pub sha256: String,
    pub image_pull_secret: String,
    pub plugin_name: String,
    pub vm_config: Option<VmConfig>,
    #[serde(rename = "match")]
    #[serde(deserialize_with = "super::zero::list")]
    pub matches: Vec<WasmTrafficSelector>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VmConfig {
    #[serde(deserialize_with = "super::zero::list")]
    pub env: Vec<EnvVar>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    pub value: String,
    /// `INLINE` (the default when empty) or `HOST`.
    pub value_from: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WasmTrafficSelector {
    pub mode: String,
    #[serde(deserialize_with = "super::zero::list")]
    pub ports: Vec<WasmPort>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WasmPort {
    pub number: i64,
}
