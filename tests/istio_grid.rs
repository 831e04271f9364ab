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

use mesh_doctor::commands::analyze::analyzers;
use mesh_doctor::kube::snapshot::Snapshot;
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
        Err(e) => {
            outcome.detail = format!("cannot load: {e:?}");
            return outcome;
        }
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
            Err(e) => {
                outcome.detail = format!("cannot load {cluster}: {e:?}");
                return outcome;
            }
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
    let text = std::fs::read_to_string(Path::new(REFERENCE).join("analyzer-grid.json"))
        .expect("tests/fixtures/istio/analyzer-grid.json is readable");
    let grid: Vec<Value> = serde_json::from_str(&text).expect("the grid is JSON");
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
