//! `kubectl mesh-doctor analyze`: findings for manifest files or a live cluster.

mod runtime;

use std::path::PathBuf;
use std::time::Duration;

use crate::analysis as analyzers;
use crate::error::{Error, Result};
use crate::exit;
use crate::findings::messages::Level;
use crate::findings::report::{Skipped, Suppression};
use crate::findings::{Finding, Report};
use crate::istio::config::TypedSpecs;
use crate::kube::snapshot::Snapshot;
use crate::output::findings::{self, Format};
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::request::Global;
use crate::source::files::{self, FileOptions};

/// What `analyze` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    /// Only list the analyzers (`-L`); nothing else is read.
    pub list_analyzers: bool,
    /// Manifest files and directories to analyse, `-` for stdin; empty when none was given.
    pub inputs: Vec<PathBuf>,
    /// Directories are read recursively.
    pub recursive: bool,
    /// Read the live cluster (with inputs, the files overlay it).
    pub read_cluster: bool,
    /// Every namespace; else the one namespace of `source::cluster::scope_namespace`.
    pub all_namespaces: bool,
    /// The analyzers to run, by name (checked); empty: the default set.
    pub analyzers: Vec<String>,
    pub suppressions: Vec<Suppression>,
    /// Warnings about the flags (a suppression code mesh-doctor never emits), for stderr.
    pub warnings: Vec<String>,
    /// A MeshConfig file, over the cluster's `istio` ConfigMap.
    pub mesh_config: Option<PathBuf>,
    /// A MeshNetworks file, over the `istio` ConfigMap's `meshNetworks`.
    pub mesh_networks: Option<PathBuf>,
    /// Probe the sidecars of the flagged injected pods (on a live cluster).
    pub probe: bool,
    pub probe_timeout: Duration,
    /// The largest input file (or stdin) read, in bytes.
    pub max_input_size: u64,
    pub output: Format,
    /// The lowest level that makes the command exit 79.
    pub failure_threshold: Level,
    /// The lowest level that is printed.
    pub output_threshold: Level,
    /// Exit 0 rather than 69 when something was skipped and nothing reaches the threshold.
    pub allow_incomplete: bool,
    /// `--baseline`: a baseline file; only findings not in it are printed and fail the run.
    pub baseline: Option<PathBuf>,
    /// `--exclude-namespace`: globs of the namespaces whose findings are left out.
    pub exclude_namespaces: Vec<String>,
    /// `--write-baseline`: where to record the findings of this run.
    pub write_baseline: Option<PathBuf>,
}

/// What was analysed, for the messages that name it.
fn target(request: &Request, namespace: &str, files: &[String], live: bool) -> String {
    if !live {
        return match files {
            [one] => one.clone(),
            many => format!("{} files", many.len()),
        };
    }
    if request.all_namespaces {
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
        if !stats.other_kinds.is_empty() {
            let kinds: Vec<String> = stats
                .other_kinds
                .iter()
                .map(|(k, n)| format!("{k} ({n})"))
                .collect();
            parts.push(format!(
                "only kinds no mesh analysis concerns: {}",
                kinds.join(", ")
            ));
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

/// The schemas `crd-schemas` checks, how many of their CEL rules it evaluates, and each rule it
/// does not evaluate, with the kinds that carry it.
fn crd_schema_notes() -> String {
    use crate::kube::openapi;
    use crate::kube::openapi_cel::Status;
    use std::collections::{BTreeMap, BTreeSet};
    let mut checked = BTreeSet::new();
    let mut other: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut transition: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for rule in openapi::cel_rules() {
        let kind = rule.kind.rsplit('/').next().unwrap_or("").to_string();
        match rule.status {
            Status::Checked => {
                checked.insert(rule.text);
            }
            Status::Transition => {
                transition.entry(rule.text).or_default().insert(kind);
            }
            Status::NotChecked(why) => {
                other.entry((rule.text, why)).or_default().insert(kind);
            }
        }
    }
    let list = |kinds: BTreeSet<String>| kinds.into_iter().collect::<Vec<_>>().join(", ");
    let mut out = format!("    schemas: {}\n", openapi::RELEASES.join(", "));
    out.push_str(&format!(
        "    CEL rules (x-kubernetes-validations): {} evaluated, {} not checked, {} transition rule(s) the API server does not run on a create\n",
        checked.len(),
        other.len(),
        transition.len()
    ));
    for ((rule, why), kinds) in other {
        out.push_str(&format!(
            "      - not checked: {rule} ({}): {why}\n",
            list(kinds)
        ));
    }
    for (rule, kinds) in transition {
        out.push_str(&format!(
            "      - not run on a create: {rule} ({})\n",
            list(kinds)
        ));
    }
    out
}

pub async fn run(global: &Global, request: Request) -> Result<u8> {
    if request.list_analyzers {
        let mut out = String::new();
        for a in analyzers::all() {
            out.push_str(&format!(
                "* {}:\n    {} ({})\n    reads: {}\n",
                a.name,
                a.description,
                a.codes
                    .iter()
                    .map(|m| m.code)
                    .collect::<Vec<_>>()
                    .join(", "),
                a.needs
                    .iter()
                    .map(|k| k.list_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if a.name == "crd-schemas" {
                out.push_str(&crd_schema_notes());
            }
            if !a.on_by_default {
                out.push_str("    off by default: runs only when named with --analyzer\n");
            }
        }
        write::stdout(&out).map_err(Error::Output)?;
        return Ok(exit::OK);
    }
    for warning in &request.warnings {
        eprintln!("{warning}");
    }
    let paths = &request.inputs;
    let use_kube = request.read_cluster;

    let mut snapshot = Snapshot::default();
    let mut live_namespace = None;
    // The specs of the live config, typed as it was read.
    let mut typed = TypedSpecs::default();
    if use_kube {
        (snapshot, live_namespace, typed) =
            crate::source::live::snapshot_for_analyze(global, request.all_namespaces)
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
        live_namespace.unwrap_or_else(|| crate::source::cluster::scope_namespace(global, None));
    let mut file_names = Vec::new();
    let mut not_analysed = std::collections::BTreeMap::new();
    if !paths.is_empty() {
        let options = FileOptions {
            recursive: request.recursive,
            default_namespace: (!request.all_namespaces).then(|| namespace.clone()),
            max_input: Some(request.max_input_size),
        };
        let (from_files, stats) = files::load(paths, &options).map_err(parse_errors)?;
        tracing::info!(
            files = stats.files.len(),
            documents = stats.documents,
            objects = stats.objects,
            "read manifests"
        );
        if stats.objects == 0 && from_files.rejections.is_empty() {
            return Err(nothing_to_analyse(paths, request.recursive, &stats));
        }
        if let Some(line) = stats.not_analysed_line() {
            eprintln!("{line}");
        }
        file_names = stats.files;
        not_analysed = stats.not_analysed;
        snapshot.extend(from_files);
    }
    if let Some(path) = &request.mesh_config {
        snapshot.mesh_config = Some(files::load_mesh_config(path, request.max_input_size)?);
    }
    if let Some(path) = &request.mesh_networks {
        snapshot.mesh_networks = Some(files::load_mesh_networks(path, request.max_input_size)?);
    }

    let mut report: Report = analyzers::run_typed(
        &snapshot,
        typed,
        &request.analyzers,
        analyzers::Afterwards::Exit,
    );
    let runtime_wanted = analyzers::selected(&analyzers::RUNTIME, &request.analyzers);
    if use_kube && request.probe && runtime_wanted {
        let options = crate::probe::ProbeOptions::with_timeout(request.probe_timeout);
        let outcome = runtime::check(global, &snapshot, &options).await?;
        report.skipped.extend(outcome.skipped);
        // The analyzers' findings are sorted already: sorted again only with the probes' among them.
        if !outcome.findings.is_empty() {
            report.findings.extend(outcome.findings);
            report.sort_and_dedup();
        }
    }
    // A live namespace scope keeps findings about that namespace (and cluster-scoped ones);
    // files are analysed whole unless -n narrows them.
    if !request.all_namespaces && (use_kube || global.namespace.is_some()) {
        report.keep_namespace(&namespace);
    }
    report.exclude_namespaces(&request.exclude_namespaces);
    report.suppress(&request.suppressions, &snapshot);
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

    let mut unchanged = Vec::new();
    let mut absent = Vec::new();
    if let Some(path) = &request.write_baseline {
        let baseline = crate::findings::baseline::Baseline::of(&report.findings);
        let mut text = crate::output::json::pretty_json(&baseline);
        text.push('\n');
        std::fs::write(path, text).map_err(|e| {
            Error::Data(format!("cannot write the baseline {}: {e}", path.display()))
        })?;
        eprintln!(
            "wrote {} finding(s) to the baseline {}",
            baseline.findings.len(),
            path.display()
        );
    }
    if let Some(path) = &request.baseline {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Data(format!("cannot read the baseline {}: {e}", path.display()))
        })?;
        let baseline = crate::findings::baseline::Baseline::parse(&text)
            .map_err(|e| Error::Data(format!("{} is not a baseline: {e}", path.display())))?;
        let comparison = baseline.compare(std::mem::take(&mut report.findings));
        report.findings = comparison.new;
        unchanged = comparison.unchanged;
        absent = comparison.absent;
        if !unchanged.is_empty() {
            eprintln!(
                "{} known finding(s) of the baseline {} remain (not shown)",
                unchanged.len(),
                path.display()
            );
        }
        if !absent.is_empty() {
            eprintln!(
                "{} entr{} of the baseline {} no longer occur{}:",
                absent.len(),
                if absent.len() == 1 { "y" } else { "ies" },
                path.display(),
                if absent.len() == 1 { "s" } else { "" }
            );
            for e in &absent {
                eprintln!("  {}", e.describe());
            }
        }
    }
    let visible: Vec<&Finding> = report.visible(request.output_threshold).collect();
    let styles = Styles::new(global.color.enabled(Stream::Stdout));
    let show_cluster = global.context.len() > 1;
    let what = target(&request, &namespace, &file_names, use_kube);
    let coverage = crate::output::coverage::Coverage {
        skipped: &skipped,
        not_analysed: &not_analysed,
        baseline: request
            .baseline
            .is_some()
            .then_some(crate::output::coverage::BaselineView {
                unchanged: &unchanged,
                absent: &absent,
            }),
    };
    if !visible.is_empty() || !matches!(request.output, Format::Text | Format::Log) {
        write::stdout(&findings::render(
            &visible,
            request.output,
            &styles,
            show_cluster,
            &coverage,
            request.failure_threshold,
        ))
        .map_err(Error::Output)?;
    }
    let err = Styles::new(global.color.enabled(Stream::Stderr));
    if visible.is_empty() {
        if coverage.is_complete() {
            let new = if request.baseline.is_some() {
                " new"
            } else {
                ""
            };
            eprintln!(
                "{} No{new} validation issues found when analyzing {what}.",
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
    // The process ends right after this: skip freeing a large snapshot, and thousands of
    // findings, piece by piece.
    std::mem::forget(snapshot);
    let report = std::mem::ManuallyDrop::new(report);
    if report.fails(request.failure_threshold) && request.write_baseline.is_none() {
        let count = report
            .findings
            .iter()
            .filter(|f| f.level().reaches(request.failure_threshold))
            .count();
        eprintln!(
            "Found {count} issue(s) at or above {} when analyzing {what}; see {} for causes and fixes.",
            request.failure_threshold,
            crate::findings::messages::DOCS_BASE
        );
        return Ok(exit::FINDINGS);
    }
    if !skipped.is_empty() && !request.allow_incomplete {
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
