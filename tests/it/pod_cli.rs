//! `pod NAME` as a user runs it, without a cluster: flags, messages and exit codes.
//! (Against a real cluster: see docs/pod.md; the testenv end-to-end tests drive it there.)

use crate::offline::run;

#[test]
fn help_documents_checks_and_exit_codes() {
    let (stdout, _, code) = run(&["pod", "--help"]);
    assert_eq!(code, 0);
    for text in [
        "--direct",
        "--probe-timeout",
        "bootstrap crash",
        "65  the pod does not exist in the namespace",
        "79  a finding at or above the failure threshold",
    ] {
        assert!(stdout.contains(text), "{text:?} missing from:\n{stdout}");
    }
}

#[test]
fn a_name_that_is_not_a_pod_is_a_usage_error() {
    let (stdout, stderr, code) = run(&["pod", "deploy/web", "-n", "shop"]);
    assert_eq!(code, 64, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("invalid pod name \"deploy/web\""),
        "{stderr}"
    );
}

#[test]
fn a_bad_timeout_is_a_usage_error() {
    let (_, stderr, code) = run(&["pod", "web", "--probe-timeout", "soon"]);
    assert_eq!(code, 64, "{stderr}");
}

#[test]
fn an_unreachable_cluster_is_69_and_fast() {
    // A kubeconfig whose server is a closed local port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: shop\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (stdout, stderr, code) = run(&[
        "pod",
        "web",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--request-timeout",
        "3s",
    ]);
    assert_eq!(code, 69, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("cannot reach the Kubernetes API server"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
