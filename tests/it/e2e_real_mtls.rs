//! mTLS coherence proven by real traffic on the real node with a real Istio (see
//! tests/it/common/real.rs): a client pod's app container sends a real HTTP request through its
//! sidecar to a real server pod, and mesh-doctor's prediction (MD0401, live and from the same
//! objects as files) is checked against what the request really gets. The negative twin (the same
//! objects with the DestinationRule's TLS mode ISTIO_MUTUAL) gets a 200 and no finding.

use crate::common;

use std::time::Duration;

use common::TestEnv;
use common::real::{app_deployment, codes, real_env};

/// A raw HTTP/1.1 request from the client's app container (busybox `nc`, so the status line,
/// headers and body come back whatever the status; its `wget -T` segfaults, and plain `wget`
/// hides the body of an error), through the sidecar that captures its outbound traffic.
fn request(env: &TestEnv, ns: &str, host: &str) -> String {
    let run = common::real::http_get(env, ns, host, "/");
    format!("{}{}", run.stdout, run.stderr)
}

/// Requests until the answer contains `want` (the sidecar gets its config a moment after the
/// objects change); the last answer otherwise.
fn request_until(env: &TestEnv, ns: &str, url: &str, want: &str) -> String {
    let mut last = String::new();
    for _ in 0..30 {
        last = request(env, ns, url);
        if last.contains(want) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    last
}

fn rule(ns: &str, mode: &str) -> String {
    format!(
        "apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: server
  namespace: {ns}
spec:
  host: server
  trafficPolicy:
    tls:
      mode: {mode}
"
    )
}

fn strict(ns: &str) -> String {
    format!(
        "apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata:
  name: default
  namespace: {ns}
spec:
  mtls:
    mode: STRICT
"
    )
}

/// STRICT on the server and `tls.mode: DISABLE` in the client's DestinationRule: every request
/// gets a 503 (istioctl analyze finds nothing); mesh-doctor says MD0401, live and on files.
/// With ISTIO_MUTUAL instead, the request gets the page and mesh-doctor says nothing.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_strict_server_and_plaintext_rule_is_a_503_and_md0401() {
    let env = real_env();
    let ns = env.namespace("real-mtls", &["istio-injection=enabled"]);
    env.apply(&app_deployment(&ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&strict(&ns));
    env.apply(&rule(&ns, "DISABLE"));
    for d in ["deploy/server", "deploy/client"] {
        env.kubectl(&["-n", &ns, "rollout", "status", d, "--timeout=180s"]);
    }
    let url = format!("server.{ns}");

    // Reality: a 503 from the client's sidecar, with Envoy's text of a refused upstream.
    let answer = request_until(&env, &ns, &url, "503");
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable"),
        "expected a 503, got: {answer}"
    );
    assert!(
        answer.contains("upstream connect error or disconnect/reset before headers"),
        "{answer}"
    );
    assert!(!answer.contains("mesh-doctor test app"), "{answer}");

    // mesh-doctor, live: MD0401 on the DestinationRule, exit 79.
    let live = env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]);
    assert_eq!(live.code, 79, "{}\n{}", live.stdout, live.stderr);
    assert!(
        codes(&live).contains(&"MD0401".to_string()),
        "{}",
        live.stdout
    );
    let text = env.mesh_doctor(&["analyze", "-n", &ns]);
    let line = text
        .stdout
        .lines()
        .find(|l| l.contains("[MD0401]"))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(
        line.contains(&format!("DestinationRule {ns}/server sets tls.mode DISABLE for server.{ns}.svc.cluster.local port 80"))
            && line.contains(&format!("Deployment {ns}/server requires mutual TLS on its port 8080 (PeerAuthentication {ns}/default)"))
            && line.contains("503"),
        "{line}"
    );

    // The same objects as files: the same finding.
    let dir = tempfile::tempdir().unwrap();
    let manifests = format!(
        "{}---\n{}---\n{}",
        app_deployment(&ns, "server", 1),
        strict(&ns),
        rule(&ns, "DISABLE")
    );
    let manifests = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  labels: {{istio-injection: enabled}}\n---\n{manifests}"
    );
    let file = dir.path().join("mtls.yaml");
    std::fs::write(&file, manifests).unwrap();
    let files = env.mesh_doctor(&["analyze", "-f", file.to_str().unwrap(), "-o", "json"]);
    assert!(
        codes(&files).contains(&"MD0401".to_string()),
        "{}",
        files.stdout
    );

    // The negative twin: ISTIO_MUTUAL, the page comes back and nothing is said.
    env.apply(&rule(&ns, "ISTIO_MUTUAL"));
    let answer = request_until(&env, &ns, &url, "mesh-doctor test app");
    assert!(
        answer.contains("mesh-doctor test app"),
        "expected the page, got: {answer}"
    );
    let live = env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]);
    assert!(
        !codes(&live).contains(&"MD0401".to_string()),
        "{}",
        live.stdout
    );
    env.delete_namespaces(&[&ns]);
}

/// `tls.mode: ISTIO_MUTUAL` to a server without a sidecar (its namespace is not injected): the
/// client's sidecar speaks Istio's mTLS to a plain HTTP server and the request fails; mesh-doctor
/// says MD0402. With the rule's TLS removed (auto-mTLS: plaintext to a pod without a sidecar) the
/// same request gets the page and nothing is said.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_istio_mutual_to_a_pod_without_sidecar_fails_and_md0402() {
    let env = real_env();
    let server_ns = env.namespace("real-plain", &[]);
    let ns = env.namespace("real-mtls2", &["istio-injection=enabled"]);
    env.apply(&app_deployment(&server_ns, "server", 1));
    env.apply(&app_deployment(&ns, "client", 1));
    env.apply(&rule(&server_ns, "ISTIO_MUTUAL"));
    env.kubectl(&[
        "-n",
        &server_ns,
        "rollout",
        "status",
        "deploy/server",
        "--timeout=180s",
    ]);
    env.kubectl(&[
        "-n",
        &ns,
        "rollout",
        "status",
        "deploy/client",
        "--timeout=180s",
    ]);
    let host = format!("server.{server_ns}");

    // Reality: no page; Envoy answers 503 (or the connection is reset).
    let answer = request_until(&env, &ns, &host, "503");
    assert!(!answer.contains("mesh-doctor test app"), "{answer}");
    assert!(
        answer.starts_with("HTTP/1.1 503") || answer.is_empty(),
        "{answer}"
    );

    let live = env.mesh_doctor(&["analyze", "-n", &server_ns, "-o", "json"]);
    assert_eq!(live.code, 79, "{}\n{}", live.stdout, live.stderr);
    assert!(
        codes(&live).contains(&"MD0402".to_string()),
        "{}",
        live.stdout
    );
    let text = env.mesh_doctor(&["analyze", "-n", &server_ns]);
    assert!(
        text.stdout.contains(&format!(
            "DestinationRule {server_ns}/server sets tls.mode ISTIO_MUTUAL for server.{server_ns}.svc.cluster.local port 80, but the pods behind it have no sidecar (Deployment {server_ns}/server"
        )),
        "{}",
        text.stdout
    );

    // The negative twin: no TLS mode, auto-mTLS sends plaintext, the page comes back.
    env.apply(&format!(
        "apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: server
  namespace: {server_ns}
spec:
  host: server
  trafficPolicy:
    connectionPool:
      tcp: {{maxConnections: 100}}
"
    ));
    let answer = request_until(&env, &ns, &host, "mesh-doctor test app");
    assert!(
        answer.starts_with("HTTP/1.1 200 OK") && answer.contains("mesh-doctor test app"),
        "expected the page, got: {answer}"
    );
    let live = env.mesh_doctor(&["analyze", "-n", &server_ns, "-o", "json"]);
    assert!(
        !codes(&live).contains(&"MD0402".to_string()),
        "{}",
        live.stdout
    );
    env.delete_namespaces(&[&ns, &server_ns]);
}
