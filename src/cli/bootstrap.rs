//! `bootstrap validate` and `bootstrap explain`'s flags, and the requests they make.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::flags::{DocumentHelp, KubeArgs, document_format, level_parser};
use crate::commands::bootstrap::{self, ValidateRequest, explain};
use crate::error::{Error, Result};
use crate::findings::messages::Level;
use crate::formats::duration::parse_duration;
use crate::output::format::DocumentFormat;
use crate::request::Global;
use crate::source::pod::pod_name;

const VALIDATE_AFTER_HELP_TEXT: &str = "\
Checks (each problem is a finding with the JSON path into the document and its line):
  MD0301  ADS, CDS and LDS gRPC clusters exist among the static (non-EDS) clusters
  MD0302  no two static clusters share a name
  MD0303  routes of static listeners point at existing clusters
  MD0304  node.id is set when xDS is used; an Istio proxy's node.id is one istiod accepts
  MD0305  node.cluster is set when xDS is used
  MD0306  admin and listener ports do not collide with 15001, 15006, 15020, 15021, 15090
          (and 15000, for a bootstrap that is not the sidecar's own)
  MD0307  the file is valid JSON (strict) or YAML, one mapping; errors give line and column
  MD0308  no unknown fields at the top level, in node, admin, static_resources,
          dynamic_resources and their xDS config sources
  MD0309  a real `envoy --mode validate` accepts the file (when an Envoy binary is found)
  MD0310  an Istio proxy's node.id has the <pod>.<namespace> and <namespace>.svc.<domain> parts
  MD0311  no two static listeners (or the admin interface and a listener) bind the same address
  MD0312  the fields of the messages MD0308 checks have values of the right type (a mapping for
          a message, a list of mappings for clusters and listeners, a string for node.id...)

Envoy is looked for in --envoy, then $MESH_DOCTOR_ENVOY, then `envoy` on PATH; --no-envoy runs
only the static checks. YAML input is given to Envoy as a temporary JSON copy.

Examples:
  # the bootstrap pilot-agent would write, checked before rollout
  kubectl mesh-doctor bootstrap validate envoy-rev.json

  # a custom bootstrap from stdin, with a specific Envoy, as JSON for CI
  kubectl mesh-doctor bootstrap validate - --envoy /usr/local/bin/envoy -o json < custom.yaml

";

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    #[command(subcommand)]
    pub command: BootstrapCommand,
}

#[derive(Debug, Subcommand)]
pub enum BootstrapCommand {
    /// Check an Envoy bootstrap (JSON or YAML) for the mistakes that crash istio-proxy at start
    #[command(after_help = crate::exit::after_help(VALIDATE_AFTER_HELP_TEXT, &crate::exit::BOOTSTRAP_VALIDATE))]
    Validate(ValidateArgs),
    /// Where each part of a live pod's bootstrap comes from (node.id, metadata, token, root
    /// certificate, bootstrapOverride), checked and compared with its running Envoy
    #[command(after_help = crate::exit::after_help(EXPLAIN_AFTER_HELP_TEXT, &crate::exit::BOOTSTRAP_EXPLAIN))]
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The bootstrap file ("-" reads stdin)
    #[arg(value_name = "FILE|-")]
    pub file: PathBuf,

    /// Also run this Envoy binary with --mode validate (default: $MESH_DOCTOR_ENVOY, then
    /// `envoy` on PATH)
    #[arg(long, value_name = "PATH")]
    pub envoy: Option<PathBuf>,

    /// Run only the static checks, even when an Envoy binary is found
    #[arg(long, conflicts_with = "envoy")]
    pub no_envoy: bool,

    /// How long `envoy --mode validate` may run before it is stopped
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub envoy_timeout: Duration,

    /// The largest bootstrap file (or stdin) read, e.g. 64Mi; a larger one is exit 65
    #[arg(long, value_name = "SIZE", value_parser = crate::formats::duration::parse_size,
          default_value = crate::source::files::DEFAULT_MAX_INPUT_FLAG)]
    pub max_input_size: u64,

    /// Output format
    #[arg(short = 'o', long, value_parser = document_format(VALIDATE_OUTPUT), default_value = "text", help_heading = "Output options")]
    pub output: DocumentFormat,

    /// The lowest level that makes the command exit 79
    #[arg(long, value_name = "LEVEL", value_parser = level_parser(), default_value = "Warning")]
    pub failure_threshold: Level,
}

/// The values of `bootstrap validate -o`.
const VALIDATE_OUTPUT: DocumentHelp = DocumentHelp {
    text: "One block per finding: level, code, file:line, JSON path, then the message",
    json: "One JSON object: the file, the findings (with path and line) and Envoy's verdict",
    yaml: "The same object as YAML",
};

const EXPLAIN_AFTER_HELP_TEXT: &str = "\
What it shows, each with its value, its source and a check:
  node.id          <type>~<pod IP>~<pod name>.<namespace>~<domain>: the proxy type from
                   `pilot-agent proxy <type>`, INSTANCE_IP (status.podIP), POD_NAME,
                   POD_NAMESPACE and the --domain argument; checked against the pod and
                   against what istiod accepts
  node and control plane
                   node.cluster, the discovery address, CA_ADDR, the certificate provider,
                   the admin, status, health and Prometheus ports, the ADS cluster; application
                   ports that collide with the sidecar's
  node.metadata    every ISTIO_META_* variable (and proxyMetadata); CLUSTER_ID must be set
  credentials      the projected istio-token (its audience must be istio-ca) and the
                   istio-ca-root-cert ConfigMap (it must exist, with root-cert.pem)
  custom bootstrap the sidecar.istio.io/bootstrapOverride ConfigMap: it must exist, and its
                   custom_bootstrap.json, merged over pilot-agent's bootstrap as Envoy merges
                   it, must pass the `bootstrap validate` checks
  live bootstrap   node.id, node.cluster, the admin port, the ADS cluster and the metadata
                   compared with /config_dump of the running Envoy; when the proxy does not
                   answer, \"live bootstrap: not available (<reason>)\" (never fatal)

The admin port is reached with a port-forward through the API server (needs `create` on
pods/portforward), or with --direct on the pod IP when mesh-doctor runs inside the cluster.

Examples:
  kubectl mesh-doctor bootstrap explain web-7d4b9 -n shop
  kubectl mesh-doctor bootstrap explain pod/web-7d4b9 -n shop -o json
  kubectl mesh-doctor bootstrap explain web-7d4b9 -n shop --direct --probe-timeout 2s

";

/// The values of `bootstrap explain -o`.
const EXPLAIN_OUTPUT: DocumentHelp = DocumentHelp {
    text: "Tables of ingredient | value | source | check, problems, and the live comparison",
    json: "One JSON document: ingredients, override problems, notes, the live comparison, passed",
    yaml: "The same document as YAML",
};

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The pod (NAME or pod/NAME), in -n NAMESPACE or the context's namespace
    #[arg(value_name = "POD")]
    pub pod: String,

    /// Output format
    #[arg(short = 'o', long, value_parser = document_format(EXPLAIN_OUTPUT), default_value = "text", help_heading = "Output options")]
    pub output: DocumentFormat,

    /// Connect to the pod IP instead of port-forwarding through the API server (for running
    /// inside the cluster, e.g. as a Job)
    #[arg(long)]
    pub direct: bool,

    /// Time allowed to connect to the admin port, and for /config_dump to answer
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub probe_timeout: Duration,

    /// Ask the running Envoy for its /config_dump to compare (the default)
    #[arg(long, overrides_with = "no_probe")]
    pub probe: bool,

    /// Do not contact the proxy: explain from the API objects only (no live comparison)
    #[arg(long, overrides_with = "probe")]
    pub no_probe: bool,

    #[command(flatten)]
    pub kube: KubeArgs,
}

impl BootstrapArgs {
    pub fn into_request(self, global: &Global) -> Result<bootstrap::Request> {
        Ok(match self.command {
            BootstrapCommand::Validate(args) => bootstrap::Request::Validate(args.into_request()),
            BootstrapCommand::Explain(args) => {
                bootstrap::Request::Explain(args.into_request(global)?)
            }
        })
    }
}

impl ValidateArgs {
    pub fn into_request(self) -> ValidateRequest {
        ValidateRequest {
            file: self.file,
            envoy: self.envoy,
            static_only: self.no_envoy,
            envoy_timeout: self.envoy_timeout,
            max_input_size: self.max_input_size,
            output: self.output,
            failure_threshold: self.failure_threshold,
        }
    }
}

impl ExplainArgs {
    /// The request: one pod on one cluster, its Envoy asked unless --no-probe.
    pub fn into_request(self, global: &Global) -> Result<explain::Request> {
        if global.context.len() > 1 {
            return Err(Error::Usage(
                "bootstrap explain examines one pod: give at most one --context".to_string(),
            ));
        }
        Ok(explain::Request {
            pod: pod_name(&self.pod)?.to_string(),
            output: self.output,
            direct: self.direct,
            probe: !self.no_probe,
            probe_timeout: self.probe_timeout,
        })
    }
}
