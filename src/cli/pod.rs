//! `pod`'s flags, and the request they make.

use std::time::Duration;

use clap::Args;

use super::flags::{DocumentHelp, KubeArgs, document_format, level_parser};
use crate::commands::pod::Request;
use crate::error::{Error, Result};
use crate::findings::messages::Level;
use crate::formats::duration::parse_duration;
use crate::output::format::DocumentFormat;
use crate::request::Global;
use crate::source::pod::pod_name;

const AFTER_HELP_TEXT: &str = "\
What it checks:
  not meshed       why the pod has no sidecar: namespace not labelled, opted out, created
                   before the label (restart it), no injection webhook matches, no injection
                   webhook installed at all (istiod missing), hostNetwork
  ending           terminating (with the grace period left), evicted, completed or failed:
                   judged as such, never as starting; a Job pod whose application exited
                   while a classic istio-proxy keeps it running never completes (MD0110)
  ambient          a pod that asks for istio.io/dataplane-mode=ambient: captured (the CNI
                   agent's ambient.istio.io/redirection: enabled, a ready ztunnel and the CNI
                   agent on its node), or not and why (MD0111); also a sidecar (MD0112);
                   a waypoint it uses that carries no traffic (MD0113); AuthorizationPolicies
                   that ztunnel does not enforce as written (MD0403, MD0404);
                   RequestAuthentications, Telemetries, WasmPlugins and routes for it that
                   no proxy applies without a waypoint (MD0412, MD0413)
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
  traffic          the configuration that decides how requests reach the pod, as istioctl x
                   describe pod shows it: Services and ports (pod port, protocol, the mTLS it
                   accepts, what clients send), DestinationRule and subsets, VirtualService
                   routes and weights, PeerAuthentications, AuthorizationPolicies, Sidecar
                   resource, gateways; and the coherence findings about them (MD04xx)

The proxy is reached with a port-forward through the API server (needs `create` on
pods/portforward), or with --direct on the pod IP when mesh-doctor runs inside the cluster.
Logs need `get` on pods/log. What cannot be read is reported, never fatal.

Examples:
  kubectl mesh-doctor pod web-7d4b9 -n shop
  kubectl mesh-doctor pod web-7d4b9 -n shop -o json
  kubectl mesh-doctor pod web-7d4b9 -n shop --direct --probe-timeout 2s   # inside the cluster

";

/// The values of `pod -o`.
const OUTPUT: DocumentHelp = DocumentHelp {
    text: "Sections for people: Pod, Sidecar, Verdict, Evidence, Checked causes, Traffic, Next steps",
    json: "One JSON document with the verdict, findings, evidence, checks and raw probe results",
    yaml: "The same document as YAML",
};

#[derive(Debug, Args)]
#[command(after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::POD))]
pub struct PodArgs {
    /// The pod (NAME or pod/NAME), in -n NAMESPACE or the context's namespace
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Output format
    #[arg(short = 'o', long, value_parser = document_format(OUTPUT), default_value = "text", help_heading = "Output options")]
    pub output: DocumentFormat,

    /// Connect to the pod IP instead of port-forwarding through the API server (for running
    /// inside the cluster, e.g. as a Job)
    #[arg(long)]
    pub direct: bool,

    /// Time allowed for each probe request, to connect and to answer (e.g. 2s, 500ms)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub probe_timeout: Duration,

    /// The lowest finding level that makes the command exit 79
    #[arg(long, value_name = "LEVEL", value_parser = level_parser(), default_value = "Warning")]
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
    pub kube: KubeArgs,
}

impl PodArgs {
    /// The request: one pod on one cluster, probed unless --no-probe.
    pub fn into_request(self, global: &Global) -> Result<Request> {
        if global.context.len() > 1 {
            return Err(Error::Usage(
                "pod examines one pod: give at most one --context".to_string(),
            ));
        }
        Ok(Request {
            pod: pod_name(&self.name)?.to_string(),
            output: self.output,
            direct: self.direct,
            probe: !self.no_probe,
            probe_timeout: self.probe_timeout,
            failure_threshold: self.failure_threshold,
            allow_incomplete: self.allow_incomplete,
        })
    }
}
