//! `path -f` as a CI user runs it: a small shop's manifests and overlays that break one hop
//! each; the text a person reads, the JSON a pipeline reads, and the exit codes. The same hops
//! are proven against real requests in tests/it/e2e_real_path.rs.

use crate::offline;
use offline::run;

const SHOP: &str = "tests/fixtures/path/shop.yaml";

fn fixture(name: &str) -> String {
    format!("tests/fixtures/path/{name}.yaml")
}

/// `path SOURCE TARGET -n shop -f SHOP -f overlays... extra...`
fn walk(source: &str, target: &str, overlays: &[&str], extra: &[&str]) -> (String, String, i32) {
    let files: Vec<String> = overlays.iter().map(|o| fixture(o)).collect();
    let mut args = vec!["path", source, target, "-n", "shop", "-f", SHOP];
    for f in &files {
        args.push("-f");
        args.push(f);
    }
    args.extend_from_slice(extra);
    run(&args)
}

fn outcome(stdout: &str) -> (String, String, String) {
    let doc: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let o = &doc["ports"][0]["outcome"];
    (
        o["status"].as_str().unwrap_or_default().into(),
        o["hop"].as_str().unwrap_or_default().into(),
        o["summary"].as_str().unwrap_or_default().into(),
    )
}

#[test]
fn a_healthy_path_passes_every_hop() {
    let (stdout, stderr, code) = walk("deploy/frontend", "orders", &[], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    for hop in [
        "source",
        "route",
        "cluster",
        "endpoints",
        "transport",
        "destination",
        "network",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("✔ {hop}"))),
            "{hop}: {stdout}"
        );
    }
    assert!(
        stdout.starts_with(
            "Deployment shop/frontend → orders.shop.svc.cluster.local:80 (http), GET /\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("Verdict: ✔ reachable: no hop stops the request"),
        "{stdout}"
    );
    let (_, _, code) = walk(
        "deploy/frontend",
        "orders.shop.svc.cluster.local:80",
        &[],
        &["--expect", "reachable"],
    );
    assert_eq!(code, 0);
    let (_, _, code) = walk("deploy/frontend", "orders", &[], &["--expect", "blocked"]);
    assert_eq!(code, 79, "--expect blocked on a reachable path");
}

#[test]
fn a_weighted_split_fails_for_its_share_and_a_missing_subset_is_nc() {
    let (stdout, _, code) = walk(
        "deploy/frontend",
        "orders",
        &["split"],
        &["--path", "/api/1", "-o", "json"],
    );
    assert_eq!(code, 79, "{stdout}");
    let (status, hop, summary) = outcome(&stdout);
    assert_eq!((status.as_str(), hop.as_str()), ("fail", "endpoints"));
    assert_eq!(
        summary,
        "20% of requests fail at endpoints: 503 Service Unavailable, body \"no healthy upstream\" (response flag UH)"
    );
    let (stdout, _, code) = walk(
        "deploy/frontend",
        "orders",
        &["split"],
        &["-H", "x-canary=3"],
    );
    assert_eq!(code, 79, "{stdout}");
    assert!(stdout.contains("✘ cluster      DestinationRule shop/orders has no subset v3: the sidecar has no cluster outbound|80|v3|orders.shop.svc.cluster.local"), "{stdout}");
    assert!(
        stdout.contains(
            "gets: 503 Service Unavailable from the client's sidecar (response flag NC: no cluster)"
        ),
        "{stdout}"
    );
    // No route fits: 404 NR, with the reason of each route.
    let (stdout, _, code) = walk("deploy/frontend", "orders", &["split"], &["--path", "/web"]);
    assert_eq!(code, 79);
    assert!(
        stdout.contains("http[0] (api): uri prefix /api does not match /web"),
        "{stdout}"
    );
    assert!(
        stdout.contains("http[1] (v3): the request has no header x-canary"),
        "{stdout}"
    );
    assert!(stdout.contains("Verdict: ✘ fails at route: 404 Not Found from the client's sidecar (response flag NR: no route)"), "{stdout}");
}

#[test]
fn authorization_is_evaluated_for_the_client_and_custom_is_unknown() {
    let (stdout, _, code) = walk(
        "deploy/frontend",
        "orders",
        &["writers-only"],
        &["--method", "POST", "--path", "/orders"],
    );
    assert_eq!(code, 79, "{stdout}");
    assert!(stdout.contains("✘ destination  ALLOW policies select Deployment shop/orders-v1 and none matches this request from principal cluster.local/ns/shop/sa/frontend"), "{stdout}");
    assert!(
        stdout.contains("gets: 403 Forbidden, body \"RBAC: access denied\""),
        "{stdout}"
    );
    // The external authorizer decides /admin: unknown, exit 69, never green.
    let (stdout, _, code) = walk(
        "deploy/frontend",
        "orders",
        &["writers-only"],
        &["--path", "/admin/x"],
    );
    assert_eq!(code, 69, "{stdout}");
    assert!(stdout.contains("? destination  AuthorizationPolicy shop/ext (CUSTOM) sends this request to its external authorizer, whose answer is not known"), "{stdout}");
}

#[test]
fn a_client_without_sidecar_is_reset_by_a_strict_server() {
    let (stdout, _, code) = run(&[
        "path",
        "deploy/batch",
        "orders.shop",
        "-n",
        "jobs",
        "-f",
        SHOP,
        "-f",
        &fixture("strict-and-batch"),
    ]);
    assert_eq!(code, 79, "{stdout}");
    assert!(
        stdout.contains("✔ source       Deployment jobs/batch has no sidecar"),
        "{stdout}"
    );
    assert!(stdout.contains("✘ transport    the client has no sidecar and sends plaintext; Deployment shop/orders-v1 requires mTLS on port 8080 (PeerAuthentication shop/default)"), "{stdout}");
    // From a meshed client the same server is fine.
    let (stdout, _, code) = walk("deploy/frontend", "orders", &["strict-and-batch"], &[]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn registry_only_and_network_policies_stop_the_request() {
    // An external host with REGISTRY_ONLY: 502 at the source.
    let (stdout, _, code) = walk("deploy/frontend", "api.example.com:443", &["lockdown"], &[]);
    assert_eq!(code, 79, "{stdout}");
    assert!(stdout.contains("api.example.com is neither a Service nor a ServiceEntry host visible from namespace shop, and outboundTrafficPolicy is REGISTRY_ONLY (Sidecar shop/default)"), "{stdout}");
    assert!(stdout.contains("gets: HTTP: 502 Bad Gateway"), "{stdout}");
    // orders is in the registry, but its NetworkPolicy admits checkout only.
    let (stdout, _, code) = walk("deploy/frontend", "orders", &["lockdown"], &[]);
    assert_eq!(code, 79, "{stdout}");
    assert!(
        stdout.contains("✘ network      NetworkPolicies drop the connection between the two pods"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "ingress of Deployment shop/orders-v1 (shop/orders-from-checkout): not allowed"
        ),
        "{stdout}"
    );
}

#[test]
fn bad_input_is_a_usage_or_data_error() {
    let (_, stderr, code) = run(&["path", "svc/x", "orders", "-f", SHOP]);
    assert_eq!(code, 64, "{stderr}");
    assert!(
        stderr.contains("svc is not a pod or workload kind"),
        "{stderr}"
    );
    let (_, stderr, code) = run(&["path", "deploy/frontend", "orders:99999", "-f", SHOP]);
    assert_eq!(code, 64, "{stderr}");
    let (_, stderr, code) = run(&["path", "deploy/frontend", "pod/a/b", "-f", SHOP]);
    assert_eq!(code, 64, "{stderr}");
    assert!(
        stderr.contains("a pod is pod/NAME or pod/NAME.NAMESPACE"),
        "{stderr}"
    );
    let (_, stderr, code) = run(&["path", "deploy/nothere", "orders", "-n", "shop", "-f", SHOP]);
    assert_eq!(code, 65, "{stderr}");
    assert!(
        stderr.contains("Deployment nothere not found in namespace shop"),
        "{stderr}"
    );
    // Files without the workloads behind the Service: the endpoints are unknown, exit 69.
    let (stdout, _, code) = walk("deploy/frontend", "payments.billing", &[], &[]);
    assert_eq!(
        code, 0,
        "an unknown host with ALLOW_ANY leaves the mesh: {stdout}"
    );
    assert!(stdout.contains("leaves the mesh"), "{stdout}");
}

/// Three DestinationRules for orders in shop, which Istio merges: the first by name's
/// trafficPolicy (ISTIO_MUTUAL) is what the client sends, the ignored DISABLE of the last one
/// does not fail the STRICT server; `analyze` says what the merge drops (MD0414, MD0415).
#[test]
fn merged_destination_rules_send_the_first_rules_tls() {
    let (stdout, stderr, code) = walk("deploy/frontend", "orders", &["merged-rules"], &[]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("✔ cluster      outbound|80||orders.shop.svc.cluster.local, DestinationRules shop/a-mtls, shop/orders, shop/zz-disable"), "{stdout}");
    assert!(
        stdout.contains("✔ transport    tls.mode ISTIO_MUTUAL (DestinationRule shop/a-mtls)"),
        "{stdout}"
    );
    let overlay = fixture("merged-rules");
    let (stdout, _, _) = run(&["analyze", "-f", SHOP, "-f", &overlay]);
    for code in ["MD0414", "MD0415"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(&format!("[{code}] (DestinationRule shop/zz-disable "))),
            "{code}: {stdout}"
        );
    }
    assert!(!stdout.contains("[MD0401]"), "{stdout}");
}

/// ServiceEntry hosts are walked as Istio builds their clusters: DNS resolution passes (Envoy
/// resolves the host), STATIC without endpoints is 503 UH, Istio's mTLS to an external host
/// fails at transport, and a port the entry does not declare has no cluster.
#[test]
fn service_entry_hosts_are_walked_by_their_resolution() {
    let (stdout, stderr, code) = walk(
        "deploy/frontend",
        "api.payments.example:443",
        &["service-entries"],
        &["-o", "json"],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("Envoy resolves api.payments.example by DNS"),
        "{stdout}"
    );

    let (stdout, _, code) = walk(
        "deploy/frontend",
        "db.legacy.example:5432",
        &["service-entries"],
        &["-o", "json"],
    );
    let (status, hop, summary) = outcome(&stdout);
    assert_eq!(
        (status.as_str(), hop.as_str(), code),
        ("fail", "endpoints", 79),
        "{summary}"
    );
    assert!(summary.contains("no healthy upstream"), "{summary}");

    let (stdout, _, code) = walk(
        "deploy/frontend",
        "ledger.partner.example",
        &["service-entries"],
        &["-o", "json"],
    );
    let (status, hop, summary) = outcome(&stdout);
    assert_eq!(
        (status.as_str(), hop.as_str(), code),
        ("fail", "transport", 79),
        "{summary}"
    );

    let (stdout, _, code) = walk(
        "deploy/frontend",
        "api.payments.example:8443",
        &["service-entries"],
        &["-o", "json"],
    );
    let (status, hop, _) = outcome(&stdout);
    assert_eq!((status.as_str(), code), ("fail", 79), "{stdout}");
    assert!(hop == "route" || hop == "cluster", "{stdout}");
}

/// A pod as the target: the request to its IP is plaintext (the sidecar passes it through), so
/// a STRICT pod resets it; a pod the files do not hold is unknown (exit 69).
#[test]
fn a_pod_target_gets_plaintext_from_the_passthrough() {
    let (stdout, _, code) = walk(
        "deploy/frontend",
        "pod/orders-direct",
        &["pod-target"],
        &["-o", "json"],
    );
    let (status, hop, summary) = outcome(&stdout);
    assert_eq!(
        (status.as_str(), hop.as_str(), code),
        ("fail", "transport", 79),
        "{summary}\n{stdout}"
    );
    assert!(stdout.contains("\"port\": 8080"), "{stdout}");
    let (stdout, _, code) = walk("deploy/frontend", "pod/nobody", &[], &["-o", "json"]);
    let (status, _, _) = outcome(&stdout);
    assert_eq!((status.as_str(), code), ("unknown", 69), "{stdout}");
}

/// A workload-selector DestinationRule in the client's namespace that does not select the
/// client: it uses no DestinationRule, so the route's subset has no cluster (503 NC), said at
/// the cluster hop with the rule that hides the server namespace's; the twin with a
/// namespace-wide rule of its own is reachable.
#[test]
fn a_selector_rule_that_does_not_select_the_client_hides_the_subsets() {
    const FIXTURE: &str = "tests/fixtures/security/dr-selector.yaml";
    let (stdout, stderr, code) = run(&[
        "path",
        "deploy/client",
        "server.sel-srv",
        "-n",
        "sel-hide",
        "-f",
        FIXTURE,
    ]);
    assert_eq!(code, 79, "{stdout}{stderr}");
    assert!(stdout.contains("✘ cluster      the client uses no DestinationRule for server.sel-srv.svc.cluster.local: namespace sel-hide's rules for it (sel-hide/canary-only) are for the workloads a workloadSelector selects, not for it, and Istio then looks no further (not at sel-srv/server, which defines subset v1)"), "{stdout}");
    assert!(
        stdout.contains("(response flag NC: no cluster)"),
        "{stdout}"
    );
    let (stdout, stderr, code) = run(&[
        "path",
        "deploy/client",
        "server.sel-srv",
        "-n",
        "sel-swallow-ok",
        "-f",
        FIXTURE,
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("DestinationRule sel-swallow-ok/everyone"),
        "{stdout}"
    );
}
