//! `kubectl mesh-doctor pod NAME`: why this pod is not meshed, crashing, or stuck at 1/2.
//!
//! Gathers the pod and what surrounds it (namespace, injection webhooks, istiod's endpoints,
//! NetworkPolicies, the root-cert ConfigMap), probes its sidecar (admin port 15000, health port
//! 15021, istio-proxy logs), then hands everything to the pure [`crate::diagnosis`] and renders.

pub mod render;

use std::time::Duration;

use clap::Args;

use crate::diagnosis::{self};
use crate::error::{Error, Result};
use crate::exit;
use crate::findings::messages::Level;
use crate::formats::duration::parse_duration;
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::probe::{self, ProbeOptions, ProbeResult};
use crate::request::Global;
use crate::source::live::{self, Cluster};
use crate::source::pod;

const AFTER_HELP_TEXT: &str = "\
What it checks:
  not meshed       why the pod has no sidecar: namespace not labelled, opted out, created
                   before the label (restart it), no injection webhook matches, no injection
                   webhook installed at all (istiod missing), hostNetwork
  starting         not ready yet, but within the startup grace (istio-proxy's readiness probe:
                   initialDelaySeconds + periodSeconds x failureThreshold, else 60s): no finding
  crash            OOMKilled (memory limit, MD0108), image cannot be pulled (MD0108), exits
                   with a code and no known log line (MD0101)
  bootstrap crash  istio-proxy crash-loops; quotes the Envoy error from its logs (MD0101)
  waiting          Envoy runs but istiod never configured it (PRE_INITIALIZING, 15021 not
                   ready, not connected); checks istiod's endpoints, NetworkPolicies on
                   port 15012, the istio-ca-root-cert ConfigMap and the token audience (MD0102);
                   a bootstrap discovery address that is not istiod's (MD0109)
  also             configuration rejected by the proxy (MD0104), certificate expired or
                   expiring (MD0105), application not ready while the proxy is LIVE (MD0106),
                   proxy unreachable (MD0107)

The proxy is reached with a port-forward through the API server (needs `create` on
pods/portforward), or with --direct on the pod IP when mesh-doctor runs inside the cluster.
Logs need `get` on pods/log. What cannot be read is reported, never fatal.

Examples:
  kubectl mesh-doctor pod web-7d4b9 -n shop
  kubectl mesh-doctor pod web-7d4b9 -n shop -o json
  kubectl mesh-doctor pod web-7d4b9 -n shop --direct --probe-timeout 2s   # inside the cluster

";

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PodFormat {
    /// Sections for people: Pod, Sidecar, Verdict, Evidence, Checked causes, Next steps
    #[default]
    Text,
    /// One JSON document with the verdict, findings, evidence, checks and raw probe results
    Json,
    /// The same document as YAML
    Yaml,
}

#[derive(Debug, Args)]
#[command(after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::POD))]
pub struct PodArgs {
    /// The pod (NAME or pod/NAME), in -n NAMESPACE or the context's namespace
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = PodFormat::Text, help_heading = "Output options")]
    pub output: PodFormat,

    /// Connect to the pod IP instead of port-forwarding through the API server (for running
    /// inside the cluster, e.g. as a Job)
    #[arg(long)]
    pub direct: bool,

    /// Time allowed for each probe request, to connect and to answer (e.g. 2s, 500ms)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub probe_timeout: Duration,

    /// The lowest finding level that makes the command exit 79
    #[arg(long, value_name = "LEVEL", value_parser = crate::flags::level_parser(), default_value = "Warning")]
    pub failure_threshold: Level,

    /// Contact the proxy: admin port, 15021 and its logs (the default)
    #[arg(long, overrides_with = "no_probe")]
    pub probe: bool,

    /// Do not contact the proxy (no port-forward, no logs): judge from the API objects only
    #[arg(long, overrides_with = "probe")]
    pub no_probe: bool,

    /// Accept a partial result: exit 0 rather than 69 when something around the pod could not
    /// be read (RBAC, errors, timeouts) and no finding reaches the failure threshold
    #[arg(long)]
    pub allow_incomplete: bool,

    #[command(flatten)]
    pub kube: crate::flags::KubeArgs,
}

use crate::source::pod::pod_name;

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
    let diagnosis = diagnosis::diagnose(&pod, &context, probe.as_ref());
    Ok(PodReport { diagnosis, probe })
}

pub async fn run(args: PodArgs, global: &Global) -> Result<u8> {
    if global.context.len() > 1 {
        return Err(Error::Usage(
            "pod examines one pod: give at most one --context".to_string(),
        ));
    }
    let name = pod_name(&args.name)?.to_string();
    let cluster = live::connect(global, global.context.first().map(String::as_str)).await?;
    let namespace = live::scope_namespace(global, Some(&cluster));
    let options = ProbeOptions {
        direct: args.direct,
        ..ProbeOptions::with_timeout(args.probe_timeout)
    };
    tracing::info!(cluster = %cluster.name, %namespace, pod = %name, "examining pod");
    let report = examine(
        &cluster,
        &namespace,
        &name,
        (!args.no_probe).then_some(&options),
    )
    .await?;
    let text = match args.output {
        PodFormat::Json => render::json_text(&report.diagnosis, report.probe.as_ref()),
        PodFormat::Yaml => crate::formats::yaml_write::to_string(&render::json(
            &report.diagnosis,
            report.probe.as_ref(),
        )),
        PodFormat::Text => {
            let styles = Styles::new(global.color.enabled(Stream::Stdout));
            render::text(&report.diagnosis, report.probe.as_ref(), &styles)
        }
    };
    write::stdout(&text).map_err(Error::Output)?;
    if report.diagnosis.fails(args.failure_threshold) {
        return Ok(exit::FINDINGS);
    }
    if report.diagnosis.incomplete() && !args.allow_incomplete {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_names() {
        assert_eq!(pod_name("web-1").unwrap(), "web-1");
        assert_eq!(pod_name("pod/web-1").unwrap(), "web-1");
        assert_eq!(pod_name("pods/web-1").unwrap(), "web-1");
        assert!(pod_name("deploy/web").is_err());
        assert!(pod_name("pod/").is_err());
    }
}
