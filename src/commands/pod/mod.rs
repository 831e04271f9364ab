//! `kubectl mesh-doctor pod NAME`: why this pod is not meshed, crashing, or stuck at 1/2.
//!
//! Gathers the pod and what surrounds it (namespace, injection webhooks, istiod's endpoints,
//! NetworkPolicies, the root-cert ConfigMap), probes its sidecar (admin port 15000, health port
//! 15021, istio-proxy logs), then hands everything to the pure [`crate::diagnosis`] and renders.

pub mod render;

use std::time::Duration;

use crate::diagnosis::{self};
use crate::error::{Error, Result};
use crate::exit;
use crate::findings::messages::Level;
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
}

/// Gathers, probes and diagnoses one pod.
pub async fn examine(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    options: Option<&ProbeOptions>,
) -> Result<PodReport> {
    let pod = pod::get_pod(cluster, namespace, name).await?;
    let (context, probe) = tokio::join!(pod::context(cluster, namespace), async {
        match options {
            Some(options) => Some(probe::probe_pod(cluster, &pod, options).await),
            None => None,
        }
    });
    let mut context = context;
    if diagnosis::is_ambient_pod(&pod, &context) {
        context.ambient = pod::ambient_context(cluster, namespace).await;
    }
    let diagnosis = diagnosis::diagnose(&pod, &context, probe.as_ref());
    Ok(PodReport { diagnosis, probe })
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
        DocumentFormat::Json => render::json_text(&report.diagnosis, report.probe.as_ref()),
        DocumentFormat::Yaml => crate::formats::yaml_write::to_string(&render::json(
            &report.diagnosis,
            report.probe.as_ref(),
        )),
        DocumentFormat::Text => {
            let styles = Styles::new(global.color.enabled(Stream::Stdout));
            render::text(&report.diagnosis, report.probe.as_ref(), &styles)
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    if report.diagnosis.fails(request.failure_threshold) {
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
