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
    pub target_refs: Vec<PolicyTargetRef>,
    /// `ALLOW` (the default when empty), `DENY`, `AUDIT` or `CUSTOM`.
    pub action: String,
    pub provider: Option<ExtensionProvider>,
    pub rules: Vec<Option<AuthorizationRule>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExtensionProvider {
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AuthorizationRule {
    pub from: Vec<Option<RuleFrom>>,
    pub to: Vec<Option<RuleTo>>,
    pub when: Vec<Option<Condition>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RuleFrom {
    pub source: Option<Source>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Source {
    pub principals: Vec<String>,
    pub not_principals: Vec<String>,
    pub request_principals: Vec<String>,
    pub not_request_principals: Vec<String>,
    pub namespaces: Vec<String>,
    pub not_namespaces: Vec<String>,
    pub service_accounts: Vec<String>,
    pub not_service_accounts: Vec<String>,
    pub trust_domains: Vec<String>,
    pub not_trust_domains: Vec<String>,
    pub ip_blocks: Vec<String>,
    pub not_ip_blocks: Vec<String>,
    pub remote_ip_blocks: Vec<String>,
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
    pub hosts: Vec<String>,
    pub not_hosts: Vec<String>,
    pub ports: Vec<String>,
    pub not_ports: Vec<String>,
    pub methods: Vec<String>,
    pub not_methods: Vec<String>,
    pub paths: Vec<String>,
    pub not_paths: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Condition {
    pub key: String,
    pub values: Vec<String>,
    pub not_values: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PeerAuthentication {
    pub selector: Option<MatchLabels>,
    pub mtls: Option<Mtls>,
    /// Port number (a string key in JSON) -> mTLS mode.
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
    pub target_refs: Vec<PolicyTargetRef>,
    pub jwt_rules: Vec<Option<JwtRule>>,
}

/// One `jwtRules` entry of a RequestAuthentication.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct JwtRule {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub jwks_uri: String,
    pub jwks: String,
    pub from_headers: Vec<Option<JwtHeader>>,
    pub from_params: Vec<String>,
    pub from_cookies: Vec<String>,
    pub output_claim_to_headers: Vec<Option<ClaimToHeader>>,
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
