//! `proxy-status`' flags, and the request they make.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::flags::KubeArgs;
use crate::commands::proxy_status::status::FailOn;
use crate::commands::proxy_status::{Format, Request};
use crate::error::{Error, Result};
use crate::formats::duration::parse_duration;
use crate::istio::constants::ISTIO_NAMESPACE;
use crate::request::Global;

const AFTER_HELP_TEXT: &str = "\
Columns:
  NAME              the proxy ID (POD.NAMESPACE)
  CLUSTER           the proxy's cluster ID, as istiod reports it
  ISTIOD            the istiod pod the proxy is connected to; - when it is connected to none
  VERSION           the proxy's Istio version (for unconnected pods: the istio-proxy image tag);
                    [skew] one minor behind istiod (supported), [skew!] unsupported skew
  SUBSCRIBED TYPES  the xDS types the proxy asked for (--types: one column per type instead)
  STATUS            SYNCED, NOT SENT, STALE, ERROR (a type rejected), CONNECTED (no type yet),
                    NOT CONNECTED (a sidecar pod no istiod knows), STARTING (a young pod),
                    UNKNOWN (an istiod could not be asked), NOT RUNNING (finished pods)
  ENVOY             with --probe: Envoy's own state (LIVE, PRE_INITIALIZING, ...)
  REASON            why: the pod status, the rejected type, the unacknowledged types

--types adds one column per xDS type (CDS, LDS, EDS, RDS, ECDS, ...) with the state and the
time since istiod last sent it, e.g. SYNCED (2m5s). -v logs to stderr, as in every command.

--fail-on is not --failure-threshold: it matches proxy states (STALE, ERROR, ...), which have
no Info/Warning/Error level.

istiod is found by label (--istiod-selector, default app=istiod) in --istio-namespace and
asked through a port-forward to port 15014 (needs `create` on pods/portforward in that
namespace). --istiod-url asks an istiod you reach yourself (a local port-forward, an istiod
outside the cluster); https:// is for a TLS proxy, ingress or load balancer in front of its
15014 (istiod serves its debug endpoints over plain HTTP only), checked against the system's
trust store or --istiod-ca. --syncz-file reads saved answers (curl .../debug/syncz, or
istioctl proxy-status -o json) without asking any istiod.

Examples:
  kubectl mesh-doctor proxy-status
  kubectl mesh-doctor proxy-status -n shop --types
  kubectl mesh-doctor proxy-status web-7d4b9 -n shop --probe
  kubectl mesh-doctor proxy-status -o json --fail-on error,disconnected
  kubectl mesh-doctor proxy-status --istiod-url http://127.0.0.1:15014 --istiod-name istiod-1
  kubectl mesh-doctor proxy-status --istiod-url https://istiod.example.com --istiod-ca ca.pem
  kubectl mesh-doctor proxy-status --syncz-file syncz.json --pods-file pods.json

";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// istioctl's columns plus STATUS (and ENVOY with --probe, REASON when there is one)
    #[value(alias = "table")]
    Text,
    /// The table with istiod's version, the proxy type, the pod status and whole reasons
    Wide,
    /// Every row, istiod and type as JSON
    Json,
    /// The same as YAML
    Yaml,
}

#[derive(Debug, Args)]
#[command(after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::PROXY_STATUS))]
pub struct ProxyStatusArgs {
    /// One proxy: POD (in -n NAMESPACE or the context's namespace), POD.NAMESPACE or pod/POD
    #[arg(value_name = "POD")]
    pub proxy: Option<String>,

    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text, help_heading = "Output options")]
    pub output: OutputFormat,

    /// One column per xDS type (CDS, LDS, EDS, RDS, ...) instead of SUBSCRIBED TYPES
    #[arg(long, help_heading = "Output options")]
    pub types: bool,

    /// Every namespace (the default unless -n is given, as istioctl does)
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// What makes the command exit 79 (comma-separated)
    #[arg(long, value_enum, value_delimiter = ',', default_value = FailOn::DEFAULT, value_name = "LIST")]
    pub fail_on: Vec<FailOnValue>,

    /// Also ask each running proxy's Envoy for its state (/server_info on port 15000)
    #[arg(long, overrides_with = "no_probe")]
    pub probe: bool,

    /// Do not contact any proxy (the default)
    #[arg(long, overrides_with = "probe")]
    pub no_probe: bool,

    /// With --probe: connect to the pod IPs instead of port-forwarding (inside the cluster)
    #[arg(long, requires = "probe")]
    pub direct: bool,

    /// With --probe: how many proxies are asked at the same time
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,

    /// With --probe: time allowed for each proxy, to connect and to answer
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub probe_timeout: Duration,

    /// Time allowed for each istiod, to connect and to answer
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub istiod_timeout: Duration,

    /// The namespace istiod runs in
    #[arg(short = 'i', long, value_name = "NAMESPACE", default_value = ISTIO_NAMESPACE)]
    pub istio_namespace: String,

    /// The label selector of istiod's pods
    #[arg(long, value_name = "SELECTOR", default_value = "app=istiod")]
    pub istiod_selector: String,

    /// Only the istiod pods of this revision (label istio.io/rev)
    #[arg(short = 'r', long, value_name = "REVISION")]
    pub revision: Option<String>,

    /// Ask the istiod at this address instead of finding its pods (repeatable; http:// or
    /// https://): a local `kubectl port-forward`, or an istiod outside the cluster (behind an
    /// https ingress or load balancer). Its monitoring port (15014) also answers /version
    #[arg(long = "istiod-url", value_name = "URL")]
    pub istiod_urls: Vec<String>,

    /// With an https --istiod-url: trust only the CA certificates in this PEM file (as kubectl's
    /// --certificate-authority), instead of the system's trust store
    #[arg(
        long = "istiod-ca",
        value_name = "FILE",
        help_heading = "istiod over https"
    )]
    pub istiod_ca: Option<PathBuf>,

    /// With an https --istiod-url: the name to send (SNI) and to expect in istiod's certificate,
    /// instead of the URL's host (as kubectl's --tls-server-name), e.g. istiod.istio-system.svc
    /// for an IP address
    #[arg(
        long = "istiod-tls-server-name",
        value_name = "NAME",
        help_heading = "istiod over https"
    )]
    pub istiod_tls_server_name: Option<String>,

    /// INSECURE: with an https --istiod-url, accept any certificate (no CA, name or expiry
    /// check: anyone on the path can pose as istiod)
    #[arg(
        long = "istiod-insecure-skip-tls-verify",
        help_heading = "istiod over https"
    )]
    pub istiod_insecure_skip_tls_verify: bool,

    /// The name to show for each --istiod-url or --syncz-file, in the same order
    #[arg(long = "istiod-name", value_name = "NAME")]
    pub istiod_names: Vec<String>,

    /// Read an istiod's answer from a file instead of asking it (repeatable; - for stdin): the
    /// JSON of /debug/syncz, or of `istioctl proxy-status -o json`. No cluster is contacted
    /// unless --probe is given
    #[arg(long = "syncz-file", value_name = "FILE", help_heading = "Offline")]
    pub syncz_files: Vec<PathBuf>,

    /// With --syncz-file: the pods, as `kubectl get pods -A -o json` prints them, to find the
    /// sidecars no istiod knows
    #[arg(
        long = "pods-file",
        value_name = "FILE",
        requires = "syncz_files",
        help_heading = "Offline"
    )]
    pub pods_file: Option<PathBuf>,

    /// Accept a partial result: exit 0 rather than 69 when the pods could not be listed (or an
    /// istiod could not be asked without them) and no row matches --fail-on
    #[arg(long)]
    pub allow_incomplete: bool,

    #[command(flatten)]
    pub kube: KubeArgs,
}

/// The values of `--fail-on` ([`FailOn`]), with their help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOnValue {
    /// A type pushed but not acknowledged
    Stale,
    /// A type the proxy rejected (NACK)
    Error,
    /// A type asked for but never sent
    NotSent,
    /// A sidecar pod connected to no istiod (NOT CONNECTED), or not found while an istiod could not be asked (UNKNOWN)
    Disconnected,
    /// A proxy version Istio does not support with its istiod (2+ minors behind, or ahead)
    Skew,
    /// With --probe: Envoy not LIVE, or its admin port not answering
    NotLive,
    /// Never fail
    None,
}

impl From<FailOnValue> for FailOn {
    fn from(value: FailOnValue) -> FailOn {
        match value {
            FailOnValue::Stale => FailOn::Stale,
            FailOnValue::Error => FailOn::Error,
            FailOnValue::NotSent => FailOn::NotSent,
            FailOnValue::Disconnected => FailOn::Disconnected,
            FailOnValue::Skew => FailOn::Skew,
            FailOnValue::NotLive => FailOn::NotLive,
            FailOnValue::None => FailOn::None,
        }
    }
}

impl ProxyStatusArgs {
    /// The request, with the flags that exclude each other checked: --syncz-file or
    /// --istiod-url, one --istiod-name per address or file, one cluster, the TLS flags only with
    /// an https:// URL and a CA only when certificates are checked.
    pub fn into_request(self, global: &Global) -> Result<Request> {
        let offline = !self.syncz_files.is_empty();
        if offline && !self.istiod_urls.is_empty() {
            return Err(Error::Usage(
                "give either --syncz-file or --istiod-url, not both".to_string(),
            ));
        }
        let sources = self.syncz_files.len().max(self.istiod_urls.len());
        if self.istiod_names.len() > sources {
            return Err(Error::Usage(format!(
                "{} --istiod-name for {sources} --istiod-url/--syncz-file: give one name per address or file",
                self.istiod_names.len()
            )));
        }
        if global.context.len() > 1 {
            return Err(Error::Usage(
                "proxy-status reads one cluster: give at most one --context".to_string(),
            ));
        }
        let tls_given = self.istiod_ca.is_some()
            || self.istiod_tls_server_name.is_some()
            || self.istiod_insecure_skip_tls_verify;
        // Every address is checked here, before the cluster is read.
        let istiod_urls = self
            .istiod_urls
            .iter()
            .map(|url| crate::commands::proxy_status::url::parse_url(url))
            .collect::<Result<Vec<_>>>()?;
        let any_https = istiod_urls.iter().any(|url| url.https);
        if tls_given && !any_https {
            return Err(Error::Usage(
                "--istiod-ca, --istiod-tls-server-name and --istiod-insecure-skip-tls-verify are for an https:// --istiod-url, and none is given".to_string(),
            ));
        }
        if self.istiod_ca.is_some() && self.istiod_insecure_skip_tls_verify {
            // kubectl refuses the same pair: a CA that is never checked is a mistake.
            return Err(Error::Usage(
                "give either --istiod-ca or --istiod-insecure-skip-tls-verify, not both"
                    .to_string(),
            ));
        }
        Ok(Request {
            proxy: self.proxy,
            output: match self.output {
                OutputFormat::Text => Format::Text,
                OutputFormat::Wide => Format::Wide,
                OutputFormat::Json => Format::Json,
                OutputFormat::Yaml => Format::Yaml,
            },
            types: self.types,
            all_namespaces: self.all_namespaces,
            fail_on: self.fail_on.into_iter().map(FailOn::from).collect(),
            probe: self.probe,
            direct: self.direct,
            concurrency: self.concurrency,
            probe_timeout: self.probe_timeout,
            istiod_timeout: self.istiod_timeout,
            istio_namespace: self.istio_namespace,
            istiod_selector: self.istiod_selector,
            revision: self.revision,
            istiod_urls,
            istiod_ca: self.istiod_ca,
            istiod_tls_server_name: self.istiod_tls_server_name,
            istiod_insecure_skip_tls_verify: self.istiod_insecure_skip_tls_verify,
            istiod_names: self.istiod_names,
            syncz_files: self.syncz_files,
            pods_file: self.pods_file,
            allow_incomplete: self.allow_incomplete,
        })
    }
}
