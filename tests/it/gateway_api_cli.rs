//! `analyze` on Gateway API, webhook and CRD manifests (issue 14), as a user runs it on files:
//! IST0171 from status conditions, IST0166 on policy selectors, IST0176 on old Gateway API
//! CRDs, IST0139 on Istio injection webhooks, IST0163/IST0164 on external control planes, and
//! a Gateway API `Gateway` kept apart from Istio's `Gateway`.

const DIR: &str = "tests/fixtures/gateway_api";

use crate::offline;
use offline::run;

/// A scenario of the live test with its namespace placeholder filled in, as a file.
fn scenario(file: &str, ns: &str) -> (tempfile::TempDir, String) {
    let text = std::fs::read_to_string(format!("{DIR}/{file}")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::write(&path, text.replace("__NS__", ns)).unwrap();
    let shown = path.to_str().unwrap().to_string();
    (dir, shown)
}

#[test]
fn old_crds_and_unreachable_external_control_planes_from_files() {
    let file = format!("{DIR}/files-only.yaml");
    let (stdout, stderr, code) = run(&["analyze", "-f", &file]);
    assert_eq!(code, 79, "{stderr}");
    let expected = [
        format!(
            "Warning [IST0163] (MutatingWebhookConfiguration istio-sidecar-injector-external {file}:49) The hostname (https://istiod.example.com:port/inject) that was provided for the webhook (namespace.sidecar-injector.istio.io) to reach the ingress gateway on the external control plane cluster was provided in an invalid format. Traffic may not flow properly."
        ),
        format!(
            "Warning [IST0163] (ValidatingWebhookConfiguration istio-validator-external {file}:39) The hostname () that was provided for the webhook (rev.validation.istio.io) to reach the ingress gateway on the external control plane cluster is blank. Traffic may not flow properly."
        ),
        format!(
            "Warning [IST0176] (CustomResourceDefinition tcproutes.gateway.networking.k8s.io {file}:1) Gateway API CRD \"tcproutes.gateway.networking.k8s.io\" is at version \"1.5.1\" but Istio requires at least \"1.6.0\"; resources of this kind will not be processed. Upgrade the Gateway API CRDs to satisfy the minimum version."
        ),
    ];
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected, "{stdout}");
    assert!(!stderr.contains("not analysed"), "{stderr}");
}

#[test]
fn negative_conditions_and_a_virtualservice_bound_to_a_gateway_api_gateway() {
    let (_dir, file) = scenario("conditions.yaml", "shop");
    let (stdout, stderr, code) = run(&["analyze", "-f", &file, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let got: Vec<(String, String, String)> = items
        .iter()
        .map(|i| {
            (
                i["code"].as_str().unwrap().to_string(),
                i["origin"].as_str().unwrap().to_string(),
                i["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let has = |code: &str, origin: &str, message: &str| {
        got.iter()
            .any(|(c, o, m)| c == code && o == origin && m == message)
    };
    assert!(
        has(
            "IST0171",
            "Gateway shop/edge",
            "A condition with a negative status is present: type=Programmed, reason=AddressNotAssigned, message=no address was assigned."
        ),
        "{stdout}"
    );
    assert!(
        has(
            "IST0171",
            "HTTPRoute shop/web",
            "A condition with a negative status is present: type=Accepted, reason=NotAllowedByListeners, message=no listener allows this route."
        ),
        "{stdout}"
    );
    assert!(
        has(
            "IST0171",
            "Service shop/web",
            "A condition with a negative status is present: type=istio.io/WaypointBound, reason=NoWaypoint, message=waypoint \"shop/waypoint\" is not ready."
        ),
        "{stdout}"
    );
    assert_eq!(
        got.iter().filter(|(c, ..)| c == "IST0171").count(),
        5,
        "{stdout}"
    );
    // The Gateway API Gateway `edge` exists (istio#60708): no "not found", but its listener's
    // hostname does not cover the VirtualService's host.
    assert!(
        has(
            "IST0132",
            "VirtualService shop/bound",
            "one or more host [other.shop.example] defined in VirtualService shop/bound not found in Gateway shop/edge."
        ),
        "{stdout}"
    );
    assert!(!got.iter().any(|(c, ..)| c == "IST0101"), "{stdout}");
    assert_eq!(got.len(), 6, "{stdout}");
}

#[test]
fn policy_selectors_on_gateway_api_pods() {
    let (_dir, file) = scenario("selectors.yaml", "shop");
    // The policies' other findings (the AuthorizationPolicy names a source namespace the file
    // does not hold: IST0101) are the security analyzers'.
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        &file,
        "--analyzer",
        "k8sgateway.SelectorAnalyzer",
    ]);
    assert_eq!(code, 79, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for kind in [
        "AuthorizationPolicy shop/ap-selector",
        "RequestAuthentication shop/ra-selector",
        "Telemetry shop/telemetry-selector",
        "WasmPlugin shop/wasm-selector",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("Warning [IST0166] ({kind} "))
                && l.ends_with(") Ineffective selector on Kubernetes Gateway edge. Use the TargetRef field instead.")),
            "{kind}: {stdout}"
        );
    }
    // The Telemetry with a targetRef is effective.
    assert!(!stdout.contains("telemetry-target"), "{stdout}");
}

#[test]
fn overlapping_injection_webhooks_and_missing_services() {
    let (_dir, file) = scenario("webhooks.yaml", "shop");
    let (stdout, stderr, code) = run(&["analyze", "-f", &file, "--analyzer", "webhook.Analyzer"]);
    assert_eq!(code, 79, "{stderr}");
    let messages: Vec<&str> = stdout
        .lines()
        .map(|l| l.split_once(") ").map_or(l, |(_, m)| m))
        .collect();
    assert_eq!(
        messages,
        [
            "Injector refers to a control plane service that does not exist: shop/istiod-missing.",
            "Webhook overlaps with others: [shop-second-injector/namespace.sidecar-injector.istio.io]. This may cause injection to occur twice.",
            "Webhook overlaps with others: [istio-sidecar-injector-shop/rev.namespace.sidecar-injector.istio.io]. This may cause injection to occur twice.",
        ],
        "{stdout}"
    );
    assert!(
        stdout.lines().all(|l| l.starts_with("Error [IST0139]")),
        "{stdout}"
    );
}

#[test]
fn a_gateway_api_gateway_is_not_an_istio_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gw.yaml");
    // A Gateway API Gateway (no `selector`, no `servers`) and an HTTPRoute: Istio's Gateway
    // analyzers (selector not found, IST0101) never see them, and nothing is "not analysed".
    std::fs::write(
        &path,
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: edge, namespace: shop}\nspec:\n  gatewayClassName: istio\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: web, namespace: shop}\nspec:\n  parentRefs: [{name: edge}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: mine}\nspec: {controllerName: example.com/mine}\n",
    )
    .unwrap();
    let (stdout, stderr, code) = run(&["analyze", "-f", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(!stderr.contains("not analysed"), "{stderr}");
    assert!(stderr.contains("No validation issues found"), "{stderr}");
}

#[test]
fn the_analyzers_are_listed_with_what_they_read_and_selectable_by_istios_names() {
    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    for (name, code, reads) in [
        (
            "conditions.ConditionAnalyzer",
            "IST0171",
            "httproutes.gateway.networking.k8s.io",
        ),
        (
            "webhook.Analyzer",
            "IST0139",
            "mutatingwebhookconfigurations",
        ),
        (
            "externalcontrolplane.ExternalControlPlaneAnalyzer",
            "IST0163, IST0164",
            "validatingwebhookconfigurations",
        ),
        ("k8sgateway.SelectorAnalyzer", "IST0166", "wasmplugins"),
        (
            "k8sgateway.CRDVersionAnalyzer",
            "IST0176",
            "customresourcedefinitions",
        ),
    ] {
        let entry = stdout
            .split("* ")
            .find(|e| e.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} not listed: {stdout}"));
        assert!(entry.contains(&format!("({code})")), "{entry}");
        assert!(entry.contains(reads), "{entry}");
    }
    let file = format!("{DIR}/files-only.yaml");
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        &file,
        "--analyzer",
        "k8sgateway.CRDVersionAnalyzer",
    ]);
    assert_eq!(code, 79);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("[IST0176]"), "{stdout}");
    let (stdout, _, code) = run(&["codes"]);
    assert_eq!(code, 0);
    for c in [
        "IST0139", "IST0163", "IST0164", "IST0166", "IST0171", "IST0176",
    ] {
        assert!(stdout.contains(c), "{c}: {stdout}");
    }
}
