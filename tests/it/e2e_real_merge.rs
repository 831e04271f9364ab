//! DestinationRules that Istio merges, proven by real traffic on the real node with a real Istio
//! (see tests/it/common/real.rs): real requests from an injected client, through its sidecar, to
//! a real server pod, against mesh-doctor's prediction, live (`analyze -n`) and from the same
//! objects as files (`analyze -f`, with the creation times read from the cluster).
//!
//! Two rules for one host in one namespace, same `exportTo`, no `workloadSelector`, are merged:
//! the older rule's top-level `trafficPolicy` wins, and a later subset whose name the older rule
//! has is dropped. The rules are named so that the order of their names is the reverse of the
//! order of their creation: a pass proves istiod orders them by creation time.
//!
//! - MD0414: in a STRICT namespace, rule `z-mtls` (older, ISTIO_MUTUAL) and `a-disable` (newer,
//!   DISABLE): 200, `a-disable`'s policy is ignored. Its twin, `a-disable` alone: 503.
//! - MD0415: a VirtualService to subset `v1`; `z-nobody` (older) has `v1` selecting no pod,
//!   `a-server` (newer) has `v1` selecting the server: 503, `a-server`'s `v1` is dropped. Its
//!   twin, `a-server` alone: 200.
//!
//! Each newer rule also has a subset of its own (`b-only`): its cluster appearing in the client's
//! Envoy says that istiod has merged and pushed the newer rule before the request is judged.

use crate::common;

use std::time::Duration;

use common::TestEnv;
use common::real::{
    app_deployment, codes, line_of, live_and_files, ok, real_env, request, request_until, rollout,
};

fn unavailable(answer: &str) -> bool {
    answer.starts_with("HTTP/1.1 503 Service Unavailable")
}

/// Waits until the client's Envoy has `cluster` (istiod pushed the config that makes it).
fn wait_for_cluster(env: &TestEnv, ns: &str, cluster: &str) {
    let mut last = String::new();
    for _ in 0..60 {
        let run = env.kubectl_run(
            &[
                "-n",
                ns,
                "exec",
                "deploy/client",
                "-c",
                "istio-proxy",
                "--",
                "pilot-agent",
                "request",
                "GET",
                "clusters",
            ],
            None,
        );
        if run.stdout.contains(cluster) {
            return;
        }
        last = format!("{}{}", run.stdout, run.stderr);
        std::thread::sleep(Duration::from_secs(1));
    }
    panic!("the client's Envoy never got {cluster}: {last}");
}

fn strict(ns: &str) -> String {
    format!(
        "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata:\n  name: default\n  namespace: {ns}\nspec:\n  mtls: {{mode: STRICT}}\n"
    )
}

fn rule(ns: &str, name: &str, body: &str) -> String {
    format!(
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  host: server\n{body}"
    )
}

/// The `b-only` subset of the newer rules, whose cluster says the merge was pushed.
const B_ONLY: &str = "  - name: b-only\n    labels: {app: server}\n";

fn b_only_cluster(ns: &str) -> String {
    format!("outbound|80|b-only|server.{ns}.svc.cluster.local")
}

/// `doc` with the creation time the cluster gave `name`, as `kubectl get -o yaml` writes it.
fn with_created(env: &TestEnv, ns: &str, name: &str, doc: &str) -> String {
    let created = env.kubectl(&[
        "-n",
        ns,
        "get",
        "destinationrule",
        name,
        "-o",
        "jsonpath={.metadata.creationTimestamp}",
    ]);
    doc.replacen(
        "metadata:\n",
        &format!("metadata:\n  creationTimestamp: \"{}\"\n", created.trim()),
        1,
    )
}

fn namespace_doc(ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  labels: {{istio-injection: enabled}}\n"
    )
}

/// STRICT namespace. `a-disable` (DISABLE) alone: 503, and MD0401. Then `z-mtls`
/// (ISTIO_MUTUAL) first and `a-disable` again, newer: 200, as `a-disable`'s trafficPolicy is
/// ignored; mesh-doctor says MD0414 (and no MD0401), live and on files.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_newer_rule_policy_is_ignored_and_md0414() {
    let env = real_env();
    let ns = env.namespace("real-drmerge", &["istio-injection=enabled"]);
    let disable = rule(
        &ns,
        "a-disable",
        &format!("  trafficPolicy:\n    tls: {{mode: DISABLE}}\n  subsets:\n{B_ONLY}"),
    );
    let mtls = rule(
        &ns,
        "z-mtls",
        "  trafficPolicy:\n    tls: {mode: ISTIO_MUTUAL}\n",
    );
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&strict(&ns));
    for d in ["server", "client"] {
        rollout(&env, &ns, d);
    }
    let host = format!("server.{ns}");

    // The twin: the newer rule alone applies, and the STRICT server refuses its plaintext.
    env.apply(&disable);
    let answer = request_until(&env, &ns, &host, unavailable);
    assert!(unavailable(&answer), "expected a 503, got: {answer}");
    assert!(
        answer.contains("upstream connect error or disconnect/reset before headers"),
        "{answer}"
    );
    let live = codes(&env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]));
    assert!(live.contains(&"MD0401".to_string()), "{live:?}");
    assert!(!live.contains(&"MD0414".to_string()), "{live:?}");

    // The older rule first, then the same newer rule again.
    env.kubectl(&["-n", &ns, "delete", "destinationrule", "a-disable"]);
    env.apply(&mtls);
    let answer = request_until(&env, &ns, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    // Creation times are kept in seconds: the newer rule is created in a later second.
    std::thread::sleep(Duration::from_secs(2));
    env.apply(&disable);
    wait_for_cluster(&env, &ns, &b_only_cluster(&ns));
    for _ in 0..3 {
        let answer = request(&env, &ns, &host);
        assert!(
            ok(&answer),
            "expected the page (a-disable's DISABLE ignored), got: {answer}"
        );
    }

    let manifests = [
        namespace_doc(&ns),
        app_deployment(&ns, "server", 1),
        app_deployment(&ns, "client", 1),
        strict(&ns),
        with_created(&env, &ns, "z-mtls", &mtls),
        with_created(&env, &ns, "a-disable", &disable),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    for got in [&live, &files] {
        assert!(got.contains(&"MD0414".to_string()), "{got:?}");
        assert!(!got.contains(&"MD0401".to_string()), "{got:?}");
    }
    let line = line_of(&env, &ns, "MD0414");
    assert!(
        line.contains(&format!("DestinationRule {ns}/a-disable sets a top-level trafficPolicy (tls.mode DISABLE), but Istio merges it with DestinationRule {ns}/z-mtls"))
            && line.contains(&format!("{ns}/z-mtls is older"))
            && line.contains("its trafficPolicy (tls.mode ISTIO_MUTUAL) applies"),
        "{line}"
    );
    env.delete_namespaces(&[&ns]);
}

/// A VirtualService to subset `v1`. `a-server` (its `v1` selects the server) alone: 200. Then
/// `z-nobody` (its `v1` selects no pod) first and `a-server` again, newer: 503, as `a-server`'s
/// `v1` is dropped; mesh-doctor says MD0415, live and on files.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_newer_rule_subset_is_dropped_and_md0415() {
    let env = real_env();
    let ns = env.namespace("real-drsubset", &["istio-injection=enabled"]);
    let route = format!(
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: server\n  namespace: {ns}\nspec:\n  hosts: [server]\n  http:\n  - route:\n    - destination: {{host: server, subset: v1}}\n"
    );
    let server_v1 = rule(
        &ns,
        "a-server",
        &format!("  subsets:\n  - name: v1\n    labels: {{app: server}}\n{B_ONLY}"),
    );
    let nobody_v1 = rule(
        &ns,
        "z-nobody",
        "  subsets:\n  - name: v1\n    labels: {app: nobody}\n",
    );
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    for d in ["server", "client"] {
        rollout(&env, &ns, d);
    }
    let host = format!("server.{ns}");

    // The twin: the newer rule alone, its v1 is the server.
    env.apply(&server_v1);
    env.apply(&route);
    let answer = request_until(&env, &ns, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    let live = codes(&env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]));
    assert!(!live.contains(&"MD0415".to_string()), "{live:?}");

    // The older rule first, then the same newer rule again.
    env.kubectl(&["-n", &ns, "delete", "destinationrule", "a-server"]);
    env.apply(&nobody_v1);
    let answer = request_until(&env, &ns, &host, unavailable);
    assert!(unavailable(&answer), "expected a 503, got: {answer}");
    std::thread::sleep(Duration::from_secs(2));
    env.apply(&server_v1);
    wait_for_cluster(&env, &ns, &b_only_cluster(&ns));
    for _ in 0..3 {
        let answer = request(&env, &ns, &host);
        assert!(
            unavailable(&answer),
            "expected a 503 (a-server's v1 dropped), got: {answer}"
        );
    }

    let manifests = [
        namespace_doc(&ns),
        app_deployment(&ns, "server", 1),
        app_deployment(&ns, "client", 1),
        route.clone(),
        with_created(&env, &ns, "z-nobody", &nobody_v1),
        with_created(&env, &ns, "a-server", &server_v1),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    for got in [&live, &files] {
        assert!(got.contains(&"MD0415".to_string()), "{got:?}");
    }
    let line = line_of(&env, &ns, "MD0415");
    assert!(
        line.contains(&format!("DestinationRule {ns}/a-server defines subset \"v1\" (pods labelled app=server), but Istio merges it with DestinationRule {ns}/z-nobody"))
            && line.contains("traffic routed to subset \"v1\" goes to pods labelled app=nobody"),
        "{line}"
    );
    env.delete_namespaces(&[&ns]);
}

/// Workload-selector DestinationRules (MD0418, MD0419). The server's namespace has rule
/// `server` with subset `v1` and a VirtualService to it: from the client's namespace, 200.
/// A rule in the client's namespace for the host with a `workloadSelector` that does not select
/// the client: 503 (no cluster for `v1`: the client uses no DestinationRule, Istio looks no
/// further), MD0418, and `path` fails at the cluster hop. Then a rule without selector next to
/// it, `exportTo: ["."]`: still 503 (merged into the selector rule), MD0419. The same rule
/// without `exportTo`: 200, no finding.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_workload_selector_rules_hide_and_swallow_md0418_md0419() {
    let env = real_env();
    let srv = env.namespace("real-drsel-srv", &["istio-injection=enabled"]);
    let ns = env.namespace("real-drsel", &["istio-injection=enabled"]);
    let host = format!("server.{srv}.svc.cluster.local");
    let server_rule = format!(
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: server\n  namespace: {srv}\nspec:\n  host: server\n  subsets:\n  - name: v1\n    labels: {{app: server}}\n"
    );
    let route = format!(
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: server\n  namespace: {srv}\nspec:\n  hosts: [server]\n  http:\n  - route:\n    - destination: {{host: server, subset: v1}}\n"
    );
    let selector_rule = format!(
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: canary-only\n  namespace: {ns}\nspec:\n  host: {host}\n  workloadSelector:\n    matchLabels: {{app: canary}}\n  trafficPolicy:\n    loadBalancer: {{simple: ROUND_ROBIN}}\n"
    );
    let everyone = |export: &str| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: everyone\n  namespace: {ns}\nspec:\n  host: {host}\n{export}  subsets:\n  - name: v1\n    labels: {{app: server}}\n"
        )
    };
    env.apply(&app_deployment(&srv, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    rollout(&env, &srv, "server");
    rollout(&env, &ns, "client");
    env.apply(&server_rule);
    env.apply(&route);
    let target = format!("server.{srv}");
    let answer = request_until(&env, &ns, &target, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");

    // The selector rule hides the server namespace's rule from the client.
    env.apply(&selector_rule);
    let answer = request_until(&env, &ns, &target, unavailable);
    assert!(unavailable(&answer), "expected a 503, got: {answer}");
    let base = [
        namespace_doc(&srv),
        namespace_doc(&ns),
        app_deployment(&srv, "server", 1),
        app_deployment(&ns, "client", 1),
        server_rule.clone(),
        route.clone(),
        selector_rule.clone(),
    ];
    let (live, files) = live_and_files(&env, &ns, &base);
    for got in [&live, &files] {
        assert!(got.contains(&"MD0418".to_string()), "{got:?}");
    }
    let line = line_of(&env, &ns, "MD0418");
    assert!(
        line.contains(&format!("DestinationRule {ns}/canary-only has a workloadSelector (app=canary), and for host {host} Istio looks no further than namespace {ns}'s own rules: its other clients (Deployment {ns}/client) use no DestinationRule for the host, not DestinationRule {srv}/server"))
            && line.contains("its subsets v1 do not exist for them, so a route to one gets 503"),
        "{line}"
    );
    let run = env.mesh_doctor(&["path", "deploy/client", &target, "-n", &ns, "-o", "json"]);
    assert_eq!(run.code, 79, "{}{}", run.stdout, run.stderr);
    let doc = crate::common::real::json(&run);
    let cluster = doc["ports"][0]["branches"][0]["hops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["hop"] == "cluster")
        .unwrap_or_else(|| panic!("no cluster hop: {}", run.stdout));
    assert_eq!(cluster["status"], "fail", "{}", run.stdout);
    assert!(
        cluster["summary"]
            .as_str()
            .unwrap()
            .contains("the client uses no DestinationRule for"),
        "{}",
        run.stdout
    );

    // A rule without selector, exportTo ["."]: merged into the selector rule, still 503.
    env.apply(&everyone("  exportTo: [\".\"]\n"));
    std::thread::sleep(Duration::from_secs(5));
    for _ in 0..3 {
        let answer = request(&env, &ns, &target);
        assert!(
            unavailable(&answer),
            "expected a 503 (everyone merged into canary-only), got: {answer}"
        );
    }
    let mut manifests = base.to_vec();
    manifests.push(everyone("  exportTo: [\".\"]\n"));
    let (live, files) = live_and_files(&env, &ns, &manifests);
    for got in [&live, &files] {
        assert!(got.contains(&"MD0419".to_string()), "{got:?}");
        assert!(!got.contains(&"MD0418".to_string()), "{got:?}");
    }

    // The twin: the same rule without exportTo has an entry of its own.
    env.apply(&everyone(""));
    let answer = request_until(&env, &ns, &target, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    let mut manifests = base.to_vec();
    manifests.push(everyone(""));
    let (live, files) = live_and_files(&env, &ns, &manifests);
    for got in [&live, &files] {
        assert!(!got.contains(&"MD0418".to_string()), "{got:?}");
        assert!(!got.contains(&"MD0419".to_string()), "{got:?}");
    }
    env.delete_namespaces(&[&ns, &srv]);
}
