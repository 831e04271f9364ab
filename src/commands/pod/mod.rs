//! `kubectl mesh-doctor pod NAME`: why this pod is not meshed, crashing, or stuck at 1/2.
//!
//! Gathers the pod and what surrounds it (namespace, injection webhooks, istiod's endpoints,
//! NetworkPolicies, the root-cert ConfigMap), probes its sidecar (admin port 15000, health port
//! 15021, istio-proxy logs), then hands everything to the pure [`crate::diagnosis`] and renders.

pub mod render;
pub mod traffic;

use std::time::Duration;

use crate::diagnosis::{self};
use crate::error::{Error, Result};
use crate::exit;
use crate::findings::messages::Level;
use crate::kube::kind::Kind;
use crate::output::format::DocumentFormat;
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::probe::{self, ProbeOptions, ProbeResult};
use crate::request::Global;
use crate::source::cluster::{self, Cluster};
use crate::source::pod;

/// What `pod` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    /// The pod's name (without `pod/`), in the namespace of `source::cluster::scope_namespace`.
    pub pod: String,
    pub output: DocumentFormat,
    /// Reach the proxy on the pod IP rather than through a port-forward.
    pub direct: bool,
    /// Contact the proxy: admin port, 15021 and its logs.
    pub probe: bool,
    pub probe_timeout: Duration,
    /// The lowest finding level that makes the command exit 79.
    pub failure_threshold: Level,
    /// Exit 0 rather than 69 when something could not be read and nothing reaches the threshold.
    pub allow_incomplete: bool,
}

/// Everything `pod NAME` produces, for callers that want the data rather than the text.
pub struct PodReport {
    pub diagnosis: diagnosis::Diagnosis,
    pub probe: Option<ProbeResult>,
    /// The traffic configuration that applies to the pod; `Err` says why it was not read.
    pub traffic: std::result::Result<traffic::Traffic, String>,
}

impl PodReport {
    /// True when a finding of the diagnosis or of the traffic view reaches `threshold`.
    pub fn fails(&self, threshold: Level) -> bool {
        self.diagnosis.fails(threshold)
            || self
                .traffic
                .as_ref()
                .is_ok_and(|t| t.findings.iter().any(|f| f.level().reaches(threshold)))
    }
}

/// The kinds the traffic view reads: when one could not be listed, the view is incomplete.
const TRAFFIC_KINDS: &[Kind] = &[
    Kind::Services,
    Kind::Pods,
    Kind::Namespaces,
    Kind::VirtualServices,
    Kind::DestinationRules,
    Kind::Gateways,
    Kind::Sidecars,
    Kind::PeerAuthentications,
    Kind::AuthorizationPolicies,
    Kind::HttpRoutes,
    Kind::GrpcRoutes,
    Kind::TcpRoutes,
    Kind::TlsRoutes,
    Kind::Deployments,
    Kind::StatefulSets,
    Kind::DaemonSets,
    Kind::CronJobs,
];

/// Reads the pod's namespace, every namespace's Services and Istio's config, and builds the
/// traffic view.
async fn traffic_view(
    cluster: &Cluster,
    namespace: &str,
    pod: &k8s_openapi::api::core::v1::Pod,
    not_read: &mut Vec<diagnosis::NotRead>,
) -> std::result::Result<traffic::Traffic, String> {
    // The read `path` makes (every namespace's Services and Istio config, the pod namespace's
    // Pods and workloads), scoped to the pod's namespace: not every namespace's Pods.
    let mut snapshot = crate::source::live::path::snapshot(cluster, namespace)
        .await
        .map_err(|e| e.to_string())?;
    snapshot.narrow_to(namespace);
    for (kind, reason) in &snapshot.unavailable {
        if TRAFFIC_KINDS.contains(kind) {
            not_read.push(diagnosis::NotRead {
                what: format!("{kind} (for the traffic to the pod)"),
                reason: reason.clone(),
            });
        }
    }
    Ok(traffic::traffic(&snapshot, pod))
}

/// Gathers, probes and diagnoses one pod.
pub async fn examine(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    options: Option<&ProbeOptions>,
) -> Result<PodReport> {
    let pod = pod::get_pod(cluster, namespace, name).await?;
    let mut traffic_not_read = Vec::new();
    let (context, probe, traffic) = tokio::join!(
        pod::context(cluster, namespace),
        async {
            match options {
                Some(options) => Some(probe::probe_pod(cluster, &pod, options).await),
                None => None,
            }
        },
        traffic_view(cluster, namespace, &pod, &mut traffic_not_read)
    );
    let mut context = context;
    if diagnosis::is_ambient_pod(&pod, &context) {
        context.ambient = pod::ambient_context(cluster, namespace).await;
    }
    let mut diagnosis = diagnosis::diagnose(&pod, &context, probe.as_ref());
    diagnosis.not_read.extend(traffic_not_read);
    if let Err(reason) = &traffic {
        diagnosis.not_read.push(diagnosis::NotRead {
            what: "the traffic configuration of the pod".into(),
            reason: reason.clone(),
        });
    }
    if let Ok(t) = &traffic
        && !t.findings.is_empty()
    {
        let host = t.services.first().map(|s| {
            let name = s.service.rsplit('/').next().unwrap_or_default();
            format!("{name}.{namespace}")
        });
        diagnosis.next_steps.push(diagnosis::NextStep {
            text: "Change what the findings under Traffic name: requests to the pod depend on it. To walk one request from a client to the pod, hop by hop:".into(),
            command: host.map(|h| format!("kubectl mesh-doctor path CLIENT_POD {h} -n CLIENT_NAMESPACE")),
        });
    }
    Ok(PodReport {
        diagnosis,
        probe,
        traffic,
    })
}

pub async fn run(global: &Global, request: Request) -> Result<u8> {
    let name = request.pod.clone();
    let cluster = cluster::connect(global, global.context.first().map(String::as_str)).await?;
    let namespace = cluster::scope_namespace(global, Some(&cluster));
    let options = ProbeOptions {
        direct: request.direct,
        ..ProbeOptions::with_timeout(request.probe_timeout)
    };
    tracing::info!(cluster = %cluster.name, %namespace, pod = %name, "examining pod");
    let report = examine(
        &cluster,
        &namespace,
        &name,
        request.probe.then_some(&options),
    )
    .await?;
    let text = match request.output {
        DocumentFormat::Json => render::report_json_text(&report),
        DocumentFormat::Yaml => {
            crate::formats::yaml_write::to_string(&render::report_json(&report))
        }
        DocumentFormat::Text => {
            let styles = Styles::new(global.color.enabled(Stream::Stdout));
            render::report_text(&report, &styles)
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    if report.fails(request.failure_threshold) {
        return Ok(exit::FINDINGS);
    }
    if report.diagnosis.incomplete() && !request.allow_incomplete {
        let what: Vec<String> = report
            .diagnosis
            .not_read
            .iter()
            .map(|n| format!("{} ({})", n.what, n.reason))
            .collect();
        eprintln!(
            "error: the diagnosis of pod {namespace}/{name} is incomplete: could not read {}: exit {}. Give the permissions in docs/rbac.yaml, or --allow-incomplete to accept a partial result.",
            what.join("; "),
            exit::UNAVAILABLE
        );
        return Ok(exit::UNAVAILABLE);
    }
    Ok(exit::OK)
}
