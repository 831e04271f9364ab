//! One pod and what is around it, read from the cluster: the pod itself, and the
//! [`PodContext`] its diagnosis needs (namespace, injection webhooks, istiod's EndpointSlices,
//! NetworkPolicies, root-cert ConfigMap). Shared by `pod`, `bootstrap explain` and `analyze`'s
//! runtime checks; a read that fails is recorded as unknown, never fatal.

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;

use crate::diagnosis::{AmbientContext, Lookup, PROXY_ONLY_CONFIG, PodContext};
use crate::error::{Error, Result};
use crate::istio::ambient::{CNI_SELECTOR, ZTUNNEL_SELECTOR};
use crate::istio::constants::{ISTIO_NAMESPACE, ROOT_CERT_CONFIG_MAP};
use crate::istio::waypoint::GATEWAY_NAME_LABEL;
use crate::kube::kind::Kind;
use crate::kube::snapshot::ConfigObject;
use crate::kube::snapshot::Located;
use crate::source::cluster::{Cluster, ListError};

/// A lookup of one object: found, missing (404), or unknown (denied, unreachable).
pub fn lookup<T>(result: std::result::Result<Option<T>, ListError>) -> Lookup<T> {
    match result {
        Ok(Some(v)) => Lookup::Found(v),
        Ok(None) => Lookup::Missing,
        Err(e) => Lookup::Unknown(e.reason().to_string()),
    }
}

pub fn lookup_list<T>(result: std::result::Result<Vec<T>, ListError>) -> Lookup<Vec<T>> {
    match result {
        Ok(v) => Lookup::Found(v),
        Err(e) => Lookup::Unknown(e.reason().to_string()),
    }
}

/// Reads what surrounds the pod, concurrently; what cannot be read is `Unknown`.
pub async fn context(cluster: &Cluster, namespace: &str) -> PodContext {
    let c = cluster;
    let istiod_selector = kube::api::ListParams::default().labels("app=istiod");
    let istiod_pods = c.list_selected(
        Api::<Pod>::namespaced(c.client.clone(), ISTIO_NAMESPACE),
        &istiod_selector,
    );
    let ztunnel_selector = kube::api::ListParams::default().labels(ZTUNNEL_SELECTOR);
    let ztunnel_pods = c.list_selected(Api::<Pod>::all(c.client.clone()), &ztunnel_selector);
    let cni_selector = kube::api::ListParams::default().labels(CNI_SELECTOR);
    let cni_pods = c.list_selected(Api::<Pod>::all(c.client.clone()), &cni_selector);
    let (ns, istio_ns, webhooks, slices, policies, root_cert, istiods, mesh, ztunnels, cnis) = tokio::join!(
        c.get_opt(Api::<Namespace>::all(c.client.clone()), namespace),
        c.get_opt(Api::<Namespace>::all(c.client.clone()), ISTIO_NAMESPACE),
        c.list_cluster::<MutatingWebhookConfiguration>(),
        c.list::<EndpointSlice>(Some(ISTIO_NAMESPACE)),
        c.list::<NetworkPolicy>(Some(namespace)),
        c.get_opt(
            Api::<ConfigMap>::namespaced(c.client.clone(), namespace),
            ROOT_CERT_CONFIG_MAP
        ),
        istiod_pods,
        c.get_opt(
            Api::<ConfigMap>::namespaced(c.client.clone(), ISTIO_NAMESPACE),
            "istio"
        ),
        ztunnel_pods,
        cni_pods,
    );
    PodContext {
        namespace: lookup(ns),
        webhooks: match webhooks {
            Ok(items) => Lookup::Found(items.into_iter().map(Located::new).collect()),
            Err(e) => Lookup::Unknown(e.reason().to_string()),
        },
        istio_endpoint_slices: lookup_list(slices),
        istio_namespace: lookup(istio_ns),
        network_policies: lookup_list(policies),
        root_cert: lookup(root_cert),
        istiod_pods: lookup_list(istiods),
        mesh_config: lookup(mesh),
        ztunnel_pods: lookup_list(ztunnels),
        cni_pods: lookup_list(cnis),
        ambient: AmbientContext::default(),
        now: Some(jiff::Timestamp::now()),
    }
}

/// Reads what an ambient pod's waypoints and policies are judged from: the Services of its
/// namespace, the Gateway API Gateways and AuthorizationPolicies (through the same discovery
/// and lists as `analyze`: a kind the cluster does not serve has no object), and the pods of
/// Gateways.
pub async fn ambient_context(cluster: &Cluster, namespace: &str) -> AmbientContext {
    let c = cluster;
    let gateway_pods = kube::api::ListParams::default().labels(GATEWAY_NAME_LABEL);
    let (services, read, pods) = tokio::join!(
        c.list::<Service>(Some(namespace)),
        crate::source::live::config::list(c, false),
        c.list_selected(Api::<Pod>::all(c.client.clone()), &gateway_pods),
    );
    let broken = read
        .unreachable
        .clone()
        .or_else(|| read.failed.clone())
        .or_else(|| {
            read.late
                .map(|l| format!("the command's deadline passed while reading {l}"))
        });
    let of_kind = |list: Kind| -> Lookup<Vec<ConfigObject>> {
        if let Some(reason) = &broken {
            return Lookup::Unknown(reason.clone());
        }
        if let Some(reason) = read.unavailable.get(&list) {
            return Lookup::Unknown(format!("cannot list {list}: {reason}"));
        }
        Lookup::Found(
            read.objects
                .iter()
                .filter(|o| {
                    crate::istio::config::config_kind(&o.object.api_version, &o.object.kind)
                        == Some(list)
                })
                .map(|o| o.object.clone())
                .collect(),
        )
    };
    AmbientContext {
        services: lookup_list(services),
        gateways: of_kind(Kind::KubernetesGateways),
        gateway_pods: lookup_list(pods),
        authorization_policies: of_kind(Kind::AuthorizationPolicies),
        proxy_only_config: proxy_only(&read, broken.as_deref()),
        root_namespace: ISTIO_NAMESPACE.to_string(),
    }
}

/// The objects of [`PROXY_ONLY_CONFIG`] read by the same lists; unknown when one list failed.
fn proxy_only(
    read: &crate::source::live::config::Read,
    broken: Option<&str>,
) -> Lookup<Vec<ConfigObject>> {
    if let Some(reason) = broken {
        return Lookup::Unknown(reason.to_string());
    }
    for list in PROXY_ONLY_CONFIG {
        if let Some(reason) = read.unavailable.get(list) {
            return Lookup::Unknown(format!("cannot list {list}: {reason}"));
        }
    }
    Lookup::Found(
        read.objects
            .iter()
            .filter(|o| {
                crate::istio::config::config_kind(&o.object.api_version, &o.object.kind)
                    .is_some_and(|k| PROXY_ONLY_CONFIG.contains(&k))
            })
            .map(|o| o.object.clone())
            .collect(),
    )
}

/// `NAME`, or `TYPE/NAME` with any name kubectl takes for pods (`pod/`, `pods/`, `po/`).
pub fn pod_name(text: &str) -> Result<&str> {
    let name = match text.split_once('/') {
        Some((typed, name)) if Kind::from_typed(typed) == Some(Kind::Pods) => name,
        _ => text,
    };
    if name.is_empty() || name.contains('/') {
        return Err(Error::InvalidValue {
            what: "pod name",
            value: text.to_string(),
            why: "give NAME or pod/NAME, and the namespace with -n".to_string(),
        });
    }
    Ok(name)
}

/// Reads one pod: a missing pod is bad input (65), a forbidden one an access problem (69).
pub async fn get_pod(cluster: &Cluster, namespace: &str, name: &str) -> Result<Pod> {
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), namespace);
    match cluster.get_opt(api, name).await {
        Ok(Some(pod)) => Ok(pod),
        Ok(None) => Err(Error::PodNotFound {
            pod: name.to_string(),
            namespace: namespace.to_string(),
        }),
        Err(ListError::Unreachable(reason)) => Err(cluster.unreachable(reason)),
        Err(other) => Err(cluster.error(other, "get", &format!("pod {name}"), Some(namespace))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(lookup::<u8>(Ok(None)), Lookup::Missing);
        assert_eq!(lookup(Ok(Some(1u8))), Lookup::Found(1));
        assert_eq!(
            lookup::<u8>(Err(ListError::Denied("forbidden".into()))),
            Lookup::Unknown("forbidden".into())
        );
    }

    #[test]
    fn pod_names() {
        assert_eq!(pod_name("web-1").unwrap(), "web-1");
        assert_eq!(pod_name("pod/web-1").unwrap(), "web-1");
        assert_eq!(pod_name("pods/web-1").unwrap(), "web-1");
        assert_eq!(pod_name("po/web-1").unwrap(), "web-1");
        assert!(pod_name("deploy/web").is_err());
        assert!(pod_name("pod/").is_err());
    }
}
