//! `analyze` on security, telemetry and extensions manifests (issue 14), as a user runs it on
//! files: Istio's codes and messages, workload templates counted for selectors (istio#51273),
//! Istio's schema rules for the kinds the CRDs would reject on a cluster.

const TEMPLATES: &str = "tests/fixtures/security/templates.yaml";
const INVALID: &str = "tests/fixtures/security/invalid.yaml";
const BLOCKED: &str = "tests/fixtures/security/blocked-cidrs.yaml";
const GRID: &str = "tests/fixtures/istio/analyzer-testdata";

use crate::offline;
use offline::run;

fn codes_and_origins(json: &str) -> Vec<(String, String)> {
    let items: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
    let mut got: Vec<(String, String)> = items
        .iter()
        .filter(|i| i.get("code").is_some())
        .map(|i| {
            (
                i["code"].as_str().unwrap().to_string(),
                i["origin"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    got
}

#[test]
fn policies_whose_deployment_has_no_pods_yet_are_not_reported() {
    let (stdout, stderr, code) = run(&["analyze", "-f", TEMPLATES, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    // `cart` (a Deployment scaled to zero in an injected namespace) is selected by an
    // AuthorizationPolicy, a Telemetry, a RequestAuthentication and a WasmPlugin: none is
    // reported. `typo` selects nothing; `legacy` selects a Deployment whose pods will not be in
    // the mesh (its namespace is not injected), as Istio counts workloads.
    assert_eq!(
        codes_and_origins(&stdout),
        [
            ("IST0102".into(), "Namespace outside".into()),
            (
                "IST0127".into(),
                "AuthorizationPolicy outside/legacy".into()
            ),
            ("IST0127".into(), "AuthorizationPolicy shop/typo".into()),
        ],
        "{stdout}"
    );
    let (stdout, _, _) = run(&["analyze", "-f", TEMPLATES]);
    assert!(
        stdout.lines().any(|l| l
            == format!("Warning [IST0127] (AuthorizationPolicy shop/typo {TEMPLATES}:42) No matching workloads for this resource with the following labels: app=kart")),
        "{stdout}"
    );
}

#[test]
fn authorization_policies_grid_case_gives_istios_findings() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        &format!("{GRID}/authorizationpolicies.yaml"),
        "--analyzer",
        "auth.AuthorizationPoliciesAnalyzer",
    ]);
    assert_eq!(code, 79, "{stderr}");
    let messages: Vec<&str> = stdout
        .lines()
        .map(|l| l.split_once(") ").map_or(l, |(_, m)| m))
        .collect();
    for expected in [
        "No matching workloads for this resource with the following labels: version=bogus-version",
        "No matching workloads for this resource with the following labels: ",
        "No matching workloads for this resource with the following labels: app=bogus-label,version=v1",
        "Referenced namespace not found: \"*-bogus\"",
        "Referenced namespace not found: \"bogus-*\"",
    ] {
        assert!(
            messages.contains(&expected),
            "{expected:?} not in\n{stdout}"
        );
    }
    assert!(
        stdout.contains(&format!(
            "(AuthorizationPolicy httpbin/httpbin-bogus-ns {GRID}/authorizationpolicies.yaml:"
        )),
        "{stdout}"
    );
}

#[test]
fn istios_schema_rules_for_what_the_crds_would_reject() {
    let (stdout, stderr, code) = run(&["analyze", "-f", INVALID]);
    assert_eq!(code, 79, "{stderr}");
    insta::assert_snapshot!("invalid_log", stdout);
}

#[test]
fn jwks_fetches_without_blocked_cidrs() {
    let (stdout, stderr, code) = run(&["analyze", "-f", BLOCKED]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        stdout.trim_end(),
        format!(
            "Warning [IST0175] (Deployment istio-system/istiod {BLOCKED}:7) BLOCKED_CIDRS_IN_JWKS_URIS is not configured but 1 RequestAuthentication resource(s) exist (shop/jwt). Consider configuring it to restrict JWKS URI fetches to trusted networks."
        )
    );
    // Configured: nothing to say.
    let text = std::fs::read_to_string(BLOCKED).unwrap().replace(
        "PILOT_ENABLE_ANALYSIS, value: \"true\"",
        "BLOCKED_CIDRS_IN_JWKS_URIS, value: \"169.254.169.254/32\"",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("configured.yaml");
    std::fs::write(&path, text).unwrap();
    let (stdout, stderr, code) = run(&["analyze", "-f", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.contains("No validation issues found"), "{stderr}");
}

#[test]
fn telemetry_conflicts_and_providers() {
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        &format!("{GRID}/telemetry-selector.yaml"),
        "-f",
        &format!("{GRID}/telemetry-default-selector.yaml"),
        "-f",
        &format!("{GRID}/telemetry-invalid-provider.yaml"),
        "-o",
        "json",
    ]);
    assert_eq!(code, 79);
    let got = codes_and_origins(&stdout);
    for want in [
        ("IST0101", "Telemetry default/maps-to-nonexistent"),
        ("IST0101", "Telemetry other/maps-to-different-ns"),
        ("IST0157", "Telemetry istio-system/mesh-default"),
        ("IST0159", "Telemetry default/dupe-1"),
        ("IST0159", "Telemetry default/overlap-2"),
        ("IST0160", "Telemetry ns2/has-conflict-1"),
        ("IST0160", "Telemetry ns2/has-conflict-2"),
    ] {
        assert!(
            got.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} not in {got:?}"
        );
    }
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let dupe = items
        .iter()
        .find(|i| i["code"] == "IST0159" && i["origin"] == "Telemetry default/dupe-1")
        .unwrap();
    assert_eq!(
        dupe["message"],
        "The Telemetries [dupe-1 dupe-2] in namespace \"default\" select the same workload pod \"reviews\", which can lead to undefined behavior."
    );
}

#[test]
fn lightstep_tracing_is_deprecated_with_the_mesh_config() {
    let file = format!("{GRID}/telemetry-lightstep.yaml");
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        &file,
        "--mesh-config",
        &format!("{GRID}/telemetry-lightstep-meshconfig.yaml"),
    ]);
    assert_eq!(code, 79);
    assert_eq!(
        stdout.trim_end(),
        format!(
            "Warning [IST0002] (Telemetry istio-system/mesh-default {file}:1) Deprecated: The Lightstep provider lightstep is deprecated, please migrate to OpenTelemetry provider."
        )
    );
    // Without a Lightstep provider in the mesh config, the same Telemetry is fine.
    let (_, stderr, code) = run(&["analyze", "-f", &file]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_principal_of_another_trust_domain_is_md0417_with_the_mesh_config() {
    let file = "tests/fixtures/security/identities.yaml";
    let mesh = "tests/fixtures/security/identities-meshconfig.yaml";
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        file,
        "--mesh-config",
        mesh,
        "--analyzer",
        "authz-unknown-identity",
    ]);
    assert_eq!(code, 79, "{stdout}");
    assert_eq!(
        stdout.trim_end(),
        format!(
            "Warning [MD0417] (AuthorizationPolicy shop/other-domain {file}:1) AuthorizationPolicy shop/other-domain names the identity \"cluster.local/ns/shop/sa/frontend\", which no workload of this mesh carries (its trust domain cluster.local is not the mesh's (mesh.example), nor one of its trustDomainAliases (old.example)): the caller this ALLOW rule is meant for is refused (403 RBAC: access denied). Correct the principal or service account (kubectl get pods -n NAMESPACE -o custom-columns=NAME:.metadata.name,SA:.spec.serviceAccountName lists who runs as what)."
        )
    );
    // Without the mesh config the trust domain is unknown on files: nothing is said.
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        file,
        "--analyzer",
        "authz-unknown-identity",
    ]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn list_analyzers_names_the_kinds_they_read() {
    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    for name in [
        "auth.AuthorizationPoliciesAnalyzer",
        "authn.BlockedCIDRsAnalyzer",
        "telemetry.ProviderAnalyzer",
        "telemetry.SelectorAnalyzer",
        "telemetry.DefaultSelectorAnalyzer",
        "telemetry.LightstepAnalyzer",
        "schema.ValidationAnalyzer.AuthorizationPolicy",
        "schema.ValidationAnalyzer.PeerAuthentication",
        "schema.ValidationAnalyzer.RequestAuthentication",
        "schema.ValidationAnalyzer.Telemetry",
        "schema.ValidationAnalyzer.WasmPlugin",
    ] {
        assert!(stdout.contains(&format!("* {name}:")), "{name}:\n{stdout}");
    }
    assert!(
        stdout.contains("reads: authorizationpolicies, namespaces, pods"),
        "{stdout}"
    );
}

/// The edge cases of Istio's schema rules; the output was checked line by line against
/// istioctl's file mode (tests/it/e2e_security.rs repeats that comparison where istioctl exists).
#[test]
fn schema_edge_cases_as_istioctl_words_them() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        "tests/fixtures/security/schema-cases.yaml",
        "--analyzer",
        "schema.ValidationAnalyzer.AuthorizationPolicy",
        "--analyzer",
        "schema.ValidationAnalyzer.PeerAuthentication",
        "--analyzer",
        "schema.ValidationAnalyzer.RequestAuthentication",
        "--analyzer",
        "schema.ValidationAnalyzer.Telemetry",
        "--analyzer",
        "schema.ValidationAnalyzer.WasmPlugin",
    ]);
    assert_eq!(code, 79, "{stderr}");
    insta::assert_snapshot!("schema_cases_log", stdout);
}

/// mTLS coherence on files: a STRICT server behind a plaintext rule (MD0401) and Istio's mTLS to
/// pods without a sidecar (MD0402); the negative twins (ISTIO_MUTUAL to a STRICT server,
/// `portLevelMtls` PERMISSIVE on the workload port, a rule without TLS to plaintext pods) are quiet.
#[test]
fn mtls_settings_that_contradict_each_other_are_errors() {
    const MTLS: &str = "tests/fixtures/security/mtls.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", MTLS, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        codes_and_origins(&stdout),
        [
            ("IST0102".into(), "Namespace legacy".into()),
            (
                "MD0401".into(),
                "DestinationRule demo/server-plaintext".into()
            ),
            ("MD0402".into(), "DestinationRule legacy/db".into()),
        ],
        "{stdout}"
    );
    let (stdout, _, _) = run(&["analyze", "-f", MTLS]);
    assert!(
        stdout.lines().any(|l| l.starts_with(&format!("Error [MD0401] (DestinationRule demo/server-plaintext {MTLS}:48) DestinationRule demo/server-plaintext sets tls.mode DISABLE for server.demo.svc.cluster.local port 80, so sidecars send plaintext, but Deployment demo/server requires mutual TLS on its port 8080 (PeerAuthentication demo/default)"))),
        "{stdout}"
    );
    assert!(
        stdout.contains("but the pods behind it have no sidecar (Deployment legacy/db)"),
        "{stdout}"
    );
}

#[test]
fn a_namespace_objects_of_the_files_live_in_exists() {
    let file = "tests/fixtures/security/namespace-of-objects.yaml";
    let (stdout, stderr, _) = run(&["analyze", "-f", file]);
    // `bookinfo` and `bookinfo*` match the namespace the Deployment and the policy live in;
    // `nowhere` matches none.
    let ist0101: Vec<&str> = stdout.lines().filter(|l| l.contains("IST0101")).collect();
    assert_eq!(ist0101.len(), 1, "{stdout}{stderr}");
    assert!(
        ist0101[0].contains("Referenced namespace not found: \"nowhere\""),
        "{stdout}"
    );
}

/// Policy coherence on files: `portLevelMtls` keyed by the Service port (MD0405), an ALLOW and a
/// DENY that match only callers with an identity on PERMISSIVE ports (MD0406, MD0407), a
/// deny-all a VirtualService routes to (MD0409) and one nothing routes to (MD0408, Info). The
/// negative twins are quiet: `portLevelMtls` keyed by the targetPort, a workload that declares
/// no port, STRICT workloads, a DENY by `notNamespaces`, an ALLOW with a rule plaintext can
/// match, a DENY whose only port is STRICT by `portLevelMtls`, and a deny-all with an ALLOW
/// policy on top.
#[test]
fn policies_that_do_not_do_what_they_say() {
    const POLICY: &str = "tests/fixtures/security/policy.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", POLICY, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        codes_and_origins(&stdout),
        [
            ("IST0102".into(), "Namespace untrusted".into()),
            (
                "MD0405".into(),
                "PeerAuthentication ports/server-legacy".into()
            ),
            (
                "MD0406".into(),
                "AuthorizationPolicy perm/server-from-client".into()
            ),
            (
                "MD0407".into(),
                "AuthorizationPolicy perm/db-deny-untrusted".into()
            ),
            (
                "MD0408".into(),
                "AuthorizationPolicy quiet/batch-deny-all".into()
            ),
            (
                "MD0409".into(),
                "AuthorizationPolicy locked/deny-all".into()
            ),
        ],
        "{stdout}"
    );
    let (stdout, _, _) = run(&["analyze", "-f", POLICY]);
    let line = |code: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!("[{code}]")))
            .unwrap_or_else(|| panic!("{code}: {stdout}"))
            .to_string()
    };
    assert!(line("MD0405").starts_with(&format!("Warning [MD0405] (PeerAuthentication ports/server-legacy {POLICY}:46) PeerAuthentication ports/server-legacy sets portLevelMtls mode PERMISSIVE for port 80, but no workload it selects listens on port 80 (Deployment ports/server: port 8080); 80 is the port of Service ports/server, which sends to targetPort 8080, so the setting has no effect: the workload keeps mode STRICT on port 8080, set by PeerAuthentication ports/default.")), "{stdout}");
    assert!(line("MD0406").contains("AuthorizationPolicy perm/server-from-client allows only callers with an Istio identity (source.principals), but Deployment perm/server accepts plaintext on port 8080 (mode PERMISSIVE, set by PeerAuthentication perm/default)"), "{stdout}");
    assert!(
        line("MD0406").contains("403 \"RBAC: access denied\""),
        "{stdout}"
    );
    assert!(line("MD0407").starts_with("Error [MD0407]") && line("MD0407").contains("denies callers by their Istio identity (source.namespaces), but Deployment perm/db accepts plaintext on port 5432") && line("MD0407").contains("let through (200)"), "{stdout}");
    assert!(
        line("MD0408").starts_with("Info [MD0408]")
            && line("MD0408").contains("the only ALLOW policy for Deployment quiet/batch"),
        "{stdout}"
    );
    assert!(line("MD0409").contains("the only ALLOW policy for Deployment locked/server, yet VirtualService locked/server routes to Service locked/server"), "{stdout}");
}

/// DestinationRules that Istio merges (one namespace, one host, same exportTo, no
/// workloadSelector), on files: the later rule's trafficPolicy is ignored (MD0414) and its
/// subset of a name the earlier rule has is dropped (MD0415), ordered by name where no creation
/// time is known and by creation time where it is; a subset without labels is Info (MD0416).
/// The merged rule's ISTIO_MUTUAL is what the client sends, so the STRICT server gets no
/// MD0401 for the ignored DISABLE. The negative twins are quiet: rules with other exportTo
/// sets, with a workloadSelector, in another namespace, a later rule whose policy fills an
/// earlier rule's gap, subsets of other names.
#[test]
fn destination_rules_that_istio_merges() {
    const MERGE: &str = "tests/fixtures/security/dr-merge.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", MERGE, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        codes_and_origins(&stdout),
        [
            ("MD0414".into(), "DestinationRule merged/b-disable".into()),
            ("MD0414".into(), "DestinationRule timed/a-newer".into()),
            ("MD0415".into(), "DestinationRule merged/b-disable".into()),
            ("MD0416".into(), "DestinationRule nolabels/server".into()),
        ],
        "{stdout}"
    );
    let (stdout, _, _) = run(&["analyze", "-f", MERGE]);
    let line = |code: &str, origin: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!("[{code}] (DestinationRule {origin} ")))
            .unwrap_or_else(|| panic!("{code}: {stdout}"))
            .to_string()
    };
    assert!(
        line("MD0414", "merged/b-disable").starts_with("Warning [MD0414]"),
        "{stdout}"
    );
    assert!(line("MD0414", "merged/b-disable").contains("DestinationRule merged/b-disable sets a top-level trafficPolicy (tls.mode DISABLE), but Istio merges it with DestinationRule merged/a-mtls for the same host server.merged.svc.cluster.local (same namespace, same exportTo, no workloadSelector) and keeps the trafficPolicy of the first rule: merged/a-mtls comes first by name (no creation time is known, as in files: Istio orders rules created in the same second by name), so its trafficPolicy (tls.mode ISTIO_MUTUAL) applies and the one of merged/b-disable is ignored"), "{stdout}");
    assert!(
        line("MD0414", "timed/a-newer").contains(
            "timed/z-older is older (created 2026-12-02T10:00:01Z, the other 2026-12-02T10:00:05Z)"
        ),
        "{stdout}"
    );
    assert!(line("MD0415", "merged/b-disable").contains("DestinationRule merged/b-disable defines subset \"v1\" (pods labelled app=server), but Istio merges it with DestinationRule merged/a-mtls") && line("MD0415", "merged/b-disable").contains("so that subset (pods labelled version=v1) wins and this one is dropped: traffic routed to subset \"v1\" goes to pods labelled version=v1"), "{stdout}");
    assert!(line("MD0416", "nolabels/server").starts_with("Info [MD0416]") && line("MD0416", "nolabels/server").contains("subset \"everything\" without labels: it selects every endpoint of server.nolabels.svc.cluster.local"), "{stdout}");
}

/// DestinationRules with a workloadSelector, on files: in `sel-hide` the only rule for the
/// server's host selects `app=canary`, so `client` uses no DestinationRule and loses
/// `sel-srv/server`'s subset v1 (MD0418, on the selector rule); in `sel-swallow` a rule without
/// selector and `exportTo: ["."]` is merged into the selector rule (MD0419, on it). The twins are
/// quiet: a namespace-wide rule next to the selector rule (`sel-ok`), a selector rule that
/// selects every workload of its namespace (`sel-all`), the namespace-wide rule without exportTo
/// (`sel-swallow-ok`).
#[test]
fn workload_selector_rules_that_leave_clients_without_a_rule() {
    const FIXTURE: &str = "tests/fixtures/security/dr-selector.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", FIXTURE, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        codes_and_origins(&stdout),
        [
            (
                "MD0418".into(),
                "DestinationRule sel-hide/canary-only".into()
            ),
            (
                "MD0419".into(),
                "DestinationRule sel-swallow/everyone".into()
            ),
        ],
        "{stdout}"
    );
    let (stdout, _, _) = run(&["analyze", "-f", FIXTURE]);
    let line = |code: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!("[{code}]")))
            .unwrap_or_else(|| panic!("{code}: {stdout}"))
            .to_string()
    };
    assert!(line("MD0418").starts_with("Warning [MD0418]"), "{stdout}");
    assert!(line("MD0418").contains("its other clients (Deployment sel-hide/client) use no DestinationRule for the host, not DestinationRule sel-srv/server, which applies to them otherwise (its subsets v1 do not exist for them, so a route to one gets 503 (response flag NC); its trafficPolicy (tls.mode ISTIO_MUTUAL) does not apply to them)"), "{stdout}");
    assert!(line("MD0419").contains("DestinationRule sel-swallow/everyone has no workloadSelector and exportTo [\".\"], the exportTo Istio gives DestinationRule sel-swallow/canary-only, which has one (app=canary)"), "{stdout}");
}
