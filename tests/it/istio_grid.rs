//! Istio's own analyzer test grid (tests/fixtures/istio/analyzer-grid.json: all 104 cases of
//! `analyzers_test.go`), run through the library one analyzer per case, as Istio's harness
//! does: the case's files (Pods, Services, Secrets and Nodes included), its mesh config, and
//! the default ingress gateway (tests/fixtures/istio/default-ingress.yaml). A case agrees when
//! the multiset of (code, origin) equals Istio's expectation.
//!
//! Prints `istio analyzer grid: N of 104 cases agree`. Fails when any case disagrees, except the
//! differences in [`KNOWN_DIFFERENCES`], each with its section in docs/compat.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mesh_doctor::analysis as analyzers;
use mesh_doctor::istio::config;
use mesh_doctor::kube::kind::{KINDS, Kind};
use mesh_doctor::kube::snapshot::{Snapshot, WorkloadKind};
use mesh_doctor::source::files::{self, FileOptions};
use serde_json::Value;

const REFERENCE: &str = "tests/fixtures/istio";

/// (case name, code, origin, +1 = we report it and Istio does not / -1 = the reverse). Each
/// line would be explained in docs/compat.md; none is left.
const KNOWN_DIFFERENCES: &[(&str, &str, &str, i32)] = &[];

fn fixture(path: &str) -> PathBuf {
    Path::new(REFERENCE).join(path.replacen("testdata/", "analyzer-testdata/", 1))
}

/// Marks every object of a snapshot as read from `cluster`.
fn mark_cluster(snapshot: &mut Snapshot, cluster: &str) {
    let name: Arc<str> = Arc::from(cluster);
    macro_rules! mark {
        ($($list:ident),*) => {
            $(for o in &mut snapshot.$list {
                o.origin.cluster = Some(name.clone());
            })*
        };
    }
    mark!(
        namespaces,
        pods,
        services,
        workloads,
        config_maps,
        webhooks,
        pod_disruption_budgets,
        events,
        endpoint_slices,
        network_policies,
        proxy_configs,
        config,
        nodes,
        secrets
    );
}

fn multiset(items: impl IntoIterator<Item = (String, String)>) -> BTreeMap<(String, String), i32> {
    let mut map = BTreeMap::new();
    for item in items {
        *map.entry(item).or_insert(0) += 1;
    }
    map
}

struct Outcome {
    name: String,
    analyzer: String,
    agrees: bool,
    detail: String,
}

/// The snapshot of one case: its files, mesh config, mesh networks and the default ingress.
fn load_case(case: &Value) -> Result<Snapshot, String> {
    let mut paths: Vec<PathBuf> = case["inputFiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(fixture)
        .collect();
    let mesh = case.get("meshConfigFile").and_then(Value::as_str).map(|m| {
        files::load_mesh_config(&fixture(m), files::DEFAULT_MAX_INPUT).expect("mesh config loads")
    });
    let ingress_off = mesh
        .as_ref()
        .and_then(|m| m.get("ingressControllerMode"))
        .and_then(Value::as_str)
        .is_some_and(|m| m.eq_ignore_ascii_case("off"));
    if !ingress_off {
        paths.push(Path::new(REFERENCE).join("default-ingress.yaml"));
    }
    let options = FileOptions {
        recursive: false,
        default_namespace: None,
        max_input: None,
    };
    let (mut snapshot, _) = match files::load(&paths, &options) {
        Ok(loaded) => loaded,
        Err(e) => return Err(format!("cannot load: {e:?}")),
    };
    // A multi-cluster case: each cluster's files are one context's snapshot, its objects
    // marked with the cluster they were read from, as `--context a --context b` gives them.
    for cluster in ["cluster1", "cluster2"] {
        let Some(inputs) = case
            .get(format!("{cluster}InputFiles"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        let paths: Vec<PathBuf> = inputs
            .iter()
            .filter_map(Value::as_str)
            .map(fixture)
            .collect();
        match files::load(&paths, &options) {
            Ok((mut one, _)) => {
                mark_cluster(&mut one, cluster);
                snapshot.extend(one);
            }
            Err(e) => return Err(format!("cannot load {cluster}: {e:?}")),
        }
    }
    if let Some(networks) = case.get("meshNetworksFile").and_then(Value::as_str) {
        snapshot.mesh_networks = Some(
            files::load_mesh_networks(&fixture(networks), files::DEFAULT_MAX_INPUT)
                .expect("mesh networks load"),
        );
    }
    if let Some(mesh) = mesh {
        snapshot.mesh_config = Some(mesh);
    }
    Ok(snapshot)
}

fn run_case(case: &Value) -> Outcome {
    let name = case["name"].as_str().unwrap_or_default().to_string();
    let analyzer = case["istioctlName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut outcome = Outcome {
        name: name.clone(),
        analyzer: analyzer.clone(),
        agrees: false,
        detail: String::new(),
    };
    if analyzers::find(&analyzer).is_none() {
        outcome.detail = "no such analyzer in mesh-doctor".into();
        return outcome;
    }
    let snapshot = match load_case(case) {
        Ok(snapshot) => snapshot,
        Err(detail) => {
            outcome.detail = detail;
            return outcome;
        }
    };
    let report = analyzers::run(&snapshot, std::slice::from_ref(&analyzer));
    // Istio's harness reads its inputs without line numbers, so its de-duplication (by the
    // message's text) merges findings that differ only in their line: compare the same way.
    let unique: std::collections::BTreeSet<(String, String, String)> = report
        .findings
        .iter()
        .filter(|f| f.code().starts_with("IST"))
        .map(|f| {
            (
                f.code().to_string(),
                f.origin().unwrap_or_default(),
                f.message.clone(),
            )
        })
        .collect();
    let got = multiset(unique.into_iter().map(|(code, origin, _)| (code, origin)));
    let mut want = multiset(case["expected"].as_array().into_iter().flatten().map(|e| {
        (
            e["code"].as_str().unwrap_or_default().to_string(),
            e["origin"].as_str().unwrap_or_default().to_string(),
        )
    }));
    for (case_name, code, origin, delta) in KNOWN_DIFFERENCES {
        if *case_name == name {
            *want
                .entry((code.to_string(), origin.to_string()))
                .or_insert(0) += delta;
        }
    }
    want.retain(|_, n| *n > 0);
    outcome.agrees = got == want;
    if !outcome.agrees {
        outcome.detail = format!("expected {want:?}\n    got      {got:?}");
    }
    outcome
}

#[test]
fn istio_analyzer_grid() {
    let grid = grid();
    assert_eq!(grid.len(), 104, "the grid has Istio's 104 cases");
    let outcomes: Vec<Outcome> = grid.iter().map(run_case).collect();
    let agree = outcomes.iter().filter(|o| o.agrees).count();
    println!("istio analyzer grid: {agree} of {} cases agree", grid.len());
    let mut failures = Vec::new();
    for o in &outcomes {
        if !o.agrees {
            println!("  differs: {:?} ({}): {}", o.name, o.analyzer, o.detail);
            failures.push(format!(
                "case {:?} ({}):\n    {}",
                o.name, o.analyzer, o.detail
            ));
        }
    }
    let compat = std::fs::read_to_string("docs/compat.md").expect("docs/compat.md is readable");
    for (case, ..) in KNOWN_DIFFERENCES {
        assert!(
            compat.contains(case),
            "docs/compat.md does not explain the grid difference of case {case:?}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs every analyzer on `snapshot` and on it without each kind it holds: codes that the
/// analyzer did not declare, and kinds it read without declaring them.
fn check_declarations(
    name: &str,
    snapshot: &Snapshot,
    undeclared_codes: &mut std::collections::BTreeSet<String>,
    undeclared_reads: &mut std::collections::BTreeSet<String>,
) -> usize {
    let mut runs = 0;
    // The case, then the case without each kind it holds.
    let lesser: Vec<(Kind, Snapshot)> = KINDS
        .iter()
        .filter_map(|i| without(snapshot, i.kind).map(|s| (i.kind, s)))
        .collect();
    let input = analyzers::Input::of(snapshot);
    let inputs: Vec<(Kind, analyzers::Input)> = lesser
        .iter()
        .map(|(kind, s)| {
            let input = analyzers::Input::of(s);
            (*kind, input)
        })
        .collect();
    for analyzer in analyzers::all().filter(|a| !a.probes()) {
        let full = findings_of(analyzer, &input);
        runs += 1;
        for (code, ..) in &full {
            if !analyzer.codes.iter().any(|m| m.code == code) {
                undeclared_codes.insert(format!("{} emits {code}", analyzer.name));
            }
        }
        for (kind, less) in &inputs {
            if analyzer.needs.contains(kind) {
                continue;
            }
            runs += 1;
            if findings_of(analyzer, less) != full {
                undeclared_reads.insert(format!(
                    "{} reads {} (case {})",
                    analyzer.name,
                    kind.list_name(),
                    name
                ));
            }
        }
    }
    runs
}

/// The folders of mesh-doctor's own fixtures that the declaration check also runs on.
const FIXTURE_DIRS: &[&str] = &[
    "ambient",
    "bookinfo",
    "control-plane",
    "gateway_api",
    "path",
    "security",
    "traffic",
    "workloads",
    "incomplete",
    "schema",
];

fn grid() -> Vec<Value> {
    let text = std::fs::read_to_string(Path::new(REFERENCE).join("analyzer-grid.json"))
        .expect("tests/fixtures/istio/analyzer-grid.json is readable");
    serde_json::from_str(&text).expect("the grid is JSON")
}

/// The snapshot without the objects of one kind (or `None` when it holds none of them): what
/// an analyzer would see if that kind had not been read.
fn without(snapshot: &Snapshot, kind: Kind) -> Option<Snapshot> {
    let mut s = snapshot.clone();
    macro_rules! clear {
        ($field:ident) => {{
            if s.$field.is_empty() {
                return None;
            }
            s.$field.clear();
        }};
    }
    let mut workloads = |of: WorkloadKind| {
        let before = s.workloads.len();
        s.workloads.retain(|w| w.object.kind != of);
        before != s.workloads.len()
    };
    match kind {
        Kind::Deployments => workloads(WorkloadKind::Deployment).then_some(())?,
        Kind::StatefulSets => workloads(WorkloadKind::StatefulSet).then_some(())?,
        Kind::DaemonSets => workloads(WorkloadKind::DaemonSet).then_some(())?,
        Kind::CronJobs => workloads(WorkloadKind::CronJob).then_some(())?,
        Kind::Namespaces => clear!(namespaces),
        Kind::Pods => clear!(pods),
        Kind::Services => clear!(services),
        Kind::ConfigMaps => clear!(config_maps),
        Kind::Secrets => clear!(secrets),
        Kind::Events => clear!(events),
        Kind::EndpointSlices => clear!(endpoint_slices),
        Kind::PodDisruptionBudgets => clear!(pod_disruption_budgets),
        Kind::NetworkPolicies => clear!(network_policies),
        Kind::Nodes => clear!(nodes),
        Kind::MutatingWebhookConfigurations => clear!(webhooks),
        Kind::ValidatingWebhookConfigurations => clear!(validating_webhooks),
        Kind::CustomResourceDefinitions => clear!(crds),
        Kind::PodsBeyondScope => clear!(pods_beyond_scope),
        Kind::ServicesBeyondScope => clear!(services_beyond_scope),
        Kind::NamespacesBeyondScope => clear!(namespaces_beyond_scope),
        Kind::ProxyConfigs => clear!(proxy_configs),
        Kind::MeshNetworks => {
            s.mesh_networks.take()?;
        }
        // Remote secrets are Secrets of istio-system with the multicluster label.
        Kind::RemoteSecrets => return None,
        config_kind => {
            let before = s.config.len();
            s.config.retain(|c| {
                config::config_kind(&c.object.api_version, &c.object.kind) != Some(config_kind)
            });
            if before == s.config.len() {
                return None;
            }
        }
    }
    Some(s)
}

/// One analyzer's findings (code, origin, message), sorted, run directly on a prepared input.
fn findings_of(
    analyzer: &analyzers::Analyzer,
    input: &analyzers::Input,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    match analyzer.run {
        analyzers::Run::Snapshot(run) => run(input.snapshot, &mut out),
        analyzers::Run::Config(run) => run(input, &mut out),
        analyzers::Run::Probe => {}
    }
    let mut found: Vec<_> = out
        .iter()
        .map(|f| {
            (
                f.code().to_string(),
                f.origin().unwrap_or_default(),
                f.message.clone(),
            )
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// As Istio's `CheckMetadataInputs`: over the whole grid, every analyzer alone on every case,
/// then again without each kind it did not declare. A finding that changes means the analyzer
/// read that kind without declaring it (and would not be skipped when it cannot be read); a
/// code it did not declare fails too.
#[test]
fn over_the_grid_every_analyzer_emits_only_its_codes_and_reads_only_its_kinds() {
    let mut undeclared_codes = std::collections::BTreeSet::new();
    let mut undeclared_reads = std::collections::BTreeSet::new();
    let mut runs = 0;
    let mut inputs: Vec<(String, Snapshot)> = grid()
        .iter()
        .filter_map(|case| Some((case["name"].to_string(), load_case(case).ok()?)))
        .collect();
    // And mesh-doctor's own fixtures, one snapshot per file (its own analyzers' codes).
    for dir in FIXTURE_DIRS {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(Path::new("tests/fixtures").join(dir))
            .expect("fixture dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        paths.sort();
        for path in paths {
            let options = FileOptions {
                recursive: false,
                default_namespace: None,
                max_input: None,
            };
            if let Ok((snapshot, _)) = files::load(std::slice::from_ref(&path), &options) {
                inputs.push((path.display().to_string(), snapshot));
            }
        }
    }
    for (name, snapshot) in &inputs {
        runs += check_declarations(name, snapshot, &mut undeclared_codes, &mut undeclared_reads);
    }
    println!("{runs} analyzer runs over the grid and the fixtures");
    assert!(
        undeclared_codes.is_empty() && undeclared_reads.is_empty(),
        "codes not declared:\n  {}\nkinds read but not declared:\n  {}",
        undeclared_codes
            .into_iter()
            .collect::<Vec<_>>()
            .join("\n  "),
        undeclared_reads
            .into_iter()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}
