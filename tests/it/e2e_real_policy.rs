//! Policy coherence proven by real traffic on the real node with a real Istio (see
//! tests/it/common/real.rs): real requests from a plaintext caller (a pod without sidecar in a
//! namespace that is not injected) and from an mTLS caller (an injected client, through its
//! sidecar) to a real server pod, against mesh-doctor's prediction, live (`analyze -n`) and from
//! the same objects as files (`analyze -f`):
//!
//! - MD0405: `portLevelMtls` keyed by the Service port (80) instead of the workload port (8080)
//!   changes nothing: the plaintext caller's connection is still reset by the STRICT server;
//!   keyed 8080, it gets the page and nothing is said.
//! - MD0406: an ALLOW from a principal on a PERMISSIVE server: the mTLS caller gets the page, the
//!   plaintext caller `403` with `RBAC: access denied`; STRICT: nothing is said.
//! - MD0407: a DENY of namespaces on a PERMISSIVE server: the denied mTLS caller gets the 403, the
//!   plaintext caller from a denied namespace gets the page (the bypass); STRICT: its connection
//!   is reset and nothing is said.
//! - MD0409: an ALLOW policy without rules and a VirtualService to the server: `403`; with an
//!   ALLOW policy for the client on top, the page and nothing is said.

use crate::common;

use common::TestEnv;
use common::real::{
    PAGE, app_deployment, codes, line_of, live_and_files, ok, real_env, request, request_until,
    rollout,
};
use serde_json::Value;

fn forbidden(answer: &str) -> bool {
    answer.starts_with("HTTP/1.1 403 Forbidden") && answer.contains("RBAC: access denied")
}

fn namespace_doc(ns: &str, injected: bool) -> String {
    let labels = if injected {
        "\n  labels: {istio-injection: enabled}"
    } else {
        ""
    };
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}{labels}\n---\n")
}

fn peer_authentication(ns: &str, name: &str, body: &str) -> String {
    format!(
        "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{body}"
    )
}

fn authorization_policy(ns: &str, name: &str, body: &str) -> String {
    format!(
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{body}"
    )
}

/// STRICT namespace; the server's own policy sets `portLevelMtls` "80": PERMISSIVE for the
/// Service port 80 (targetPort 8080). A plaintext caller's connection is still reset: the entry
/// does nothing, and mesh-doctor says MD0405. Keyed "8080", the caller gets the page and nothing
/// is said.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_port_level_mtls_on_the_service_port_does_nothing_and_md0405() {
    let env = real_env();
    let ns = env.namespace("real-ports", &["istio-injection=enabled"]);
    let plain = env.namespace("real-ports-plain", &[]);
    let strict = peer_authentication(&ns, "default", "  mtls: {mode: STRICT}\n");
    let legacy = |port: u32| {
        peer_authentication(
            &ns,
            "server-legacy",
            &format!(
                "  selector: {{matchLabels: {{app: server}}}}\n  portLevelMtls:\n    \"{port}\": {{mode: PERMISSIVE}}\n"
            ),
        )
    };
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&plain, "client", 1));
    env.apply(&strict);
    env.apply(&legacy(80));
    rollout(&env, &ns, "server");
    rollout(&env, &plain, "client");
    let host = format!("server.{ns}");

    // Reality: the plaintext caller's connection is reset (no answer at all), twice in a row.
    let answer = request_until(&env, &plain, &host, |a| !a.contains(PAGE));
    assert!(answer.is_empty(), "expected a reset, got: {answer}");
    let answer = request(&env, &plain, &host);
    assert!(answer.is_empty(), "expected a reset, got: {answer}");

    let manifests = [
        namespace_doc(&ns, true),
        app_deployment(&ns, "server", 1),
        strict.clone(),
        legacy(80),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(live.contains(&"MD0405".to_string()), "{live:?}");
    assert!(files.contains(&"MD0405".to_string()), "{files:?}");
    let line = line_of(&env, &ns, "MD0405");
    assert!(
        line.contains(&format!("PeerAuthentication {ns}/server-legacy sets portLevelMtls mode PERMISSIVE for port 80, but no workload it selects listens on port 80"))
            && line.contains(&format!("80 is the port of Service {ns}/server, which sends to targetPort 8080"))
            && line.contains(&format!("keeps mode STRICT on port 8080, set by PeerAuthentication {ns}/default")),
        "{line}"
    );

    // The negative twin: keyed by the workload port, the plaintext caller gets the page.
    env.apply(&legacy(8080));
    let answer = request_until(&env, &plain, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    let manifests = [
        namespace_doc(&ns, true),
        app_deployment(&ns, "server", 1),
        strict,
        legacy(8080),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(!live.contains(&"MD0405".to_string()), "{live:?}");
    assert!(!files.contains(&"MD0405".to_string()), "{files:?}");
    env.delete_namespaces(&[&ns, &plain]);
}

/// PERMISSIVE server and an ALLOW policy from the injected client's principal: the client gets
/// the page, a plaintext caller gets 403 "RBAC: access denied"; mesh-doctor says MD0406. With the
/// server STRICT nothing is said (and the client still gets the page).
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_identity_allow_on_a_permissive_port_is_a_403_for_plaintext_and_md0406() {
    let env = real_env();
    let ns = env.namespace("real-allow", &["istio-injection=enabled"]);
    let plain = env.namespace("real-allow-plain", &[]);
    let mode = |m: &str| peer_authentication(&ns, "default", &format!("  mtls: {{mode: {m}}}\n"));
    let allow = authorization_policy(
        &ns,
        "server-from-client",
        &format!(
            "  selector: {{matchLabels: {{app: server}}}}\n  action: ALLOW\n  rules:\n  - from:\n    - source: {{principals: [cluster.local/ns/{ns}/sa/default]}}\n"
        ),
    );
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&app_deployment(&plain, "client", 1));
    env.apply(&mode("PERMISSIVE"));
    env.apply(&allow);
    for (n, d) in [(&ns, "server"), (&ns, "client"), (&plain, "client")] {
        rollout(&env, n, d);
    }
    let host = format!("server.{ns}");

    // Reality: the plaintext caller is refused by the policy, the mTLS caller is let in.
    let answer = request_until(&env, &plain, &host, forbidden);
    assert!(forbidden(&answer), "expected a 403, got: {answer}");
    let answer = request_until(&env, &ns, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");

    let manifests = [
        namespace_doc(&ns, true),
        app_deployment(&ns, "server", 1),
        mode("PERMISSIVE"),
        allow.clone(),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(live.contains(&"MD0406".to_string()), "{live:?}");
    assert!(files.contains(&"MD0406".to_string()), "{files:?}");
    let line = line_of(&env, &ns, "MD0406");
    assert!(
        line.contains(&format!("AuthorizationPolicy {ns}/server-from-client allows only callers with an Istio identity (source.principals), but Deployment {ns}/server accepts plaintext on port 8080 (mode PERMISSIVE, set by PeerAuthentication {ns}/default)"))
            && line.contains("403 \"RBAC: access denied\""),
        "{line}"
    );

    // The negative twin: STRICT, every caller brings its identity; nothing is said.
    env.apply(&mode("STRICT"));
    let answer = request_until(&env, &plain, &host, str::is_empty);
    assert!(answer.is_empty(), "expected a reset, got: {answer}");
    let answer = request_until(&env, &ns, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    let manifests = [
        namespace_doc(&ns, true),
        app_deployment(&ns, "server", 1),
        mode("STRICT"),
        allow,
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(!live.contains(&"MD0406".to_string()), "{live:?}");
    assert!(!files.contains(&"MD0406".to_string()), "{files:?}");
    env.delete_namespaces(&[&ns, &plain]);
}

/// PERMISSIVE server and a DENY policy of two namespaces: the injected client of one gets the 403,
/// the plaintext caller from the other gets the page (the DENY is bypassed); mesh-doctor says
/// MD0407 (Error, exit 79). With the server STRICT, the plaintext caller's connection is reset and
/// nothing is said.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_identity_deny_on_a_permissive_port_is_bypassed_by_plaintext_and_md0407() {
    let env = real_env();
    let ns = env.namespace("real-deny", &["istio-injection=enabled"]);
    let plain = env.namespace("real-deny-plain", &[]);
    let mode = |m: &str| peer_authentication(&ns, "default", &format!("  mtls: {{mode: {m}}}\n"));
    let deny = authorization_policy(
        &ns,
        "server-deny",
        &format!(
            "  selector: {{matchLabels: {{app: server}}}}\n  action: DENY\n  rules:\n  - from:\n    - source: {{namespaces: [{ns}, {plain}]}}\n"
        ),
    );
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&app_deployment(&plain, "client", 1));
    env.apply(&mode("PERMISSIVE"));
    env.apply(&deny);
    for (n, d) in [(&ns, "server"), (&ns, "client"), (&plain, "client")] {
        rollout(&env, n, d);
    }
    let host = format!("server.{ns}");

    // Reality: the DENY works for the caller with an identity, and not for the plaintext one.
    let answer = request_until(&env, &ns, &host, forbidden);
    assert!(forbidden(&answer), "expected a 403, got: {answer}");
    let answer = request(&env, &plain, &host);
    assert!(ok(&answer), "expected the page (the bypass), got: {answer}");

    let manifests = [
        namespace_doc(&ns, true),
        namespace_doc(&plain, false),
        app_deployment(&ns, "server", 1),
        mode("PERMISSIVE"),
        deny.clone(),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(live.contains(&"MD0407".to_string()), "{live:?}");
    assert!(files.contains(&"MD0407".to_string()), "{files:?}");
    let run = env.mesh_doctor(&["analyze", "-n", &ns]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let line = line_of(&env, &ns, "MD0407");
    assert!(
        line.starts_with("Error [MD0407]")
            && line.contains(&format!("AuthorizationPolicy {ns}/server-deny denies callers by their Istio identity (source.namespaces), but Deployment {ns}/server accepts plaintext on port 8080"))
            && line.contains("let through (200)"),
        "{line}"
    );

    // The negative twin: STRICT; the plaintext caller can no longer get in, nothing is said.
    env.apply(&mode("STRICT"));
    let answer = request_until(&env, &plain, &host, str::is_empty);
    assert!(answer.is_empty(), "expected a reset, got: {answer}");
    let manifests = [
        namespace_doc(&ns, true),
        namespace_doc(&plain, false),
        app_deployment(&ns, "server", 1),
        mode("STRICT"),
        deny,
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(!live.contains(&"MD0407".to_string()), "{live:?}");
    assert!(!files.contains(&"MD0407".to_string()), "{files:?}");
    env.delete_namespaces(&[&ns, &plain]);
}

/// STRICT namespace, an ALLOW policy without rules for the whole namespace, and a VirtualService
/// to the server: the injected client gets 403 "RBAC: access denied"; mesh-doctor says MD0409.
/// With an ALLOW policy for the client's principal on top, it gets the page and nothing is said.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_allow_without_rules_behind_a_route_is_a_403_and_md0409() {
    let env = real_env();
    let ns = env.namespace("real-denyall", &["istio-injection=enabled"]);
    let strict = peer_authentication(&ns, "default", "  mtls: {mode: STRICT}\n");
    let deny_all = authorization_policy(&ns, "deny-all", "  {}\n");
    let route = format!(
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: server\n  namespace: {ns}\nspec:\n  hosts: [server]\n  http:\n  - route:\n    - destination: {{host: server}}\n"
    );
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&strict);
    env.apply(&route);
    env.apply(&deny_all);
    for d in ["server", "client"] {
        rollout(&env, &ns, d);
    }
    let host = format!("server.{ns}");

    let answer = request_until(&env, &ns, &host, forbidden);
    assert!(forbidden(&answer), "expected a 403, got: {answer}");

    let manifests = [
        namespace_doc(&ns, true),
        app_deployment(&ns, "server", 1),
        app_deployment(&ns, "client", 1),
        strict.clone(),
        route.clone(),
        deny_all.clone(),
    ];
    let (live, files) = live_and_files(&env, &ns, &manifests);
    assert!(live.contains(&"MD0409".to_string()), "{live:?}");
    assert!(files.contains(&"MD0409".to_string()), "{files:?}");
    let line = line_of(&env, &ns, "MD0409");
    assert!(
        line.contains(&format!("AuthorizationPolicy {ns}/deny-all is an ALLOW policy without rules and the only ALLOW policy for Deployment {ns}/server, yet VirtualService {ns}/server routes to Service {ns}/server")),
        "{line}"
    );

    // The negative twin: an ALLOW policy for the client on top (the recommended pattern).
    let allow = authorization_policy(
        &ns,
        "server-from-client",
        &format!(
            "  selector: {{matchLabels: {{app: server}}}}\n  rules:\n  - from:\n    - source: {{principals: [cluster.local/ns/{ns}/sa/default]}}\n"
        ),
    );
    env.apply(&allow);
    let answer = request_until(&env, &ns, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    let live = env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]);
    let live = codes(&live);
    // The client is still under the deny-all alone, and nothing routes to it: MD0408 (Info) only.
    assert!(!live.contains(&"MD0409".to_string()), "{live:?}");
    assert!(
        !live.iter().any(|c| c == "MD0406" || c == "MD0407"),
        "{live:?}"
    );
    env.delete_namespaces(&[&ns]);
}

#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_principal_no_workload_carries_is_a_403_and_md0417() {
    let env = real_env();
    let ns = env.namespace("real-identity", &["istio-injection=enabled"]);
    let strict = peer_authentication(&ns, "default", "  mtls: {mode: STRICT}\n");
    let allow_from = |principal: &str| {
        authorization_policy(
            &ns,
            "server-from-client",
            &format!(
                "  selector: {{matchLabels: {{app: server}}}}\n  rules:\n  - from:\n    - source: {{principals: [{principal}]}}\n"
            ),
        )
    };
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&strict);
    for d in ["server", "client"] {
        rollout(&env, &ns, d);
    }
    let host = format!("server.{ns}");
    let md0417 = |env: &TestEnv| -> Vec<String> {
        let run = env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]);
        let found: Vec<Value> = serde_json::from_str(&run.stdout).unwrap_or_default();
        found
            .iter()
            .filter(|f| f["code"] == "MD0417")
            .map(|f| f["message"].as_str().unwrap_or("").to_string())
            .collect()
    };

    // The client runs as `default`; the policy names a service account `client` nobody runs as.
    env.apply(&allow_from(&format!("cluster.local/ns/{ns}/sa/client")));
    let answer = request_until(&env, &ns, &host, forbidden);
    assert!(forbidden(&answer), "expected a 403, got: {answer}");
    let found = md0417(&env);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(&format!("no pod or workload of namespace {ns} runs as service account client (they run as default)")),
        "{found:?}"
    );

    // A trust domain that is not the mesh's: the same 403.
    env.apply(&allow_from(&format!("example.com/ns/{ns}/sa/default")));
    let answer = request_until(&env, &ns, &host, forbidden);
    assert!(forbidden(&answer), "expected a 403, got: {answer}");
    let found = md0417(&env);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("its trust domain example.com is not the mesh's (cluster.local)"),
        "{found:?}"
    );

    // The negative twin: the principal the client really carries.
    env.apply(&allow_from(&format!("cluster.local/ns/{ns}/sa/default")));
    let answer = request_until(&env, &ns, &host, ok);
    assert!(ok(&answer), "expected the page, got: {answer}");
    assert_eq!(md0417(&env), Vec::<String>::new());
    env.delete_namespaces(&[&ns]);
}
