//! `kubectl mesh-doctor analyze`: findings for manifest files or a live cluster.

pub mod analyzers;
mod runtime;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::{Error, Result};
use crate::exit;
use crate::findings::messages::Level;
use crate::findings::report::{Skipped, Suppression};
use crate::findings::{Finding, Report};
use crate::formats::duration::parse_duration;
use crate::kube::snapshot::Snapshot;
use crate::output::findings::{self, Format};
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::request::Global;
use crate::source::files::{self, FileOptions};

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
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text, help_heading = "Output options")]
    pub output: Format,

    /// The lowest level that makes the command exit 79
    #[arg(long, value_name = "LEVEL", value_parser = crate::flags::level_parser(), default_value = "Warning")]
    pub failure_threshold: Level,

    /// The lowest level that is printed
    #[arg(long, value_name = "LEVEL", value_parser = crate::flags::level_parser(), default_value = "Info", help_heading = "Output options")]
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
          default_value = files::DEFAULT_MAX_INPUT_FLAG)]
    pub max_input_size: u64,

    /// Accept a partial result: exit 0 rather than 69 when a read or an analyzer was skipped
    /// (RBAC, errors, timeouts) and nothing reaches the failure threshold
    #[arg(long)]
    pub allow_incomplete: bool,

    #[command(flatten)]
    pub kube: crate::flags::KubeArgs,
}

/// What was analysed, for the messages that name it.
fn target(args: &AnalyzeArgs, namespace: &str, files: &[String], live: bool) -> String {
    if !live {
        return match files {
            [one] => one.clone(),
            many => format!("{} files", many.len()),
        };
    }
    if args.all_namespaces {
        "all namespaces".to_string()
    } else {
        format!("namespace: {namespace}")
    }
}

/// The error for file input that gave the analyzers nothing (exit 65).
fn nothing_to_analyse(paths: &[PathBuf], recursive: bool, stats: &files::LoadStats) -> Error {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let inputs = names.join(", ");
    let why = if stats.files.is_empty() {
        if recursive {
            "no .yaml, .yml or .json file was found".to_string()
        } else {
            "no .yaml, .yml or .json file was found (subdirectories are read with -R)".to_string()
        }
    } else if stats.documents == 0 {
        "the input holds no document (empty file or stdin)".to_string()
    } else {
        let mut parts = Vec::new();
        if let Some(line) = stats.not_analysed_line() {
            parts.push(line);
        }
        if stats.system > 0 {
            parts.push(format!(
                "{} object(s) in system namespaces, which are never analysed",
                stats.system
            ));
        }
        format!(
            "no document is of a kind mesh-doctor analyses ({})",
            parts.join("; ")
        )
    };
    Error::Data(format!("nothing to analyse in {inputs}: {why}"))
}

pub async fn run(args: AnalyzeArgs, global: &Global) -> Result<u8> {
    if args.list_analyzers {
        let mut out = String::new();
        for a in analyzers::all() {
            out.push_str(&format!(
                "* {}:\n    {} ({})\n    reads: {}\n",
                a.name,
                a.description,
                a.codes.join(", "),
                a.needs.join(", ")
            ));
            if !analyzers::on_by_default(a) {
                out.push_str("    off by default: runs only when named with --analyzer\n");
            }
        }
        out.push_str(&format!(
            "* {}:\n    {} ({})\n",
            analyzers::runtime::NAME,
            analyzers::runtime::DESCRIPTION,
            analyzers::runtime::CODES.join(", ")
        ));
        write::stdout(&out).map_err(Error::Output)?;
        return Ok(exit::OK);
    }
    for name in &args.analyzer {
        if analyzers::find(name).is_none() && name != analyzers::runtime::NAME {
            let mut known: Vec<&str> = analyzers::all().map(|a| a.name).collect();
            known.push(analyzers::runtime::NAME);
            return Err(Error::Usage(format!(
                "unknown analyzer {name:?}; known analyzers: {}",
                known.join(", ")
            )));
        }
    }
    let mut rules = Vec::new();
    for text in &args.suppress {
        let (rule, warning) = Suppression::parse(text).map_err(Error::Usage)?;
        if let Some(warning) = warning {
            eprintln!("{warning}");
        }
        rules.push(rule);
    }

    let paths: Vec<PathBuf> = args.filename.iter().chain(&args.files).cloned().collect();
    let use_kube = args.use_kube.unwrap_or(paths.is_empty());
    if !use_kube && paths.is_empty() {
        return Err(Error::Usage(
            "nothing to analyse: give manifest files with -f, or leave --use-kube on to read the cluster".into(),
        ));
    }

    let mut snapshot = Snapshot::default();
    let mut live_namespace = None;
    if use_kube {
        (snapshot, live_namespace) =
            crate::source::live::snapshot_for_analyze(global, args.all_namespaces)
                .await
                .map_err(|e| match e {
                    e if e.is_usage() && paths.is_empty() => {
                        e.with_hint("or analyse manifest files only with -f FILE")
                    }
                    e if e.is_usage() => {
                        e.with_hint("or analyse the files alone with --use-kube=false")
                    }
                    other => other,
                })?;
    }
    // The one namespace default (-n, else the context's, else `default`), for every use below.
    let namespace =
        live_namespace.unwrap_or_else(|| crate::source::live::scope_namespace(global, None));
    let mut file_names = Vec::new();
    let mut not_analysed = std::collections::BTreeMap::new();
    if !paths.is_empty() {
        let options = FileOptions {
            recursive: args.recursive,
            default_namespace: (!args.all_namespaces).then(|| namespace.clone()),
            max_input: Some(args.max_input_size),
        };
        let (from_files, stats) = files::load(&paths, &options).map_err(parse_errors)?;
        tracing::info!(
            files = stats.files.len(),
            documents = stats.documents,
            objects = stats.objects,
            "read manifests"
        );
        if stats.objects == 0 {
            return Err(nothing_to_analyse(&paths, args.recursive, &stats));
        }
        if let Some(line) = stats.not_analysed_line() {
            eprintln!("{line}");
        }
        file_names = stats.files;
        not_analysed = stats.not_analysed;
        snapshot.extend(from_files);
    }
    if let Some(path) = &args.mesh_config {
        snapshot.mesh_config = Some(files::load_mesh_config(path, args.max_input_size)?);
    }
    if let Some(path) = &args.mesh_networks {
        snapshot.mesh_networks = Some(files::load_mesh_networks(path, args.max_input_size)?);
    }

    let mut report: Report = analyzers::run(&snapshot, &args.analyzer);
    let runtime_wanted =
        args.analyzer.is_empty() || args.analyzer.iter().any(|a| a == analyzers::runtime::NAME);
    if use_kube && !args.no_probe && runtime_wanted {
        let options = crate::probe::ProbeOptions::with_timeout(args.probe_timeout);
        let outcome = runtime::check(global, &snapshot, &options).await?;
        report.findings.extend(outcome.findings);
        report.skipped.extend(outcome.skipped);
        report.sort_and_dedup();
    }
    // A live namespace scope keeps findings about that namespace (and cluster-scoped ones);
    // files are analysed whole unless -n narrows them.
    if !args.all_namespaces && (use_kube || global.namespace.is_some()) {
        report.keep_namespace(&namespace);
    }
    report.suppress(&rules, &snapshot);
    // What was not read, first (a read RBAC or the server refused), then the checks skipped.
    let mut skipped: Vec<Skipped> = snapshot
        .unavailable
        .iter()
        .map(|(kind, reason)| Skipped {
            check: format!("list {kind}"),
            reason: reason.clone(),
        })
        .collect();
    skipped.extend(report.skipped.iter().cloned());
    for s in &report.skipped {
        eprintln!("skipped {}: {}", s.check, s.reason);
    }

    let visible: Vec<&Finding> = report.visible(args.output_threshold).collect();
    let styles = Styles::new(global.color.enabled(Stream::Stdout));
    let show_cluster = global.context.len() > 1;
    let what = target(&args, &namespace, &file_names, use_kube);
    let coverage = findings::Coverage {
        skipped: &skipped,
        not_analysed: &not_analysed,
    };
    if !visible.is_empty() || !matches!(args.output, Format::Text | Format::Log) {
        write::stdout(&findings::render(
            &visible,
            args.output,
            &styles,
            show_cluster,
            &coverage,
        ))
        .map_err(Error::Output)?;
    }
    let err = Styles::new(global.color.enabled(Stream::Stderr));
    if visible.is_empty() {
        if coverage.is_complete() {
            eprintln!(
                "{} No validation issues found when analyzing {what}.",
                err.paint(err.ok, "\u{2714}")
            );
        } else {
            // Never the success line over something that was not read or not analysed.
            let mut missing = Vec::new();
            if !skipped.is_empty() {
                missing.push(format!("{} read(s) or check(s) skipped", skipped.len()));
            }
            if !not_analysed.is_empty() {
                let n: usize = not_analysed.values().sum();
                missing.push(format!("{n} document(s) of kinds not analysed"));
            }
            eprintln!(
                "{} No issue in what was analysed of {what}, but the analysis is not complete: {}.",
                err.paint(err.warning, "!"),
                missing.join(", ")
            );
        }
    }
    // The process ends right after this: skip freeing a large snapshot piece by piece.
    std::mem::forget(snapshot);
    if report.fails(args.failure_threshold) {
        let count = report
            .findings
            .iter()
            .filter(|f| f.level().reaches(args.failure_threshold))
            .count();
        eprintln!(
            "Found {count} issue(s) at or above {} when analyzing {what}; see {} for causes and fixes.",
            args.failure_threshold,
            crate::findings::messages::DOCS_BASE
        );
        return Ok(exit::FINDINGS);
    }
    if !skipped.is_empty() && !args.allow_incomplete {
        eprintln!(
            "error: the analysis of {what} is incomplete ({} read(s) or check(s) skipped, listed above): exit {}. Give the permissions in docs/rbac.yaml, or --allow-incomplete to accept a partial result.",
            skipped.len(),
            exit::UNAVAILABLE
        );
        return Ok(exit::UNAVAILABLE);
    }
    Ok(exit::OK)
}

fn parse_errors(errors: Vec<Error>) -> Error {
    if errors.len() == 1 {
        return errors.into_iter().next().expect("one error");
    }
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    Error::Data(format!(
        "{} inputs could not be read:\n  {}",
        lines.len(),
        lines.join("\n  ")
    ))
}
