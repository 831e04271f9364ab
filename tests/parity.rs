//! Parity with Istio's own analyzer tests: every injection, port-name and proxy-image case of
//! Istio's test grid (tests/fixtures/istio/expected.txt), run on Istio's test inputs, must give
//! the same multiset of (code, resource) as Istio expects, except the differences documented in
//! docs/compat.md (listed in `KNOWN_DIFFERENCES` below).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mesh_doctor::analysis as analyzers;
use mesh_doctor::source::files::{self, FileOptions};

const REFERENCE: &str = "tests/fixtures/istio";

/// Istio analyzer -> (our analyzer, the Istio codes it covers).
const FAMILIES: &[(&str, &str, &[&str])] = &[
    (
        "injection.Analyzer",
        "injection",
        &["IST0102", "IST0103", "IST0123", "IST0148"],
    ),
    ("injection.ImageAnalyzer", "proxy-image", &["IST0158"]),
    (
        "service.PortNameAnalyzer",
        "port-names",
        &["IST0118", "IST0150"],
    ),
];

/// (case name, code, resource, +1 = we report it and Istio does not / -1 = the reverse).
/// Each line has a section in docs/compat.md.
const KNOWN_DIFFERENCES: &[(&str, &str, &str, i32)] = &[];

#[derive(Debug)]
struct Case {
    name: String,
    analyzer: String,
    files: Vec<PathBuf>,
    mesh_config: Option<PathBuf>,
    expected: Vec<(String, String)>,
}

fn parse_expected() -> Vec<Case> {
    let text = std::fs::read_to_string(Path::new(REFERENCE).join("expected.txt"))
        .expect("tests/fixtures/istio/expected.txt is readable");
    let mut cases = Vec::new();
    let quoted = |s: &str| -> Vec<String> {
        s.split('\'')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let to_path =
        |p: &str| Path::new(REFERENCE).join(p.replacen("testdata/", "analyzer-testdata/", 1));
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("CASE ") {
            let parts: Vec<&str> = rest.split(" | ").collect();
            let name = quoted(parts[0]).into_iter().next().unwrap_or_default();
            let mut case = Case {
                name,
                analyzer: String::new(),
                files: Vec::new(),
                mesh_config: None,
                expected: Vec::new(),
            };
            for part in &parts[1..] {
                if let Some(a) = part.strip_prefix("analyzer=") {
                    case.analyzer = a.trim().to_string();
                } else if let Some(f) = part.strip_prefix("files=") {
                    case.files = quoted(f).iter().map(|p| to_path(p)).collect();
                } else if let Some(m) = part.strip_prefix("meshConfigFile=") {
                    case.mesh_config = Some(to_path(m.trim()));
                }
            }
            cases.push(case);
        } else if let Some(rest) = line.trim().strip_prefix("expected: ") {
            if rest == "(none)" {
                continue;
            }
            let (left, origin) = rest
                .split_once(" -> ")
                .expect("expected line has an origin");
            let code = left
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            if let Some(case) = cases.last_mut() {
                case.expected.push((code, origin.trim().to_string()));
            }
        }
    }
    cases
}

fn multiset(items: impl IntoIterator<Item = (String, String)>) -> BTreeMap<(String, String), i32> {
    let mut map = BTreeMap::new();
    for item in items {
        *map.entry(item).or_insert(0) += 1;
    }
    map
}

#[test]
fn istio_analyzer_cases_give_istio_results() {
    let cases = parse_expected();
    let mut ran = 0;
    let mut failures = Vec::new();
    for case in &cases {
        let Some((_, ours, codes)) = FAMILIES
            .iter()
            .find(|(istio, _, _)| *istio == case.analyzer)
        else {
            continue;
        };
        ran += 1;
        let options = FileOptions {
            recursive: false,
            default_namespace: None,
            max_input: None,
        };
        let (mut snapshot, _) = files::load(&case.files, &options)
            .unwrap_or_else(|e| panic!("case {}: cannot load {:?}: {e:?}", case.name, case.files));
        if let Some(mesh) = &case.mesh_config {
            snapshot.mesh_config = Some(
                files::load_mesh_config(mesh, files::DEFAULT_MAX_INPUT).expect("mesh config loads"),
            );
        }
        let report = analyzers::run(&snapshot, &[ours.to_string()]);
        let got = multiset(
            report
                .findings
                .iter()
                .filter(|f| codes.contains(&f.code()))
                .map(|f| (f.code().to_string(), f.origin().unwrap_or_default())),
        );
        let mut want = multiset(case.expected.clone());
        for (name, code, resource, delta) in KNOWN_DIFFERENCES {
            if *name == case.name {
                *want
                    .entry((code.to_string(), resource.to_string()))
                    .or_insert(0) += delta;
            }
        }
        want.retain(|_, n| *n > 0);
        if got != want {
            failures.push(format!(
                "case {:?} ({}):\n  expected {want:?}\n  got      {got:?}",
                case.name, case.analyzer
            ));
        }
    }
    assert!(ran >= 12, "only {ran} cases ran; is expected.txt complete?");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
