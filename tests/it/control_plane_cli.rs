//! The control-plane checks on files, as a user runs them: `analyze -f` on a `kubectl get -o yaml`
//! dump of a control plane in trouble (tests/fixtures/control-plane/outage.yaml) and of a healthy
//! one, and `version --client`.

use crate::offline::{run, run_with_stdin};
use serde_json::Value;

const OUTAGE: &str = "tests/fixtures/control-plane/outage.yaml";
const HEALTHY: &str = "tests/fixtures/control-plane/healthy.yaml";

fn json(args: &[&str]) -> (Vec<Value>, i32) {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let (stdout, stderr, code) = run(&all);
    (
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}")),
        code,
    )
}

fn codes_and_origins(findings: &[Value]) -> Vec<(String, String)> {
    findings
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["origin"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn an_outage_dump_gives_every_control_plane_finding() {
    let (findings, code) = json(&["analyze", "-f", OUTAGE]);
    assert_eq!(code, 79);
    let got = codes_and_origins(&findings);
    let expected: Vec<(String, String)> = [
        (
            "MD0202",
            "MutatingWebhookConfiguration istio-sidecar-injector",
        ),
        ("MD0203", "ReplicaSet shop/web-7d4b9c6f5"),
        ("MD0201", "Deployment istio-system/istiod"),
        ("MD0204", "Namespace payments"),
    ]
    .into_iter()
    .map(|(c, o)| (c.to_string(), o.to_string()))
    .collect();
    assert_eq!(got, expected, "errors first, then warnings");
    let levels: Vec<&str> = findings
        .iter()
        .map(|f| f["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["Error", "Error", "Warning", "Warning"]);
    // References point at the line of what to change.
    let reference = |code: &str| {
        findings.iter().find(|f| f["code"] == code).unwrap()["reference"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(reference("MD0201"), format!("{OUTAGE}:72"), "spec.replicas");
    assert_eq!(
        reference("MD0204"),
        format!("{OUTAGE}:164"),
        "the istio.io/rev label"
    );
    assert!(
        findings[0]["documentationUrl"]
            .as_str()
            .unwrap()
            .ends_with("/docs/codes/MD0202.md")
    );
}

#[test]
fn the_log_lines_say_what_breaks_and_how_to_fix_it() {
    let (stdout, stderr, code) = run(&["analyze", "-f", OUTAGE]);
    assert_eq!(code, 79);
    assert!(
        stderr.contains("Found 4 issue(s) at or above Warning"),
        "{stderr}"
    );
    insta::assert_snapshot!("outage_log", stdout);
}

#[test]
fn errors_alone_still_fail_and_analyzers_can_be_chosen() {
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        OUTAGE,
        "--failure-threshold",
        "Error",
        "--output-threshold",
        "Error",
    ]);
    assert_eq!(code, 79, "MD0202 and MD0203 are errors");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");

    let (findings, code) = json(&["analyze", "-f", OUTAGE, "--analyzer", "webhook-failures"]);
    assert_eq!(code, 79);
    assert_eq!(
        codes_and_origins(&findings),
        [(
            "MD0203".to_string(),
            "ReplicaSet shop/web-7d4b9c6f5".to_string()
        )]
    );

    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    for name in [
        "istiod-availability",
        "webhook-endpoints",
        "webhook-failures",
        "cluster-id",
    ] {
        assert!(stdout.contains(&format!("* {name}:")), "{stdout}");
    }
}

#[test]
fn a_healthy_control_plane_with_a_revision_tag_is_clean() {
    let (stdout, stderr, code) = run(&["analyze", "-f", HEALTHY]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("No validation issues found"), "{stderr}");
}

#[test]
fn rendered_manifests_without_endpoint_slices_do_not_look_down() {
    let text = std::fs::read_to_string(OUTAGE)
        .unwrap()
        .replace("kind: EndpointSlice", "kind: NotAnEndpointSlice")
        .replace("kind: Event", "kind: NotAnEvent");
    let (stdout, _, code) = run_with_stdin(&["analyze", "-f", "-", "-o", "json"], &text);
    assert_eq!(code, 79, "MD0201 and MD0204 remain");
    let findings: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let codes: Vec<&str> = findings.iter().filter_map(|f| f["code"].as_str()).collect();
    assert_eq!(codes, ["MD0201", "MD0204"]);
    // The renamed documents are of kinds no mesh analysis concerns: not a gap, not in the array.
    assert!(findings.iter().all(|f| f["code"].is_string()), "{stdout}");
    assert_eq!(findings.len(), 2, "{stdout}");
}

#[test]
fn namespace_scope_keeps_the_istiod_it_depends_on() {
    let (findings, _) = json(&["analyze", "-f", OUTAGE, "-n", "shop"]);
    let got = codes_and_origins(&findings);
    assert!(
        got.contains(&(
            "MD0201".to_string(),
            "Deployment istio-system/istiod".to_string()
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            "MD0203".to_string(),
            "ReplicaSet shop/web-7d4b9c6f5".to_string()
        )),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|(c, _)| c == "MD0204"),
        "payments is out of scope: {got:?}"
    );
}

#[test]
fn suppression_works_on_control_plane_findings() {
    let (findings, code) = json(&[
        "analyze",
        "-f",
        OUTAGE,
        "-S",
        "MD0201=Deployment istio-system/*",
        "-S",
        "MD0203=ReplicaSet shop/*",
        "-S",
        "MD0202=MutatingWebhookConfiguration istio-sidecar-injector",
    ]);
    assert_eq!(code, 79);
    assert_eq!(
        codes_and_origins(&findings),
        [("MD0204".to_string(), "Namespace payments".to_string())]
    );
}

#[test]
fn version_client_needs_no_cluster() {
    let (stdout, _, code) = run(&["version", "--client"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        format!("client version: {}\n", env!("CARGO_PKG_VERSION"))
    );
    let (stdout, _, code) = run(&["version", "--client", "-o", "json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["clientVersion"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(doc.get("clusters").is_none());
    let (stdout, _, code) = run(&["version", "--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("69  cluster unreachable"), "{stdout}");
}
