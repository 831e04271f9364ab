//! istiod, the Istio control plane, as its Helm chart installs it. Pure knowledge, no I/O.
//!
//! istiod runs as a Deployment per revision: `istiod` for the default revision, `istiod-<rev>`
//! otherwise, labelled `app=istiod` and `istio.io/rev=<rev>`, with the `discovery` container
//! (image `pilot`). Its `CLUSTER_ID` env names the cluster in a multi-cluster mesh.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};

use crate::istio::injection::REVISION_LABEL;

/// The `app` label of istiod's Deployment and pods.
pub const ISTIOD_APP: &str = "istiod";
/// istiod's main container.
pub const DISCOVERY_CONTAINER: &str = "discovery";
/// The label of a revision tag's MutatingWebhookConfiguration (`istio-revision-tag-<tag>`).
pub const TAG_LABEL: &str = "istio.io/tag";
/// istiod's env var naming the cluster it runs in.
pub const CLUSTER_ID_ENV: &str = "CLUSTER_ID";
/// The proxy's env var carrying the cluster ID into its node metadata.
pub const PROXY_CLUSTER_ID_ENV: &str = "ISTIO_META_CLUSTER_ID";
/// istiod's cluster ID when `CLUSTER_ID` is not set (and Helm's `multiCluster.clusterName` default).
pub const DEFAULT_CLUSTER_ID: &str = "Kubernetes";

/// The revision an object is labelled with (`istio.io/rev`), `default` when unlabelled.
pub fn revision_of(labels: Option<&BTreeMap<String, String>>) -> String {
    labels
        .and_then(|l| l.get(REVISION_LABEL))
        .filter(|r| !r.is_empty())
        .cloned()
        .unwrap_or_else(|| "default".to_string())
}

/// True for an istiod Deployment: labelled `app=istiod` (on itself or its pods), or running
/// a `discovery` container from a `pilot` image.
pub fn is_istiod(
    labels: Option<&BTreeMap<String, String>>,
    template_labels: Option<&BTreeMap<String, String>>,
    spec: Option<&PodSpec>,
) -> bool {
    let app = |l: Option<&BTreeMap<String, String>>| {
        l.and_then(|l| l.get("app"))
            .is_some_and(|a| a == ISTIOD_APP)
    };
    app(labels)
        || app(template_labels)
        || spec.is_some_and(|s| {
            s.containers
                .iter()
                .any(|c| c.name == DISCOVERY_CONTAINER && image_name(image(c)).contains("pilot"))
        })
}

/// istiod's `discovery` container (or its first container).
pub fn discovery_container(spec: &PodSpec) -> Option<&Container> {
    spec.containers
        .iter()
        .find(|c| c.name == DISCOVERY_CONTAINER)
        .or_else(|| spec.containers.first())
}

fn image(c: &Container) -> &str {
    c.image.as_deref().unwrap_or("")
}

/// The image's repository path without registry host, tag or digest.
fn image_name(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    last.split(':').next().unwrap_or(last)
}

/// The version an image tag names: `istio/proxyv2:1.30.3` → `1.30.3`,
/// `…:1.30.3-distroless` → `1.30.3`; a digest without tag gives the short digest, no tag `None`.
pub fn image_version(image: &str) -> Option<String> {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    if let Some((_, tag)) = last.split_once(':')
        && !tag.is_empty()
    {
        let tag = tag
            .strip_suffix("-distroless")
            .or_else(|| tag.strip_suffix("-debug"))
            .unwrap_or(tag);
        return Some(tag.to_string());
    }
    digest.map(|d| {
        let hex = d.split_once(':').map_or(d, |(_, h)| h);
        format!("@{}", &hex[..hex.len().min(12)])
    })
}

/// The literal value of an env var of a container (`valueFrom` gives `None`).
pub fn env_value<'a>(container: &'a Container, name: &str) -> Option<&'a str> {
    container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .and_then(|e| e.value.as_deref())
}

/// The cluster ID istiod uses: its `CLUSTER_ID` env, or Istio's default.
pub fn cluster_id(spec: &PodSpec) -> Option<(String, bool)> {
    let container = discovery_container(spec)?;
    match container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == CLUSTER_ID_ENV)
    {
        Some(var) => var.value.clone().map(|v| (v, true)),
        None => Some((DEFAULT_CLUSTER_ID.to_string(), false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_images() {
        assert_eq!(
            image_version("istio/proxyv2:1.30.3").as_deref(),
            Some("1.30.3")
        );
        assert_eq!(
            image_version("registry.example/istio-release/pilot:1.29.0-distroless").as_deref(),
            Some("1.29.0")
        );
        assert_eq!(
            image_version("localhost:5000/istio/pilot:1.31.0-dev").as_deref(),
            Some("1.31.0-dev")
        );
        assert_eq!(
            image_version("localhost:5000/istio/pilot@sha256:0123456789abcdef0123").as_deref(),
            Some("@0123456789ab")
        );
        assert_eq!(
            image_version("istio/pilot:1.30.3@sha256:0123").as_deref(),
            Some("1.30.3")
        );
        assert_eq!(image_version("localhost:5000/istio/pilot"), None);
        assert_eq!(image_name("localhost:5000/istio/pilot:1.2"), "pilot");
    }

    #[test]
    fn revisions() {
        let mut labels = BTreeMap::new();
        assert_eq!(revision_of(Some(&labels)), "default");
        labels.insert(REVISION_LABEL.to_string(), "1-30".to_string());
        assert_eq!(revision_of(Some(&labels)), "1-30");
        assert_eq!(revision_of(None), "default");
    }
}
