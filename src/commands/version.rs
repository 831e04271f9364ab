//! `kubectl mesh-doctor version`: the client's version, each control-plane revision (istiod's
//! image version and replicas) and the data-plane proxy versions with their counts, like
//! `istioctl version`.
//!
//! Versions come from image tags: istiod's `discovery` container, and the `istio-proxy`
//! container (classic, or a native sidecar in `initContainers`) of every pod.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::exit;
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::istio::injection::{REVISION_LABEL, STATUS_ANNOTATION};
use crate::istio::{istiod, sidecar};
use crate::kube::snapshot::Object;
use crate::output::format::DocumentFormat;
use crate::output::json::document;
use crate::output::write;
use crate::request::Global;
use crate::source::cluster::{self, Cluster, ListError};

/// What `version` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    /// Only the client's version: no cluster is contacted.
    pub client_only: bool,
    pub output: DocumentFormat,
}

/// One istiod Deployment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlane {
    pub revision: String,
    pub namespace: String,
    pub deployment: String,
    pub image: String,
    /// The image tag; `None` when the image has neither tag nor digest.
    pub version: Option<String>,
    pub replicas: i32,
    pub ready_replicas: i32,
}

/// The proxies of one version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DataPlane {
    pub version: String,
    pub proxies: usize,
    /// The revisions that injected them (from `sidecar.istio.io/status` or `istio.io/rev`).
    pub revisions: BTreeSet<String>,
}

/// What one cluster said; a part that could not be read carries the reason.
#[derive(Clone, Debug)]
pub struct ClusterVersions {
    pub context: String,
    pub server: String,
    pub control_plane: Result<Vec<ControlPlane>, String>,
    pub data_plane: Result<Vec<DataPlane>, String>,
}

/// The istiod Deployments among `deployments`, sorted by revision.
pub fn control_plane(deployments: &[Deployment]) -> Vec<ControlPlane> {
    let mut rows: Vec<ControlPlane> = deployments
        .iter()
        .filter_map(|d| {
            let spec = d.spec.as_ref()?;
            let template = &spec.template;
            let pod_spec = template.spec.as_ref();
            let template_labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
            if !istiod::is_istiod(d.metadata.labels.as_ref(), template_labels, pod_spec) {
                return None;
            }
            let image = pod_spec
                .and_then(istiod::discovery_container)
                .and_then(|c| c.image.clone())
                .unwrap_or_default();
            Some(ControlPlane {
                revision: istiod::revision_of(d.metadata.labels.as_ref()),
                namespace: d.namespace().unwrap_or("").to_string(),
                deployment: d.name().to_string(),
                version: istiod::image_version(&image),
                image,
                replicas: spec.replicas.unwrap_or(1),
                ready_replicas: d
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0),
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        (&a.revision, &a.namespace, &a.deployment).cmp(&(&b.revision, &b.namespace, &b.deployment))
    });
    rows
}

/// istiod found as `proxy-status` finds it: its pods (label app=istiod), for a control plane
/// that has no Deployment (istiod run by another controller, or outside the cluster with a pod
/// object). One row per (namespace, revision); READY counts running ready pods.
pub fn control_plane_from_pods(pods: &[Pod]) -> Vec<ControlPlane> {
    let mut by_revision: BTreeMap<(String, String), (ControlPlane, Vec<String>)> = BTreeMap::new();
    for pod in pods {
        if !istiod::is_istiod(pod.metadata.labels.as_ref(), None, None)
            || pod.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let revision = istiod::revision_of(pod.metadata.labels.as_ref());
        let namespace = pod.namespace().unwrap_or("").to_string();
        let image = pod
            .spec
            .as_ref()
            .and_then(istiod::discovery_container)
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        let status = pod.status.as_ref();
        let ready = status.and_then(|s| s.phase.as_deref()) == Some("Running")
            && status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let (row, names) = by_revision
            .entry((revision.clone(), namespace.clone()))
            .or_insert_with(|| {
                (
                    ControlPlane {
                        revision,
                        namespace,
                        deployment: String::new(),
                        version: istiod::image_version(&image),
                        image,
                        replicas: 0,
                        ready_replicas: 0,
                    },
                    Vec::new(),
                )
            });
        row.replicas += 1;
        row.ready_replicas += i32::from(ready);
        names.push(pod.name().to_string());
    }
    by_revision
        .into_values()
        .map(|(mut row, names)| {
            row.deployment = format!("pod {}", names.join(","));
            row
        })
        .collect()
}

/// "1 proxy", "2 proxies".
fn proxies(n: usize) -> String {
    if n == 1 {
        "1 proxy".to_string()
    } else {
        format!("{n} proxies")
    }
}

/// The revision that injected a pod's proxy.
fn proxy_revision(pod: &Pod) -> Option<String> {
    pod.annotation(STATUS_ANNOTATION)
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v.get("revision")?.as_str().map(str::to_string))
        .or_else(|| pod.label(REVISION_LABEL).map(str::to_string))
}

/// Running pods with an istio-proxy container, grouped by proxy version (most proxies first).
/// Pending, finished and deleted pods run no proxy and are not counted.
pub fn data_plane(pods: &[Pod]) -> Vec<DataPlane> {
    let mut by_version: BTreeMap<String, DataPlane> = BTreeMap::new();
    for pod in pods {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if phase != Some("Running") || pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(proxy) = pod.spec.as_ref().and_then(sidecar::proxy_container) else {
            continue;
        };
        let version = istiod::image_version(proxy.image()).unwrap_or_else(|| "unknown".to_string());
        let row = by_version
            .entry(version.clone())
            .or_insert_with(|| DataPlane {
                version,
                proxies: 0,
                revisions: BTreeSet::new(),
            });
        row.proxies += 1;
        if let Some(rev) = proxy_revision(pod) {
            row.revisions.insert(rev);
        }
    }
    let mut rows: Vec<DataPlane> = by_version.into_values().collect();
    rows.sort_by(|a, b| {
        b.proxies
            .cmp(&a.proxies)
            .then_with(|| a.version.cmp(&b.version))
    });
    rows
}

/// The rows as a plain table, indented by two spaces (the first row is the header).
fn table(rows: &[Vec<String>]) -> String {
    let mut table = crate::output::table::plain(false);
    for row in rows {
        table.add_row(row);
    }
    crate::output::table::render(table, "  ", 2)
}

/// The text output.
pub fn render_text(clusters: &[ClusterVersions]) -> String {
    let mut out = format!("client version: {}\n", env!("CARGO_PKG_VERSION"));
    for c in clusters {
        let scope = if clusters.len() > 1 {
            format!(" [{}]", c.context)
        } else {
            String::new()
        };
        match &c.control_plane {
            Err(reason) => {
                out.push_str(&format!("control plane{scope}: cannot be read: {reason}\n"))
            }
            Ok(rows) if rows.is_empty() => out.push_str(&format!(
                "control plane{scope}: no istiod found (no Deployment and no pod with label app=istiod)\n"
            )),
            Ok(rows) => {
                let versions: BTreeSet<&str> = rows
                    .iter()
                    .map(|r| r.version.as_deref().unwrap_or("unknown"))
                    .collect();
                out.push_str(&format!(
                    "control plane version{scope}: {}\n",
                    versions.into_iter().collect::<Vec<_>>().join(", ")
                ));
                let mut cells = vec![vec![
                    "REVISION".to_string(),
                    "DEPLOYMENT".to_string(),
                    "VERSION".to_string(),
                    "READY".to_string(),
                    "IMAGE".to_string(),
                ]];
                for r in rows {
                    cells.push(vec![
                        r.revision.clone(),
                        format!("{}/{}", r.namespace, r.deployment),
                        r.version.clone().unwrap_or_else(|| "unknown".to_string()),
                        format!("{}/{}", r.ready_replicas, r.replicas),
                        r.image.clone(),
                    ]);
                }
                out.push_str(&table(&cells));
            }
        }
        match &c.data_plane {
            Err(reason) => out.push_str(&format!("data plane{scope}: cannot be read: {reason}\n")),
            Ok(rows) if rows.is_empty() => out.push_str(&format!(
                "data plane version{scope}: none (no pod runs an istio-proxy)\n"
            )),
            Ok(rows) => {
                let summary: Vec<String> = rows
                    .iter()
                    .map(|r| format!("{} ({})", r.version, proxies(r.proxies)))
                    .collect();
                out.push_str(&format!(
                    "data plane version{scope}: {}\n",
                    summary.join(", ")
                ));
                let mut cells = vec![vec![
                    "VERSION".to_string(),
                    "PROXIES".to_string(),
                    "REVISIONS".to_string(),
                ]];
                for r in rows {
                    let revisions = if r.revisions.is_empty() {
                        "-".to_string()
                    } else {
                        r.revisions.iter().cloned().collect::<Vec<_>>().join(",")
                    };
                    cells.push(vec![r.version.clone(), r.proxies.to_string(), revisions]);
                }
                out.push_str(&table(&cells));
            }
        }
    }
    out
}

/// The JSON output: the client's version, and per cluster its control and data plane (or why
/// one could not be read).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionJson<'a> {
    client_version: ClientVersion,
    #[serde(skip_serializing_if = "Option::is_none")]
    clusters: Option<Vec<ClusterJson<'a>>>,
}

#[derive(Serialize)]
struct ClientVersion {
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClusterJson<'a> {
    context: &'a str,
    server: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    control_plane: Option<&'a [ControlPlane]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    control_plane_error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_plane: Option<&'a [DataPlane]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_plane_error: Option<&'a str>,
}

impl<'a> ClusterJson<'a> {
    fn of(c: &'a ClusterVersions) -> ClusterJson<'a> {
        ClusterJson {
            context: &c.context,
            server: &c.server,
            control_plane: c.control_plane.as_deref().ok(),
            control_plane_error: c.control_plane.as_ref().err().map(String::as_str),
            data_plane: c.data_plane.as_deref().ok(),
            data_plane_error: c.data_plane.as_ref().err().map(String::as_str),
        }
    }
}

/// The JSON output (two spaces, like the other commands' JSON).
pub fn render_json(clusters: Option<&[ClusterVersions]>) -> String {
    document(&VersionJson {
        client_version: ClientVersion {
            version: env!("CARGO_PKG_VERSION"),
        },
        clusters: clusters.map(|clusters| clusters.iter().map(ClusterJson::of).collect()),
    })
}

/// istiod Deployments in every namespace (label app=istiod), or in istio-system when listing
/// every namespace is not allowed.
async fn istiod_deployments(cluster: &Cluster) -> Result<Vec<Deployment>, ListError> {
    let params = ListParams::default().labels("app=istiod");
    let list = |api: Api<Deployment>| {
        let params = params.clone();
        async move { cluster.list_selected(api, &params).await }
    };
    match list(Api::all(cluster.client.clone())).await {
        Err(ListError::Denied(_)) => {
            list(Api::namespaced(cluster.client.clone(), ISTIO_NAMESPACE)).await
        }
        other => other,
    }
}

/// istiod's pods (label app=istiod) in every namespace, or in istio-system when listing every
/// namespace is not allowed: the way `proxy-status` finds istiod.
async fn istiod_pods(cluster: &Cluster) -> Result<Vec<Pod>, ListError> {
    let params = ListParams::default().labels("app=istiod");
    let list = |api: Api<Pod>| {
        let params = params.clone();
        async move { cluster.list_selected(api, &params).await }
    };
    match list(Api::all(cluster.client.clone())).await {
        Err(ListError::Denied(_)) => {
            list(Api::namespaced(cluster.client.clone(), ISTIO_NAMESPACE)).await
        }
        other => other,
    }
}

async fn read_cluster(cluster: &Cluster, namespace: Option<&str>) -> Result<ClusterVersions> {
    let (deployments, pods) =
        tokio::join!(istiod_deployments(cluster), cluster.list::<Pod>(namespace));
    fn part<T>(
        result: Result<Vec<T>, ListError>,
        stop: &mut Option<ListError>,
    ) -> Result<Vec<T>, String> {
        result.map_err(|e| match e {
            ListError::Denied(reason) => reason,
            other => {
                let reason = other.reason().to_string();
                stop.get_or_insert(other);
                reason
            }
        })
    }
    let mut unreachable = None;
    let mut control = part(deployments, &mut unreachable).map(|d| control_plane(&d));
    // No istiod Deployment (or none readable): find istiod by its pods, as proxy-status does.
    if unreachable.is_none()
        && !matches!(&control, Ok(rows) if !rows.is_empty())
        && let Ok(pods) = istiod_pods(cluster).await
    {
        let rows = control_plane_from_pods(&pods);
        if !rows.is_empty() || control.is_err() {
            control = Ok(rows);
        }
    }
    let data = part(pods, &mut unreachable).map(|p| data_plane(&p));
    match unreachable {
        Some(other @ (ListError::Failed(_) | ListError::Deadline(_))) => {
            return Err(cluster.error(other, "get", "the versions", None));
        }
        Some(other) => return Err(cluster.unreachable(other.reason().to_string())),
        None => {}
    }
    if let (Err(a), Err(b)) = (&control, &data) {
        return Err(Error::Cluster(format!(
            "nothing could be read from {} ({}): deployments: {a}; pods: {b}",
            cluster.name, cluster.server
        )));
    }
    for (what, result) in [
        ("istiod deployments", control.as_ref().err()),
        ("pods", data.as_ref().err()),
    ] {
        if let Some(reason) = result {
            eprintln!("warning: cannot list {what} in {}: {reason}", cluster.name);
        }
    }
    Ok(ClusterVersions {
        context: cluster.name.clone(),
        server: cluster.server.clone(),
        control_plane: control,
        data_plane: data,
    })
}

pub async fn run(global: &Global, request: Request) -> Result<u8> {
    if request.client_only {
        let text = match request.output {
            DocumentFormat::Text => format!("client version: {}\n", env!("CARGO_PKG_VERSION")),
            DocumentFormat::Json => render_json(None),
            DocumentFormat::Yaml => crate::formats::yaml_write::from_json_text(&render_json(None)),
        };
        write::stdout(&text).map_err(Error::Output)?;
        return Ok(exit::OK);
    }
    let contexts: Vec<Option<&str>> = if global.context.is_empty() {
        vec![None]
    } else {
        global.context.iter().map(|c| Some(c.as_str())).collect()
    };
    let mut clusters = Vec::new();
    let mut failure = None;
    for context in contexts {
        let result = match cluster::connect(global, context).await {
            Ok(cluster) => {
                // -n narrows the data plane to one namespace; without it, every namespace.
                let namespace = global.namespace.clone().filter(|n| !n.is_empty());
                read_cluster(&cluster, namespace.as_deref()).await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(c) => clusters.push(c),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    let text = match request.output {
        DocumentFormat::Text => render_text(&clusters),
        DocumentFormat::Json => render_json(Some(&clusters)),
        DocumentFormat::Yaml => {
            crate::formats::yaml_write::from_json_text(&render_json(Some(&clusters)))
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    if let Some(e) = failure {
        return Err(e);
    }
    // What could not be read is not a clean answer: the versions shown are partial.
    let missing: Vec<String> = clusters
        .iter()
        .flat_map(|c| {
            [
                ("istiod deployments", c.control_plane.as_ref().err()),
                ("pods", c.data_plane.as_ref().err()),
            ]
            .into_iter()
            .filter_map(move |(what, e)| e.map(|e| format!("{what} in {}: {e}", c.context)))
        })
        .collect();
    if !missing.is_empty() {
        return Err(Error::Cluster(format!(
            "the versions are incomplete: cannot list {}",
            missing.join("; ")
        )));
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(yaml: &str) -> Deployment {
        let doc = crate::formats::yaml::parse_stream(yaml)
            .unwrap()
            .remove(0)
            .value;
        serde_json::from_value(doc).unwrap()
    }

    fn pod(image: &str, native: bool, revision: &str) -> Pod {
        let container = json!({"name": "istio-proxy", "image": image});
        let spec = if native {
            let mut c = container;
            c["restartPolicy"] = "Always".into();
            json!({"containers": [{"name": "app", "image": "nginx"}], "initContainers": [c]})
        } else {
            json!({"containers": [{"name": "app", "image": "nginx"}, container]})
        };
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "shop",
                "annotations": {"sidecar.istio.io/status": format!("{{\"revision\":\"{revision}\"}}")}},
            "spec": spec,
            "status": {"phase": "Running"},
        }))
        .unwrap()
    }

    #[test]
    fn only_running_proxies_are_counted() {
        let mut pending = pod("istio/proxyv2:1.30.0", false, "default");
        pending.status.as_mut().unwrap().phase = Some("Pending".into());
        let rows = data_plane(&[pending, pod("istio/proxyv2:1.30.0", false, "default")]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].proxies, 1);
    }

    #[test]
    fn istiod_without_a_deployment_is_found_by_its_pods() {
        let istiod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "istiod-0", "namespace": "istio-system", "labels": {"app": "istiod"}},
            "spec": {"containers": [{"name": "discovery", "image": "istio/pilot:1.31.0"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap();
        let rows = control_plane_from_pods(&[istiod, pod("istio/proxyv2:1.31.0", false, "x")]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].deployment, "pod istiod-0");
        assert_eq!(rows[0].version.as_deref(), Some("1.31.0"));
        assert_eq!((rows[0].ready_replicas, rows[0].replicas), (1, 1));
        let text = render_text(&[ClusterVersions {
            context: "c".into(),
            server: "s".into(),
            control_plane: Ok(rows),
            data_plane: Ok(Vec::new()),
        }]);
        assert!(text.contains("control plane version: 1.31.0"), "{text}");
    }

    #[test]
    fn control_plane_rows() {
        let d = deployment(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: istiod-canary, namespace: istio-system, labels: {app: istiod, istio.io/rev: canary}}\n\
             spec:\n  replicas: 2\n  selector: {matchLabels: {app: istiod}}\n  template:\n    metadata: {labels: {app: istiod}}\n    spec:\n      containers:\n      - {name: discovery, image: istio/pilot:1.31.0}\n\
             status: {readyReplicas: 1}\n",
        );
        let other = deployment(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {}\n  template:\n    spec:\n      containers:\n      - {name: web, image: nginx:1.27}\n",
        );
        let rows = control_plane(&[other, d]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].revision, "canary");
        assert_eq!(rows[0].version.as_deref(), Some("1.31.0"));
        assert_eq!((rows[0].ready_replicas, rows[0].replicas), (1, 2));
    }

    #[test]
    fn data_plane_rows_group_by_version() {
        let pods = [
            pod("istio/proxyv2:1.30.3", false, "default"),
            pod("istio/proxyv2:1.30.3", true, "stable"),
            pod("istio/proxyv2:1.29.1-distroless", false, "old"),
        ];
        let rows = data_plane(&pods);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].version, "1.30.3");
        assert_eq!(rows[0].proxies, 2);
        assert_eq!(
            rows[0].revisions.iter().cloned().collect::<Vec<_>>(),
            ["default", "stable"]
        );
        assert_eq!(rows[1].version, "1.29.1");
        let text = render_text(&[ClusterVersions {
            context: "c".into(),
            server: "s".into(),
            control_plane: Ok(Vec::new()),
            data_plane: Ok(rows),
        }]);
        assert!(
            text.contains("data plane version: 1.30.3 (2 proxies), 1.29.1 (1 proxy)"),
            "{text}"
        );
        assert!(text.contains("control plane: no istiod found"), "{text}");
    }

    /// The JSON document, byte for byte: the client alone, and two clusters, one read whole
    /// (an image without a tag, proxies of two revisions) and one that could not be read.
    #[test]
    fn json_is_pinned() {
        let pin = |text: String| text.replace(env!("CARGO_PKG_VERSION"), "[version]");
        insta::assert_snapshot!("json_client", pin(render_json(None)));
        let clusters = [
            ClusterVersions {
                context: "kind-a".into(),
                server: "https://127.0.0.1:6443".into(),
                control_plane: Ok(vec![
                    ControlPlane {
                        revision: "default".into(),
                        namespace: "istio-system".into(),
                        deployment: "istiod".into(),
                        image: "docker.io/istio/pilot:1.24.0".into(),
                        version: Some("1.24.0".into()),
                        replicas: 2,
                        ready_replicas: 1,
                    },
                    ControlPlane {
                        revision: "canary".into(),
                        namespace: "istio-system".into(),
                        deployment: "istiod-canary".into(),
                        image: "registry/pilot".into(),
                        version: None,
                        replicas: 1,
                        ready_replicas: 1,
                    },
                ]),
                data_plane: Ok(vec![DataPlane {
                    version: "1.24.0".into(),
                    proxies: 3,
                    revisions: ["canary".to_string(), "default".to_string()].into(),
                }]),
            },
            ClusterVersions {
                context: "kind-b".into(),
                server: "https://10.0.0.1".into(),
                control_plane: Err("forbidden".into()),
                data_plane: Err("timed out".into()),
            },
        ];
        insta::assert_snapshot!("json_clusters", pin(render_json(Some(&clusters))));
    }
}
