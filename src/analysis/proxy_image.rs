//! IST0158: pods whose proxy image differs from the one the injector would use now
//! (usually: the control plane was upgraded and the pods were not restarted).
//! Decided as Istio's image analyzer does, including the image variant (`-distroless`)
//! resolved from the mesh config, ProxyConfig resources and the pod's `proxy.istio.io/config`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::analysis::injection::injector_config_map_name;
use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::IST0158;
use crate::istio::injection::{INJECTION_LABEL, REVISION_LABEL};
use crate::istio::sidecar;
use crate::kube::selector;
use crate::kube::snapshot::{Object, Snapshot};

const PROXY_IMAGE_ANNOTATION: &str = "sidecar.istio.io/proxyImage";
const PROXY_CONFIG_ANNOTATION: &str = "proxy.istio.io/config";

/// The proxy image an injector ConfigMap's `values` define.
fn injector_image(values: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(values) else {
        return String::new();
    };
    let get = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    let image = get("/global/proxy/image");
    if image.contains('/') {
        image.to_string()
    } else {
        format!("{}/{}:{}", get("/global/hub"), image, get("/global/tag"))
    }
}

fn image_type(config: &Value) -> Option<&str> {
    config.pointer("/image/imageType").and_then(Value::as_str)
}

/// The image variant a pod's proxy uses; later sources win.
fn variant(
    snapshot: &Snapshot,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    pod_annotation: Option<&str>,
) -> String {
    let mut chosen: Option<String> = None;
    let root = snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.get("rootNamespace")?.as_str())
        .unwrap_or("istio-system")
        .to_string();
    if let Some(t) = snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| image_type(m.get("defaultConfig")?))
    {
        chosen = Some(t.to_string());
    }
    let spec = |pc: &Value| pc.get("spec").cloned().unwrap_or(Value::Null);
    let ns_of = |pc: &Value| {
        pc.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let has_selector = |pc: &Value| pc.pointer("/spec/selector").is_some_and(|s| !s.is_null());
    for scope in [root.as_str(), namespace] {
        for pc in snapshot.proxy_configs.iter().map(|p| &p.object) {
            if ns_of(pc) == scope
                && !has_selector(pc)
                && let Some(t) = image_type(&spec(pc))
            {
                chosen = Some(t.to_string());
            }
        }
    }
    for pc in snapshot.proxy_configs.iter().map(|p| &p.object) {
        if ns_of(pc) == namespace && has_selector(pc) {
            let wanted: BTreeMap<String, String> = pc
                .pointer("/spec/selector/matchLabels")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default();
            let selector = k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some(wanted),
                match_expressions: None,
            };
            if selector::matches(Some(&selector), labels)
                && let Some(t) = image_type(&spec(pc))
            {
                chosen = Some(t.to_string());
            }
        }
    }
    if let Some(text) = pod_annotation {
        let parsed = crate::formats::yaml::parse_stream(text).ok();
        if let Some(t) = parsed
            .as_ref()
            .and_then(|d| d.first())
            .and_then(|d| image_type(&d.value))
        {
            chosen = Some(t.to_string());
        }
    }
    match chosen.as_deref() {
        None | Some("default") => String::new(),
        Some(t) => t.to_string(),
    }
}

pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    let images: BTreeMap<String, String> = snapshot
        .config_maps
        .iter()
        .filter(|cm| cm.object.name().starts_with("istio-sidecar-injector"))
        .map(|cm| {
            let values = cm
                .object
                .data
                .as_ref()
                .and_then(|d| d.get("values"))
                .map_or("", String::as_str);
            (cm.object.name().to_string(), injector_image(values))
        })
        .collect();
    if images.is_empty() {
        return;
    }
    for ns in &snapshot.namespaces {
        let labels = ns.object.metadata.labels.clone().unwrap_or_default();
        let injected = labels.get(INJECTION_LABEL).is_some_and(|v| v == "enabled")
            || labels.contains_key(REVISION_LABEL);
        if !injected {
            continue;
        }
        let revision = labels.get(REVISION_LABEL).map_or("default", String::as_str);
        let Some(expected) = images.get(&injector_config_map_name(revision)) else {
            continue;
        };
        let mut mismatched: Vec<String> = Vec::new();
        for pod in snapshot
            .pods
            .iter()
            .filter(|p| p.object.namespace() == Some(ns.object.name()))
        {
            if pod
                .object
                .annotation(PROXY_IMAGE_ANNOTATION)
                .is_some_and(|v| !v.is_empty())
            {
                continue;
            }
            let Some(spec) = pod.object.spec.as_ref() else {
                continue;
            };
            let pod_labels = pod.object.metadata.labels.clone().unwrap_or_default();
            let variant = variant(
                snapshot,
                ns.object.name(),
                &pod_labels,
                pod.object.annotation(PROXY_CONFIG_ANNOTATION),
            );
            for container in sidecar::proxy_containers(spec) {
                let image = container.image.as_deref().unwrap_or("");
                if image != expected && image != format!("{expected}-{variant}") {
                    mismatched.push(pod.object.name().to_string());
                    break;
                }
            }
        }
        if !mismatched.is_empty() {
            mismatched.sort();
            out.push(Finding::new(
                IST0158::message(mismatched),
                Some(ResourceRef::of(ns)),
            ));
        }
    }
}
