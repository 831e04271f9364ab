//! Istio's `k8sgateway.*` analyzers: a policy `selector` aimed at the pods of a Gateway API
//! Gateway, which has no effect there (IST0166), and Gateway API CRDs older than this Istio
//! needs (IST0176).

use super::Finding;
use crate::findings::ResourceRef;
use crate::findings::messages;
use crate::istio::config::gateway_api::{BUNDLE_VERSION_ANNOTATION, GATEWAY_NAME_LABEL, group_of};
use crate::istio::config::{EXTENSIONS_GROUP, SECURITY_GROUP, TELEMETRY_GROUP};
use crate::kube::selector::labels_match;
use crate::kube::snapshot::{Object, Snapshot};

/// The policy kinds whose `selector` Istio checks: (group, kind).
const POLICIES: &[(&str, &str)] = &[
    (SECURITY_GROUP, "AuthorizationPolicy"),
    (SECURITY_GROUP, "RequestAuthentication"),
    (TELEMETRY_GROUP, "Telemetry"),
    (EXTENSIONS_GROUP, "WasmPlugin"),
];

/// `k8sgateway.SelectorAnalyzer`: a policy with a `selector` and no `targetRef` whose
/// `matchLabels` are all on a pod of a Gateway API Gateway (a pod labelled
/// `gateway.networking.k8s.io/gateway-name`) of its namespace. Pod templates count as pods.
pub fn selectors(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let gateway_pods: Vec<_> = snapshot
        .pod_labels()
        .into_iter()
        .filter(|p| p.labels.contains_key(GATEWAY_NAME_LABEL))
        .collect();
    if gateway_pods.is_empty() {
        return;
    }
    for resource in &snapshot.config {
        let object = &resource.object;
        let group = group_of(&object.api_version);
        if !POLICIES.contains(&(group, object.kind.as_str())) {
            continue;
        }
        let present = |key: &str| object.spec.get(key).is_some_and(|v| !v.is_null());
        // Istio reads the singular `targetRef` only (not `targetRefs`).
        if present("targetRef") || !present("selector") {
            continue;
        }
        let Ok(match_labels) = serde_json::from_value::<std::collections::BTreeMap<String, String>>(
            object.spec["selector"]
                .get("matchLabels")
                .cloned()
                .filter(|v| !v.is_null())
                .unwrap_or_else(|| serde_json::json!({})),
        ) else {
            continue;
        };
        let namespace = object.namespace().unwrap_or("");
        for pod in gateway_pods.iter().filter(|p| p.namespace == namespace) {
            if labels_match(&match_labels, pod.labels) {
                out.push(Finding::new(
                    messages::IST0166::message(&pod.labels[GATEWAY_NAME_LABEL]),
                    Some(ResourceRef::of(resource)),
                ));
            }
        }
    }
}

/// The oldest Gateway API release whose CRD this Istio processes, per CRD (Istio's
/// `gatewayapi.MinimumCRDVersions`).
pub const MINIMUM_CRD_VERSIONS: &[(&str, Version)] = &[
    (
        "grpcroutes.gateway.networking.k8s.io",
        Version::new(1, 1, 0),
    ),
    (
        "backendtlspolicies.gateway.networking.k8s.io",
        Version::new(1, 4, 0),
    ),
    ("tlsroutes.gateway.networking.k8s.io", Version::new(1, 5, 0)),
    ("tcproutes.gateway.networking.k8s.io", Version::new(1, 6, 0)),
];

/// A semantic version as Istio reads the bundle version (leniently: `v` prefix, missing minor
/// or patch taken as 0, pre-release and build metadata kept for display).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub build: String,
}

impl Version {
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Version {
            major,
            minor,
            patch,
            pre: String::new(),
            build: String::new(),
        }
    }

    /// Parses `v1.4.1`, `1.4`, `1.5.0-rc.1+build`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let (rest, build) = match text.split_once('+') {
            Some((r, b)) => (r, Some(b)),
            None => (text, None),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (rest, None),
        };
        let ident_ok = |s: &str| {
            !s.is_empty()
                && s.split('.').all(|id| {
                    !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
        };
        if pre.is_some_and(|p| !ident_ok(p)) || build.is_some_and(|b| !ident_ok(b)) {
            return None;
        }
        // A numeric pre-release identifier with a leading zero is refused.
        if pre.is_some_and(|p| {
            p.split('.').any(|id| {
                id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit())
            })
        }) {
            return None;
        }
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return None;
        }
        let mut numbers = [0u64; 3];
        for (i, part) in parts.iter().enumerate() {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            numbers[i] = part.parse().ok()?;
        }
        Some(Version {
            major: numbers[0],
            minor: numbers[1],
            patch: numbers[2],
            pre: pre.unwrap_or("").to_string(),
            build: build.unwrap_or("").to_string(),
        })
    }

    fn core(&self) -> (u64, u64, u64) {
        (self.major, self.minor, self.patch)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build)?;
        }
        Ok(())
    }
}

/// `k8sgateway.CRDVersionAnalyzer`: a Gateway API CRD whose `bundle-version` annotation, its
/// pre-release dropped, is below Istio's minimum. A CRD without the annotation, or with one
/// that is not a version, is left alone (as Istio does).
pub fn crd_versions(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for crd in &snapshot.crds {
        let name = crd.object.name();
        let Some((_, minimum)) = MINIMUM_CRD_VERSIONS.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let Some(installed) = crd
            .object
            .annotation(BUNDLE_VERSION_ANNOTATION)
            .and_then(Version::parse)
        else {
            continue;
        };
        if installed.core() < minimum.core() {
            out.push(Finding::new(
                messages::IST0176::message(name, installed.to_string(), minimum.to_string()),
                Some(ResourceRef::of(crd)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Version;

    #[test]
    fn versions_as_istio_reads_them() {
        let v = Version::parse("v1.4.1").unwrap();
        assert_eq!(v.to_string(), "1.4.1");
        assert_eq!(Version::parse("1.5").unwrap().to_string(), "1.5.0");
        assert_eq!(
            Version::parse("v1.5.0-rc.1+b").unwrap().to_string(),
            "1.5.0-rc.1+b"
        );
        assert!(Version::parse("latest").is_none());
        assert!(Version::parse("1.2.3.4").is_none());
        assert!(Version::parse("1.2.3-01").is_none());
    }
}
