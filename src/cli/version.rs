//! `version`'s flags, and the request they make.

use clap::Args;

use super::flags::{DocumentHelp, KubeArgs, document_format};
use crate::commands::version::Request;
use crate::output::format::DocumentFormat;

const AFTER_HELP_TEXT: &str = "\
Examples:
  kubectl mesh-doctor version
  kubectl mesh-doctor version --client
  kubectl mesh-doctor version -o json
  kubectl mesh-doctor version --context east --context west

The control plane is every istiod Deployment (label app=istiod), one per revision, with the
version of its discovery container's image and its ready/desired replicas; without a Deployment,
istiod is found by its pods (label app=istiod), as proxy-status finds it. The data plane is
every Running pod with an istio-proxy container (a sidecar or a gateway; Pending, finished and
deleted pods are not counted), grouped by the version of that container's image, in every
namespace or, with -n, in that namespace.

";

/// The values of `version -o`.
const OUTPUT: DocumentHelp = DocumentHelp {
    text: "`client version: ...`, then one table per cluster",
    json: "One JSON document: the client, and per cluster its control and data plane",
    yaml: "The same document as YAML",
};

#[derive(Debug, Args)]
#[command(after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::VERSION))]
pub struct VersionArgs {
    /// Print only the client version (no cluster is contacted)
    #[arg(long)]
    pub client: bool,

    /// Output format
    #[arg(short = 'o', long, value_parser = document_format(OUTPUT), default_value = "text", help_heading = "Output options")]
    pub output: DocumentFormat,

    #[command(flatten)]
    pub kube: KubeArgs,
}

impl VersionArgs {
    pub fn into_request(self) -> Request {
        Request {
            client_only: self.client,
            output: self.output,
        }
    }
}
