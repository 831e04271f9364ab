//! `analyze`'s flags, and the request they make.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::flags::{KubeArgs, level_parser};
use crate::analysis as analyzers;
use crate::commands::analyze::Request;
use crate::error::{Error, Result};
use crate::findings::messages::Level;
use crate::findings::report::Suppression;
use crate::formats::duration::parse_duration;
use crate::output::findings::Format;

const AFTER_HELP_TEXT: &str = "\
Examples:
  # rendered manifests in CI: fails (exit 79) on any Warning or Error
  kubectl mesh-doctor analyze -f k8s/ -R

  # the same from stdin, as SARIF for code scanning
  helm template shop ./chart | kubectl mesh-doctor analyze -f - -o sarif > mesh.sarif

  # a live namespace; every namespace
  kubectl mesh-doctor analyze -n shop
  kubectl mesh-doctor analyze -A

  # fail only on errors, hide Info findings, ignore one known pod
  kubectl mesh-doctor analyze -A --failure-threshold Error --output-threshold Warning \\
      -S 'IST0103=Pod legacy/*'

Files are read as `kubectl apply -f` reads them: YAML or JSON, several documents per file,
`kind: List`. Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs are judged
as the pods they will create after the injection webhook ran; Pods are pods that already exist.
Unlike istioctl, Pods, Namespaces and Services in files are analysed.

A directory without -R is read at its top level, as kubectl reads it. Input with nothing to
analyse (an empty file or stdin, no manifest in a directory, only kinds no analyzer reads) is
exit 65. Documents of kinds no analyzer reads are counted on stderr and in -o json/yaml/sarif.
Objects without a namespace get -n, else the kubeconfig context's namespace, else `default`.

The default failure threshold is Warning (istioctl's is Error, which never fails on IST0103).

A read or an analyzer that was skipped (RBAC, an error, a timeout) makes the run incomplete:
it is named on stderr and in -o json/yaml/sarif, the success line is not printed, and unless a
finding reaches the threshold the exit code is 69 (--allow-incomplete: 0).

On a live cluster, the sidecars of injected pods that the pod list already flags (istio-proxy
not ready, restarting, or waiting) are probed as `pod NAME` probes them (port-forward to the
admin port and 15021, the istio-proxy logs), 16 at a time, and their runtime findings are
added: MD0101 bootstrap crash, MD0102 waiting for istiod, MD0104-MD0107. A progress line is
shown on a terminal. --no-probe turns this off (no port-forward, no log reads).

";

#[derive(Debug, Args)]
#[command(after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::ANALYZE))]
pub struct AnalyzeArgs {
    /// Manifest files or directories to analyse ("-" reads stdin); repeatable
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filename: Vec<PathBuf>,

    /// Manifest files or directories, as istioctl takes them
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Read directories recursively
    #[arg(short = 'R', long)]
    pub recursive: bool,

    /// Analyse every namespace
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Read the live cluster (default: true without files, false with files; with
    /// --use-kube=true, files overlay the cluster)
    #[arg(short = 'k', long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub use_kube: Option<bool>,

    /// Output format (log is istioctl's name for text)
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text, help_heading = "Output options")]
    pub output: OutputFormat,

    /// The lowest level that makes the command exit 79
    #[arg(long, value_name = "LEVEL", value_parser = level_parser(), default_value = "Warning")]
    pub failure_threshold: Level,

    /// The lowest level that is printed
    #[arg(long, value_name = "LEVEL", value_parser = level_parser(), default_value = "Info", help_heading = "Output options")]
    pub output_threshold: Level,

    /// Suppress a code on matching resources: CODE=KIND NS/NAME, `*` as a wildcard; repeatable
    #[arg(short = 'S', long, value_name = "CODE=RESOURCE")]
    pub suppress: Vec<String>,

    /// Run only these analyzers (see --list-analyzers; Istio's names such as
    /// virtualservice.GatewayAnalyzer work too); repeatable. Analyzers Istio leaves out of its
    /// default set (annotations.AlphaAnalyzer) run only when named here
    #[arg(long, value_name = "NAME")]
    pub analyzer: Vec<String>,

    /// List the analyzers, with the codes they emit and the kinds they read, and exit
    #[arg(short = 'L', long)]
    pub list_analyzers: bool,

    /// A MeshConfig YAML file (overrides the cluster's `istio` ConfigMap)
    #[arg(long, alias = "meshConfigFile", value_name = "PATH")]
    pub mesh_config: Option<PathBuf>,

    /// A MeshNetworks YAML file (`networks: ...`; overrides the `istio` ConfigMap's
    /// `meshNetworks` key)
    #[arg(long, value_name = "PATH")]
    pub mesh_networks: Option<PathBuf>,

    /// Probe the sidecars of flagged injected pods on a live cluster (the default)
    #[arg(long, overrides_with = "no_probe")]
    pub probe: bool,

    /// Do not probe any sidecar (no port-forward, no log reads): the API objects only
    #[arg(long, overrides_with = "probe")]
    pub no_probe: bool,

    /// Time allowed for each probe request, to connect and to answer (e.g. 2s, 500ms)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub probe_timeout: Duration,

    /// The largest input file (or stdin) read, e.g. 64Mi, 1Gi; a larger one is exit 65
    #[arg(long, value_name = "SIZE", value_parser = crate::formats::duration::parse_size,
          default_value = crate::source::files::DEFAULT_MAX_INPUT_FLAG)]
    pub max_input_size: u64,

    /// Accept a partial result: exit 0 rather than 69 when a read or an analyzer was skipped
    /// (RBAC, errors, timeouts) and nothing reaches the failure threshold
    #[arg(long)]
    pub allow_incomplete: bool,

    /// Leave out the findings about resources in namespaces matching GLOB (`*` for any run of
    /// characters, e.g. `team-*`), on files and live; repeatable
    #[arg(long, value_name = "GLOB")]
    pub exclude_namespace: Vec<String>,

    /// Record the findings of this run in FILE (JSON), to be given to --baseline later; the
    /// findings are printed as usual but do not fail the run
    #[arg(long, value_name = "FILE", conflicts_with = "baseline")]
    pub write_baseline: Option<PathBuf>,

    /// Fail only on findings that are not in FILE (written by --write-baseline): those are the
    /// ones printed; stderr counts the known ones and names the entries that no longer occur
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    #[command(flatten)]
    pub kube: KubeArgs,
}

/// The values of `analyze -o` ([`Format`]), with their help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One line per finding: `Warning [IST0103] (Pod ns/name file:line) message`
    Text,
    /// The same lines, under istioctl's name for them
    Log,
    /// A JSON array with istioctl's field names
    Json,
    /// The same as YAML
    Yaml,
    /// SARIF 2.1.0, for code-scanning tools
    Sarif,
    /// JUnit XML for CI test reports (GitLab, Jenkins, Azure): one test case per finding,
    /// failed at or above --failure-threshold
    Junit,
}

impl From<OutputFormat> for Format {
    fn from(value: OutputFormat) -> Format {
        match value {
            OutputFormat::Text => Format::Text,
            OutputFormat::Log => Format::Log,
            OutputFormat::Json => Format::Json,
            OutputFormat::Yaml => Format::Yaml,
            OutputFormat::Sarif => Format::Sarif,
            OutputFormat::Junit => Format::Junit,
        }
    }
}

impl AnalyzeArgs {
    /// The request: inputs, whether the cluster is read, the analyzers, the suppression rules
    /// and the thresholds, checked. `-L` is a request of its own: nothing else is checked then.
    pub fn into_request(self) -> Result<Request> {
        let inputs: Vec<PathBuf> = self.filename.into_iter().chain(self.files).collect();
        // Without files the cluster is read; with files only with --use-kube (they overlay it).
        let read_cluster = self.use_kube.unwrap_or(inputs.is_empty());
        let mut request = Request {
            list_analyzers: self.list_analyzers,
            inputs,
            recursive: self.recursive,
            read_cluster,
            all_namespaces: self.all_namespaces,
            analyzers: self.analyzer,
            suppressions: Vec::new(),
            warnings: Vec::new(),
            mesh_config: self.mesh_config,
            mesh_networks: self.mesh_networks,
            probe: !self.no_probe,
            probe_timeout: self.probe_timeout,
            max_input_size: self.max_input_size,
            output: self.output.into(),
            failure_threshold: self.failure_threshold,
            output_threshold: self.output_threshold,
            allow_incomplete: self.allow_incomplete,
            baseline: self.baseline,
            exclude_namespaces: self.exclude_namespace,
            write_baseline: self.write_baseline,
        };
        if request.list_analyzers {
            return Ok(request);
        }
        for name in &request.analyzers {
            if analyzers::find(name).is_none() {
                let known: Vec<&str> = analyzers::all().map(|a| a.name).collect();
                return Err(Error::Usage(format!(
                    "unknown analyzer {name:?}; known analyzers: {}",
                    known.join(", ")
                )));
            }
        }
        for text in &self.suppress {
            let (rule, warning) = Suppression::parse(text).map_err(Error::Usage)?;
            request.warnings.extend(warning);
            request.suppressions.push(rule);
        }
        if !request.read_cluster && request.inputs.is_empty() {
            return Err(Error::Usage(
                "nothing to analyse: give manifest files with -f, or leave --use-kube on to read the cluster".into(),
            ));
        }
        Ok(request)
    }
}
