//! Istio's `security.istio.io` kinds (AuthorizationPolicy, PeerAuthentication; the JWT rules of
//! RequestAuthentication), reduced to the fields the analyzers and the schema rules read. As in
//! [`super::types`], missing fields take their defaults and unknown fields are ignored. An
//! empty list is the same as an absent one (protobuf does not tell them apart); a selector or
//! a message that is present but empty is `Some` (Istio's rules do tell those apart).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::types::MatchLabels;
pub use super::types::PolicyTargetRef;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AuthorizationPolicy {
    /// `None` when absent: the policy applies to the whole namespace (or mesh).
    pub selector: Option<MatchLabels>,
    pub target_ref: Option<PolicyTargetRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub target_refs: Vec<PolicyTargetRef>,
    /// `ALLOW` (the default when empty), `DENY`, `AUDIT` or `CUSTOM`.
    pub action: String,
    pub provider: Option<ExtensionProvider>,
    #[serde(deserialize_with = "super::zero::list")]
    pub rules: Vec<AuthorizationRule>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExtensionProvider {
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AuthorizationRule {
    #[serde(deserialize_with = "super::zero::list")]
    pub from: Vec<RuleFrom>,
    #[serde(deserialize_with = "super::zero::list")]
    pub to: Vec<RuleTo>,
    #[serde(deserialize_with = "super::zero::list")]
    pub when: Vec<Condition>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RuleFrom {
    pub source: Option<Source>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Source {
    #[serde(deserialize_with = "super::zero::list")]
    pub principals: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_principals: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub request_principals: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_request_principals: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub namespaces: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_namespaces: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub service_accounts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_service_accounts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub trust_domains: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_trust_domains: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub ip_blocks: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_ip_blocks: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub remote_ip_blocks: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_remote_ip_blocks: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RuleTo {
    pub operation: Option<Operation>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Operation {
    #[serde(deserialize_with = "super::zero::list")]
    pub hosts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_hosts: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub ports: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_ports: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub methods: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_methods: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub paths: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_paths: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Condition {
    pub key: String,
    #[serde(deserialize_with = "super::zero::list")]
    pub values: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub not_values: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PeerAuthentication {
    pub selector: Option<MatchLabels>,
    pub mtls: Option<Mtls>,
    /// Port number (a string key in JSON) -> mTLS mode.
    #[serde(deserialize_with = "super::zero::map")]
    pub port_level_mtls: BTreeMap<String, Value>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Mtls {
    pub mode: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RequestAuthentication {
    pub selector: MatchLabels,
    pub target_ref: Option<PolicyTargetRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub target_refs: Vec<PolicyTargetRef>,
    #[serde(deserialize_with = "super::zero::list")]
    pub jwt_rules: Vec<JwtRule>,
}

/// One `jwtRules` entry of a RequestAuthentication.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JwtRule {
    pub issuer: String,
    #[serde(deserialize_with = "super::zero::list")]
    pub audiences: Vec<String>,
    pub jwks_uri: String,
    pub jwks: String,
    #[serde(deserialize_with = "super::zero::list")]
    pub from_headers: Vec<JwtHeader>,
    #[serde(deserialize_with = "super::zero::list")]
    pub from_params: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub from_cookies: Vec<String>,
    #[serde(deserialize_with = "super::zero::list")]
    pub output_claim_to_headers: Vec<ClaimToHeader>,
    pub timeout: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JwtHeader {
    pub name: String,
    pub prefix: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ClaimToHeader {
    pub header: String,
    pub claim: String,
}
