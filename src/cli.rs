//! The command line: clap definitions and kubectl-style global flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::formats::duration::parse_duration;
use crate::output::style::ColorChoice;
use crate::request::Global;
use crate::source::live::Connection;

const ABOUT: &str = "Tells you, in one command, why your Istio mesh is not doing what you expect.";

const AFTER_HELP: &str = concat!(
    "\
Examples:
  # Why is this pod not meshed, crashing, or stuck at 1/2?
  kubectl mesh-doctor pod web-7d4b9 -n shop

  # istioctl-analyze-style findings for rendered manifests in CI (exit 79 on findings)
  kubectl mesh-doctor analyze -f k8s/ -R

  # the same for a live namespace, or for every namespace
  kubectl mesh-doctor analyze -n shop
  kubectl mesh-doctor analyze -A

  # every code mesh-doctor can report
  kubectl mesh-doctor codes

  # which proxies are SYNCED, STALE or rejecting config, and which sidecars no istiod knows
  kubectl mesh-doctor proxy-status -n shop

  # an Envoy bootstrap, before it is deployed (also runs envoy --mode validate when found)
  kubectl mesh-doctor bootstrap validate envoy-rev.json

  # where each part of a pod's bootstrap comes from, checked and compared with its Envoy
  kubectl mesh-doctor bootstrap explain web-7d4b9 -n shop

  # client, istiod and proxy versions
  kubectl mesh-doctor version

",
    crate::exit_codes_help!()
);

#[derive(Debug, Parser)]
#[command(
    name = "kubectl mesh-doctor",
    bin_name = "kubectl mesh-doctor",
    version,
    about = ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Istio-analyze-style findings for a live namespace or for manifest files
    Analyze(crate::commands::analyze::AnalyzeArgs),
    /// List every finding code mesh-doctor can report
    Codes(crate::commands::codes::CodesArgs),
    /// Why is this pod not meshed, crashing, or stuck at 1/2? (probes its sidecar)
    Pod(crate::commands::pod::PodArgs),
    /// Check an Envoy bootstrap before it is deployed, or explain a live pod's (a wrong one is
    /// a CrashLoop)
    Bootstrap(crate::commands::bootstrap::BootstrapArgs),
    /// Which proxies are in sync with istiod, and which sidecars are connected to none
    #[command(name = "proxy-status", visible_alias = "ps")]
    ProxyStatus(crate::commands::proxy_status::ProxyStatusArgs),
    /// Client, control-plane (istiod per revision) and data-plane (proxy) versions
    Version(crate::commands::version::VersionArgs),
}

/// Flags every command understands, named as kubectl names them (kubectl does not pass its own
/// flags to plugins, so the plugin reads them itself).
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (repeat it with `analyze` to check several clusters)
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Vec<String>,

    /// The kubeconfig cluster to use
    #[arg(long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,

    /// The kubeconfig user to use
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,

    /// Namespace scope (default: the context's namespace)
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Username to impersonate
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,

    /// Group to impersonate (repeatable)
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub as_group: Vec<String>,

    /// How long to wait for each API request, e.g. 5s, 1m (0 = the default of 30s)
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration, default_value = "0")]
    pub request_timeout: Duration,

    /// When to use colors
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Log what mesh-doctor does to stderr (-v, -vv)
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl GlobalArgs {
    /// The flags as plain values for the commands: the connection, colors, verbosity.
    pub fn resolve(&self) -> Global {
        Global {
            connection: Connection {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
                cluster: self.cluster.clone(),
                user: self.user.clone(),
                namespace: self.namespace.clone(),
                as_user: self.as_user.clone(),
                as_group: self.as_group.clone(),
                request_timeout: self.request_timeout,
            },
            color: self.color,
            verbose: self.verbose,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
