//! What one check of `bootstrap explain` reports: its [`Status`], a problem of the
//! bootstrapOverride, a field compared with the live bootstrap. Used by `explanation.rs`, which
//! checks the ingredients, and `overlay.rs`, which merges the override and compares with Envoy.

use serde::Serialize;

/// How one check came out, from best to worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Checked, and right.
    Ok,
    /// Nothing to check: shown so a person sees where the value comes from.
    Info,
    /// Could not be checked (an object could not be read, the pod has no IP yet).
    Unknown,
    /// Works, but probably not what was meant.
    Warning,
    /// Breaks the proxy: it crashes, cannot start, or istiod refuses it.
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Info => "info",
            Status::Unknown => "unknown",
            Status::Warning => "warning",
            Status::Error => "error",
        }
    }
}

/// A problem of the bootstrapOverride ConfigMap's bootstrap, found by the `bootstrap validate`
/// checks run on it merged over pilot-agent's bootstrap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverrideProblem {
    pub code: &'static str,
    pub name: &'static str,
    /// What it does to this proxy (an unknown field is ignored rather than fatal under
    /// pilot-agent, see `overlay::override_problems`).
    pub status: Status,
    /// The JSON path in the override, or in the merged bootstrap when the problem is not in a
    /// field the override wrote.
    pub path: String,
    /// The line in the ConfigMap's `custom_bootstrap.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    pub message: String,
}

/// One field of the bootstrap as derived and as the running Envoy has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveField {
    pub field: String,
    pub expected: String,
    pub live: String,
    /// `None` when the expected value is not known yet (the pod has no IP).
    pub matches: Option<bool>,
}
