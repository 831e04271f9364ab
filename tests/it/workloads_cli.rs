//! `analyze` on workload, annotation, deprecation and mesh networks mistakes (issue 14), as a
//! user runs it on files.

const SHOP: &str = "tests/fixtures/workloads/shop.yaml";
const NETWORKS: &str = "tests/fixtures/workloads/scenarios/meshnetworks.yaml";

use crate::offline;
use offline::run;

#[test]
fn workload_and_annotation_mistakes_are_istios_findings_with_their_lines() {
    let (stdout, stderr, code) = run(&["analyze", "-f", SHOP]);
    assert_eq!(code, 79, "{stderr}");
    let at = |what: &str, line: u32| format!("({what} {SHOP}:{line})");
    let expected = [
        format!(
            "Error [IST0147] {} Pod auto-pod contains `image: auto` but does not match any Istio injection webhook selectors.",
            at("Pod shop/auto-pod", 129)
        ),
        format!(
            "Warning [IST0002] {} Deprecated: OutboundTrafficPolicy.EgressProxy ignored",
            at("Sidecar shop/default", 162)
        ),
        format!(
            "Warning [IST0002] {} Deprecated: HTTPRoute.fault.delay.percent is deprecated; use HTTPRoute.fault.delay.percentage",
            at("VirtualService shop/productpage", 146)
        ),
        format!(
            "Warning [IST0107] {} Misplaced annotation: sidecar.istio.io/statsInclusionPrefixes can only be applied to Pod",
            at("Deployment shop/fortio", 46)
        ),
        format!(
            "Warning [IST0107] {} Misplaced annotation: kubernetes.io/ingress.class can only be applied to Ingress",
            at("Pod shop/misplaced", 35)
        ),
        format!(
            "Warning [IST0107] {} Misplaced annotation: networking.istio.io/exportTo can only be applied to Service",
            at("Pod shop/misplaced", 36)
        ),
        format!(
            "Warning [IST0108] {} Unknown annotation: networking.istio.io/exportThree",
            at("Service shop/httpbin", 9)
        ),
        format!(
            "Warning [IST0116] {} This deployment shop is associated with multiple services using port 9080 but different protocols: [shop/shop-tcp shop/shop-udp]",
            at("Deployment shop/shop", 83)
        ),
        format!(
            "Warning [IST0125] {} Invalid annotation readiness.status.sidecar.istio.io/initialDelaySeconds: strconv.ParseUint: parsing \"bar\": invalid syntax",
            at("Pod shop/invalid-annotations", 21)
        ),
        format!(
            "Warning [IST0125] {} Invalid annotation traffic.sidecar.istio.io/excludeOutboundPorts: excludeOutboundPorts invalid: failed parsing port 'http': failed parsing port 'http': strconv.ParseUint: parsing \"http\": invalid syntax",
            at("Pod shop/invalid-annotations", 23)
        ),
        format!(
            "Warning [IST0125] {} Invalid annotation traffic.sidecar.istio.io/includeOutboundIPRanges: includeIPRanges invalid: failed parsing cidr '10.0.0.0': netip.ParsePrefix(\"10.0.0.0\"): no '/'",
            at("Pod shop/invalid-annotations", 24)
        ),
        format!(
            "Warning [IST0125] {} Invalid annotation sidecar.istio.io/interceptionMode: interceptionMode invalid, use REDIRECT,TPROXY,NONE: FAST",
            at("Pod shop/invalid-annotations", 25)
        ),
        format!(
            "Warning [IST0125] {} Invalid annotation prometheus.istio.io/merge-metrics: strconv.ParseBool: parsing \"yes\": invalid syntax",
            at("Pod shop/invalid-annotations", 26)
        ),
        format!(
            "Warning [IST0137] {} This deployment store is associated with multiple services [shop/store shop/store-alt] using targetPort \"8080\" but different ports: [80 81].",
            at("Deployment shop/store", 107)
        ),
        format!(
            "Warning [IST0144] {} User ID (UID) 1337 is reserved for the sidecar proxy.",
            at("Deployment shop/deploy-uid", 69)
        ),
        format!(
            "Warning [IST0144] {} User ID (UID) 1337 is reserved for the sidecar proxy.",
            at("Pod shop/container-uid", 62)
        ),
        format!(
            "Warning [IST0144] {} User ID (UID) 1337 is reserved for the sidecar proxy.",
            at("Pod shop/pod-uid", 54)
        ),
        format!(
            "Warning [IST0146] {} Deployment auto-gateway contains `image: auto` but does not match any Istio injection webhook selectors.",
            at("Deployment shop/auto-gateway", 136)
        ),
        format!(
            "Info [IST0135] {} Annotation \"sidecar.istio.io/statsInclusionPrefixes\" has been deprecated and may not work in future Istio versions.",
            at("Deployment shop/fortio", 46)
        ),
        format!(
            "Info [IST0135] {} Annotation \"sidecar.istio.io/inject\" has been deprecated in favor of the \"sidecar.istio.io/inject\" label and may not work in future Istio versions.",
            at("Pod shop/misplaced", 37)
        ),
    ];
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected, "{stdout}");
}

#[test]
fn the_alpha_analyzer_runs_only_when_named() {
    let (stdout, _, _) = run(&["analyze", "-f", SHOP]);
    assert!(!stdout.contains("IST0136"), "{stdout}");
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        SHOP,
        "--analyzer",
        "annotations.AlphaAnalyzer",
    ]);
    // Info only: below the default failure threshold.
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l.starts_with("Info [IST0136]")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("Info [IST0136] (Service shop/httpbin {SHOP}:10) Annotation \"networking.istio.io/exportTo\" is part of an alpha-phase feature and may be incompletely supported.")), "{stdout}");

    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    let alpha = stdout
        .split("* ")
        .find(|s| s.starts_with("annotations.AlphaAnalyzer:"))
        .expect("the alpha analyzer is listed");
    assert!(alpha.contains("off by default"), "{alpha}");
    for name in [
        "annotations.K8sAnalyzer",
        "applicationUID.Analyzer",
        "deployment.MultiServiceAnalyzer",
        "injection.ImageAutoAnalyzer",
        "deprecation.DeprecationAnalyzer",
        "meshnetworks.MeshNetworksAnalyzer",
        "services.MultiClusterServiceAnalyzer",
    ] {
        let entry = stdout
            .split("* ")
            .find(|s| s.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{stdout}"));
        assert!(!entry.contains("off by default"), "{entry}");
    }
}

#[test]
fn mesh_networks_from_a_file_name_unknown_registries() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        "tests/fixtures/istio/analyzer-testdata/multicluster-unknown-serviceregistry.yaml",
        "--mesh-networks",
        NETWORKS,
    ]);
    assert_eq!(code, 79, "{stderr}");
    let at = |line: u32| format!("(MeshNetworks istio-system/meshnetworks {NETWORKS}:{line})");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            format!(
                "Error [IST0126] {} Unknown service registry kubernetes in network network3",
                at(11)
            ),
            format!(
                "Error [IST0126] {} Unknown service registry nowhere in network network3",
                at(11)
            ),
            format!(
                "Error [IST0126] {} Unknown service registry wk-remote in network network2",
                at(8)
            ),
        ],
        "{stdout}"
    );
}

#[test]
fn mesh_networks_from_the_istio_config_map_count_remote_secrets() {
    let file = "tests/fixtures/workloads/istio-configmap.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", file]);
    assert_eq!(code, 79, "{stderr}");
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("IST0126")).collect();
    assert_eq!(
        lines,
        [format!(
            "Error [IST0126] (MeshNetworks istio-system/meshnetworks {file}:10) Unknown service registry nowhere in network network3"
        )],
        "{stdout}"
    );
}

#[test]
fn a_missing_mesh_networks_file_is_an_input_error() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        SHOP,
        "--mesh-networks",
        "/nonexistent/networks.yaml",
    ]);
    assert_eq!(code, 65, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("/nonexistent/networks.yaml"), "{stderr}");
    let (_, stderr, code) = run(&[
        "analyze",
        "-f",
        SHOP,
        "--mesh-networks",
        "tests/fixtures/workloads",
    ]);
    assert_eq!(code, 65, "{stderr}");
}

#[test]
fn mesh_networks_that_do_not_fit_are_input_errors() {
    let dir = tempfile::tempdir().unwrap();
    let networks = dir.path().join("networks.yaml");
    std::fs::write(
        &networks,
        "networks:\n  n1:\n    endpoints: {fromRegistry: Kubernetes}\n",
    )
    .unwrap();
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        SHOP,
        "--mesh-networks",
        networks.to_str().unwrap(),
    ]);
    assert_eq!(code, 65, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("invalid MeshNetworks: networks.n1.endpoints is a list"),
        "{stderr}"
    );
    let config_map = dir.path().join("istio.yaml");
    std::fs::write(
        &config_map,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\ndata:\n  meshNetworks: 'networks: 5'\n",
    )
    .unwrap();
    let (_, stderr, code) = run(&["analyze", "-f", config_map.to_str().unwrap()]);
    assert_eq!(code, 65, "{stderr}");
    assert!(
        stderr.contains("invalid meshNetworks in ConfigMap istio: networks is a mapping"),
        "{stderr}"
    );
}

#[test]
fn removed_rbac_istio_io_crds_are_deprecations() {
    let file = "tests/fixtures/workloads/removed-crds.yaml";
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        file,
        "--analyzer",
        "deprecation.DeprecationAnalyzer",
    ]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [format!(
            "Warning [IST0002] (CustomResourceDefinition serviceroles.rbac.istio.io {file}:1) Deprecated: Custom resource type rbac.istio.io ServiceRole is removed"
        )],
        "{stdout}"
    );
}
