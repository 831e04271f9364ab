//! `path`'s flags, and the request they make.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::flags::{DocumentHelp, KubeArgs, document_format};
use crate::commands::path::{Expect, Request, SourceRef};
use crate::error::{Error, Result};
use crate::istio::routing::HttpRequest;
use crate::kube::kind::Kind;
use crate::kube::snapshot::WorkloadKind;
use crate::output::format::DocumentFormat;
use crate::request::Global;

const AFTER_HELP_TEXT: &str = "\
The hops, in the order the request meets them (the walk stops at the first that fails):
  source       the client's sidecar is ready; its Sidecar resource's egress hosts and the
               outbound traffic policy (REGISTRY_ONLY to an unknown host: 502, BlackHoleCluster)
  route        the VirtualService for the host seen from the client (exportTo, gateways mesh),
               the http/tcp route the request takes (no route: 404 NR), fault aborts (FI)
  cluster      the destination host, port and subset; the DestinationRule that applies (a
               missing subset or host: 503 NC)
  endpoints    ready endpoints of the Service in the subset (none: 503 UH no healthy upstream)
  transport    the TLS the client sends (DestinationRule, else auto mTLS) against the server's
               PeerAuthentication at the workload port (a mismatch: reset, MD0401/MD0402)
  destination  the server's AuthorizationPolicies, CUSTOM, DENY then ALLOW, for this client's
               identity, method and path (403 RBAC: access denied)
  network      NetworkPolicies: the client's egress and the server's ingress at the port

Live, the cluster is read (every namespace, and the target's EndpointSlices), and the client's
Envoy through a port-forward to its admin port (the proxy hop: the cluster, its endpoints'
health and ejections, its counters and TLS, against the configuration; --no-probe skips it).
mesh-doctor never sends traffic and never execs into a pod. With -f the files alone are walked: the
workloads in them stand for the endpoints, and a workload's pod template for the client.

Examples:
  kubectl mesh-doctor path frontend-7d4b9 orders:8080 -n shop
  kubectl mesh-doctor path deploy/frontend orders.shop --path /api/v1/items --method POST
  kubectl mesh-doctor path deploy/frontend orders:8080 -n shop -f k8s/ -R --expect reachable

";

/// The values of `path -o`.
const OUTPUT: DocumentHelp = DocumentHelp {
    text: "One block per port, one line per hop",
    json: "The walk as one JSON document",
    yaml: "The same document as YAML",
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExpectArg {
    /// Exit 79 unless every hop lets the request through
    Reachable,
    /// Exit 79 unless a hop stops the request
    Blocked,
}

#[derive(Debug, Args)]
#[command(after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::PATH))]
pub struct PathArgs {
    /// The client: a pod (NAME or pod/NAME) or a workload (deploy/NAME, sts/NAME, ds/NAME),
    /// in -n NAMESPACE or the context's namespace
    #[arg(value_name = "SOURCE")]
    pub source: String,

    /// The target: a Service (name, name.ns, name.ns.svc.cluster.local), another host, or a pod
    /// (pod/NAME[.NAMESPACE], a request to its IP), with :PORT for one port (else every port of
    /// the target)
    #[arg(value_name = "TARGET[:PORT]")]
    pub target: String,

    /// The request's path (with its query string)
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/",
        help_heading = "Request options"
    )]
    pub path: String,

    /// The request's method
    #[arg(
        long,
        value_name = "METHOD",
        default_value = "GET",
        help_heading = "Request options"
    )]
    pub method: String,

    /// A request header, NAME=VALUE or "NAME: VALUE" (repeatable)
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME=VALUE",
        help_heading = "Request options"
    )]
    pub headers: Vec<String>,

    /// Walk these manifest files or directories instead of the cluster (- for stdin)
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filename: Vec<PathBuf>,

    /// Read directories recursively
    #[arg(short = 'R', long)]
    pub recursive: bool,

    /// The largest input file (or stdin) read, e.g. 64Mi; a larger one is exit 65
    #[arg(long, value_name = "SIZE", value_parser = crate::formats::duration::parse_size,
          default_value = crate::source::files::DEFAULT_MAX_INPUT_FLAG)]
    pub max_input_size: u64,

    /// Output format
    #[arg(short = 'o', long, value_parser = document_format(OUTPUT), default_value = "text", help_heading = "Output options")]
    pub output: DocumentFormat,

    /// Read the client's Envoy live, the proxy hop (the default)
    #[arg(long, overrides_with = "no_probe")]
    pub probe: bool,

    /// Do not read the client's Envoy (no port-forward): walk the configuration only
    #[arg(long, overrides_with = "probe")]
    pub no_probe: bool,

    /// What the walk must find, for CI: exit 79 when it disagrees
    #[arg(long, value_enum, value_name = "OUTCOME")]
    pub expect: Option<ExpectArg>,

    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `deploy/NAME` and the other workload spellings kubectl takes; a bare name or `pod/NAME` is
/// a pod.
pub fn source_ref(text: &str) -> Result<SourceRef> {
    let Some((kind, name)) = text.split_once('/') else {
        return check_name(text).map(|n| SourceRef::Pod(n.to_string()));
    };
    let name = check_name(name)?.to_string();
    let kind = match (Kind::from_typed(kind), kind) {
        (Some(Kind::Pods), _) => return Ok(SourceRef::Pod(name)),
        (Some(Kind::Deployments), _) => WorkloadKind::Deployment,
        (Some(Kind::StatefulSets), _) => WorkloadKind::StatefulSet,
        (Some(Kind::DaemonSets), _) => WorkloadKind::DaemonSet,
        // ReplicaSets are not a list mesh-doctor reads, so not a row of the kind table.
        (None, "rs" | "replicaset" | "replicasets") => WorkloadKind::ReplicaSet,
        (_, other) => {
            return Err(Error::Usage(format!(
                "SOURCE {text}: {other} is not a pod or workload kind (pod/NAME, deploy/NAME, sts/NAME, ds/NAME, rs/NAME)"
            )));
        }
    };
    Ok(SourceRef::Workload(kind, name))
}

fn check_name(name: &str) -> Result<&str> {
    if name.is_empty() || name.contains('/') {
        return Err(Error::Usage(format!("{name:?} is not a name")));
    }
    Ok(name)
}

/// `host[:port]`.
pub fn target_and_port(text: &str) -> Result<(String, Option<u32>)> {
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => {
            let n: u32 = port
                .parse()
                .ok()
                .filter(|n| (1..=65535).contains(n))
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "TARGET {text}: {port} is not a port number (1-65535)"
                    ))
                })?;
            (host, Some(n))
        }
        None => (text, None),
    };
    if let Some(pod) = host.strip_prefix("pod/") {
        if pod.is_empty() || pod.contains('/') || pod.split('.').count() > 2 {
            return Err(Error::Usage(format!(
                "TARGET {text}: a pod is pod/NAME or pod/NAME.NAMESPACE"
            )));
        }
        return Ok((host.to_ascii_lowercase(), port));
    }
    if host.is_empty() || host.contains('/') {
        return Err(Error::Usage(format!("TARGET {text}: not a host")));
    }
    Ok((host.to_ascii_lowercase(), port))
}

fn header(text: &str) -> Result<(String, String)> {
    let (k, v) = text
        .split_once('=')
        .or_else(|| text.split_once(':'))
        .ok_or_else(|| Error::Usage(format!("--header {text}: use NAME=VALUE")))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(Error::Usage(format!("--header {text}: the name is empty")));
    }
    Ok((k.to_ascii_lowercase(), v.trim().to_string()))
}

impl PathArgs {
    pub fn into_request(self, global: &Global) -> Result<Request> {
        if global.context.len() > 1 {
            return Err(Error::Usage(
                "path walks one cluster: give at most one --context".to_string(),
            ));
        }
        let (target, port) = target_and_port(&self.target)?;
        if !self.path.starts_with('/') {
            return Err(Error::Usage(format!(
                "--path {}: a path starts with /",
                self.path
            )));
        }
        let headers = self
            .headers
            .iter()
            .map(|h| header(h))
            .collect::<Result<Vec<_>>>()?;
        let authority = headers
            .iter()
            .find(|(k, _)| k == "host")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        Ok(Request {
            source: source_ref(&self.source)?,
            target,
            port,
            request: HttpRequest {
                path: self.path,
                method: self.method.to_ascii_uppercase(),
                headers,
                authority,
            },
            inputs: self.filename,
            recursive: self.recursive,
            max_input_size: self.max_input_size,
            output: self.output,
            probe: !self.no_probe,
            expect: self.expect.map(|e| match e {
                ExpectArg::Reachable => Expect::Reachable,
                ExpectArg::Blocked => Expect::Blocked,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_targets_and_headers() {
        assert_eq!(source_ref("web-1").unwrap(), SourceRef::Pod("web-1".into()));
        assert_eq!(
            source_ref("deploy/web").unwrap(),
            SourceRef::Workload(WorkloadKind::Deployment, "web".into())
        );
        assert!(source_ref("svc/web").is_err());
        assert_eq!(
            target_and_port("orders.shop:8080").unwrap(),
            ("orders.shop".into(), Some(8080))
        );
        assert_eq!(target_and_port("orders").unwrap(), ("orders".into(), None));
        assert!(target_and_port("orders:0").is_err());
        assert!(target_and_port("pod/x").is_ok());
        assert!(target_and_port("pod/").is_err());
        assert_eq!(header("X-Team: a").unwrap(), ("x-team".into(), "a".into()));
        assert!(header("novalue").is_err());
    }
}
