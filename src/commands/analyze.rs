//! `kubectl mesh-doctor analyze`: findings for manifest files or a live cluster.

mod runtime;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::analysis::messages::Level;
use crate::analysis::report::Suppression;
use crate::analysis::{self, ANALYZERS, Finding, Report};
use crate::cli::{GlobalArgs, parse_duration};
use crate::error::{Error, Result};
use crate::exit;
use crate::render::findings::{self, Format};
use crate::render::style::{Stream, Styles};
use crate::snapshot::Snapshot;
use crate::source::files::{self, FileOptions};

const AFTER_HELP: &str = concat!(
    "\
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

The default failure threshold is Warning (istioctl's is Error, which never fails on IST0103).

On a live cluster, the sidecars of injected pods that the pod list already flags (istio-proxy
not ready, restarting, or waiting) are probed as `pod NAME` probes them (port-forward to the
admin port and 15021, the istio-proxy logs), 16 at a time, and their runtime findings are
added: MD0101 bootstrap crash, MD0102 waiting for istiod, MD0104-MD0107. A progress line is
shown on a terminal. --probe=false turns this off (no port-forward, no log reads).

",
    crate::exit_codes_help!()
);

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
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

    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Log)]
    pub output: Format,

    /// The lowest level that makes the command exit 79
    #[arg(long, value_name = "LEVEL", value_parser = parse_level, default_value = "Warning")]
    pub failure_threshold: Level,

    /// The lowest level that is printed
    #[arg(long, value_name = "LEVEL", value_parser = parse_level, default_value = "Info")]
    pub output_threshold: Level,

    /// Suppress a code on matching resources: CODE=KIND NS/NAME, `*` as a wildcard; repeatable
    #[arg(short = 'S', long, value_name = "CODE=RESOURCE")]
    pub suppress: Vec<String>,

    /// Run only these analyzers (see --list-analyzers); repeatable
    #[arg(long, value_name = "NAME")]
    pub analyzer: Vec<String>,

    /// List the analyzers and exit
    #[arg(short = 'L', long)]
    pub list_analyzers: bool,

    /// A MeshConfig YAML file (overrides the cluster's `istio` ConfigMap)
    #[arg(long, alias = "meshConfigFile", value_name = "PATH")]
    pub mesh_config: Option<PathBuf>,

    /// Probe the sidecars of flagged injected pods on a live cluster (--probe=false: API only)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub probe: bool,

    /// Time allowed for each probe request, to connect and to answer (e.g. 2s, 500ms)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub probe_timeout: Duration,

    /// The largest input file (or stdin) read, e.g. 64Mi, 1Gi; a larger one is exit 65
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::parse_size,
          default_value = files::DEFAULT_MAX_INPUT_FLAG)]
    pub max_input_size: u64,
}

fn parse_level(text: &str) -> Result<Level, String> {
    Level::parse(text).ok_or_else(|| format!("invalid level {text:?}: use Info, Warning or Error"))
}

/// What was analysed, for the messages that name it.
fn target(args: &AnalyzeArgs, global: &GlobalArgs, files: &[String], live: bool) -> String {
    if !live {
        return match files {
            [one] => one.clone(),
            many => format!("{} files", many.len()),
        };
    }
    if args.all_namespaces {
        "all namespaces".to_string()
    } else {
        format!(
            "namespace: {}",
            global.namespace.as_deref().unwrap_or("default")
        )
    }
}

pub async fn run(args: AnalyzeArgs, global: &GlobalArgs) -> Result<u8> {
    if args.list_analyzers {
        let mut out = String::new();
        for a in ANALYZERS {
            out.push_str(&format!(
                "* {}:\n    {} ({})\n",
                a.name,
                a.description,
                a.codes.join(", ")
            ));
        }
        out.push_str(&format!(
            "* {}:\n    {} ({})\n",
            analysis::runtime::NAME,
            analysis::runtime::DESCRIPTION,
            analysis::runtime::CODES.join(", ")
        ));
        write_stdout(&out)?;
        return Ok(exit::OK);
    }
    for name in &args.analyzer {
        if !ANALYZERS.iter().any(|a| a.name == name) && name != analysis::runtime::NAME {
            let mut known: Vec<&str> = ANALYZERS.iter().map(|a| a.name).collect();
            known.push(analysis::runtime::NAME);
            return Err(Error::Usage(format!(
                "unknown analyzer {name:?}; known analyzers: {}",
                known.join(", ")
            )));
        }
    }
    let mut rules = Vec::new();
    for text in &args.suppress {
        let (rule, warning) = Suppression::parse(text)?;
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
    if use_kube {
        snapshot = crate::source::live::snapshot_for_analyze(global, args.all_namespaces).await?;
    }
    let mut file_names = Vec::new();
    if !paths.is_empty() {
        let options = FileOptions {
            recursive: args.recursive,
            default_namespace: if args.all_namespaces {
                None
            } else {
                Some(global.namespace.clone().unwrap_or_else(|| "default".into()))
            },
            max_input: Some(args.max_input_size),
        };
        let (from_files, stats) = files::load(&paths, &options).map_err(parse_errors)?;
        tracing::info!(
            files = stats.files.len(),
            documents = stats.documents,
            ignored = stats.ignored_kinds,
            "read manifests"
        );
        file_names = stats.files;
        snapshot.extend(from_files);
    }
    if let Some(path) = &args.mesh_config {
        snapshot.mesh_config = Some(files::load_mesh_config(path, args.max_input_size)?);
    }

    let mut report: Report = analysis::run(&snapshot, &args.analyzer);
    let runtime_wanted =
        args.analyzer.is_empty() || args.analyzer.iter().any(|a| a == analysis::runtime::NAME);
    if use_kube && args.probe && runtime_wanted {
        let options = crate::probe::ProbeOptions::with_timeout(args.probe_timeout);
        let outcome = runtime::check(global, &snapshot, &options).await?;
        report.findings.extend(outcome.findings);
        report.skipped.extend(outcome.skipped);
        report.sort_and_dedup();
    }
    // A live namespace scope keeps findings about that namespace (and cluster-scoped ones);
    // files are analysed whole unless -n narrows them.
    if !args.all_namespaces && (use_kube || global.namespace.is_some()) {
        let namespace = global.namespace.clone().unwrap_or_else(|| "default".into());
        report.keep_namespace(&namespace);
    }
    report.suppress(&rules, &snapshot);
    for skipped in &report.skipped {
        eprintln!("skipped {}: {}", skipped.check, skipped.reason);
    }

    let visible: Vec<&Finding> = report.visible(args.output_threshold).collect();
    let styles = Styles::new(global.color.enabled(Stream::Stdout));
    let show_cluster = global.context.len() > 1;
    let what = target(&args, global, &file_names, use_kube);
    if visible.is_empty() {
        if args.output != Format::Log {
            write_stdout(&findings::render(
                &visible,
                args.output,
                &styles,
                show_cluster,
            ))?;
        }
        let err = Styles::new(global.color.enabled(Stream::Stderr));
        eprintln!(
            "{} No validation issues found when analyzing {what}.",
            err.paint(err.ok, "\u{2714}")
        );
    } else {
        write_stdout(&findings::render(
            &visible,
            args.output,
            &styles,
            show_cluster,
        ))?;
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
            crate::analysis::messages::DOCS_BASE
        );
        return Ok(exit::FINDINGS);
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

/// Writes the result to stdout; a closed pipe (`| head`) is not an error.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Output(e)),
        _ => Ok(()),
    }
}
