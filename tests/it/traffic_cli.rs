//! `analyze` on traffic-management manifests (issue 13), as a user runs it on files.

const EXSHOP: &str = "tests/fixtures/traffic/exshop.yaml";

use crate::offline;
use offline::run;

#[test]
fn the_issue_example_gives_istioctls_five_live_findings_from_the_file_alone() {
    let (stdout, stderr, code) = run(&["analyze", "-f", EXSHOP]);
    assert_eq!(code, 79, "{stderr}");
    let at = |line: u32| format!("(VirtualService exshop/reviews {EXSHOP}:{line})");
    let expected = [
        format!(
            "Error [IST0101] {} Referenced gateway not found: \"missing-gateway\"",
            at(11)
        ),
        format!(
            "Error [IST0101] {} Referenced host+subset in destinationrule not found: \"reviews+v3\"",
            at(14)
        ),
        format!(
            "Error [IST0101] {} Referenced host not found: \"ratings-typo\"",
            at(15)
        ),
        format!(
            "Error [IST0106] {} Schema validation error: total destination weight = 0",
            at(6)
        ),
        format!(
            "Warning [IST0132] {} one or more host [reviews] defined in VirtualService exshop/reviews not found in Gateway exshop/missing-gateway.",
            at(11)
        ),
    ];
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected, "{stdout}");
    assert!(!stderr.contains("not analysed"), "{stderr}");
}

#[test]
fn json_carries_istios_codes_origins_and_messages() {
    let (stdout, _, code) = run(&["analyze", "-f", EXSHOP, "-o", "json"]);
    assert_eq!(code, 79);
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let got: Vec<(String, String)> = items
        .iter()
        .map(|i| {
            (
                i["code"].as_str().unwrap().to_string(),
                i["origin"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got.len(), 5, "{stdout}");
    assert!(
        got.iter()
            .all(|(_, o)| o == "VirtualService exshop/reviews")
    );
}

#[test]
fn analyzer_accepts_istios_names() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        EXSHOP,
        "--analyzer",
        "virtualservice.GatewayAnalyzer",
    ]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.contains("[IST0132]"), "{stdout}");
    assert!(stdout.contains("Referenced gateway not found"), "{stdout}");

    // Istio's name for one of mesh-doctor's own analyzers.
    let (_, stderr, code) = run(&[
        "analyze",
        "-f",
        EXSHOP,
        "--analyzer",
        "service.PortNameAnalyzer",
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn list_analyzers_names_the_kinds_each_reads() {
    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("* virtualservice.DestinationHostAnalyzer:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("reads: virtualservices, serviceentries, services"),
        "{stdout}"
    );
    assert!(
        stdout.contains("* envoyfilter.EnvoyPatchAnalyzer:"),
        "{stdout}"
    );
}

#[test]
fn deployments_count_as_pods_for_selectors() {
    let manifest = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: ingress, namespace: edge}
spec:
  selector: {matchLabels: {app: ingress}}
  template:
    metadata: {labels: {app: ingress}}
    spec: {containers: [{name: istio-proxy, image: proxyv2}]}
---
apiVersion: v1
kind: Service
metadata: {name: ingress, namespace: edge}
spec: {selector: {app: ingress}, ports: [{name: http, port: 80}]}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  selector: {app: ingress}
  servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ['*']}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: ingress, namespace: edge}
spec:
  workloadSelector: {labels: {app: ingress}}
";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge.yaml");
    std::fs::write(&path, manifest).unwrap();
    let path = path.to_str().unwrap();
    for analyzer in [
        "gateway.IngressGatewayPortAnalyzer",
        "gateway.ConflictingGatewayAnalyzer",
        "sidecar.SelectorAnalyzer",
    ] {
        let (stdout, stderr, code) = run(&["analyze", "-f", path, "--analyzer", analyzer]);
        assert_eq!(code, 0, "{analyzer}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{analyzer}: {stdout}");
    }
}
