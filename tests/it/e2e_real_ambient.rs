//! `pod NAME` for pods that ask for ambient mode, on the real node with a real Istio (see
//! tests/it/common/real.rs). The node has no ztunnel and no Istio CNI agent: ztunnel cannot be
//! built here (its source is in no registry this machine reaches). Where a case needs them,
//! STAND-INS take their place: pods of the local app image (busybox httpd) in istio-system
//! labelled `app=ztunnel` and `k8s-app=istio-cni-node`, on the node. They carry no traffic;
//! mesh-doctor only reads their labels, node and readiness, which is what the stand-ins give.
//! Likewise the `ambient.istio.io/redirection: enabled` annotation the CNI agent would set is
//! set by the test (`kubectl annotate`). The case without stand-ins is the real one.
//!
//! One test, in order, because the stand-ins are cluster-wide.

use crate::common;

use std::time::Duration;

use common::real::{image, pod_doc, real_env};
use serde_json::Value;

fn check<'a>(doc: &'a Value, name: &str) -> (&'a str, &'a str) {
    let c = doc["checks"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name}: {doc:#}"));
    (c["status"].as_str().unwrap(), c["detail"].as_str().unwrap())
}

const ZTUNNEL: &str = "a ready ztunnel runs on the pod's node";
const CNI: &str = "Istio's CNI node agent runs on the pod's node";
const REDIRECTED: &str = "the CNI agent redirected the pod's traffic";

/// A stand-in pod in istio-system with `label`; `ready: false` gives it a readiness probe on a
/// port nothing listens on.
fn stand_in(name: &str, label: &str, ready: bool) -> String {
    let port = if ready { 8080 } else { 9 };
    let (key, value) = label.split_once('=').unwrap();
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: istio-system
  labels: {{{key}: {value}, mesh-doctor-test: stand-in}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: {name}
    image: {image}
    readinessProbe:
      httpGet: {{path: /, port: {port}}}
      periodSeconds: 1
",
        image = image("app")
    )
}

fn plain_pod(ns: &str, name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {name}{labels}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: {image}
",
        image = image("app")
    )
}

#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_ambient_pods() {
    let env = real_env();
    let _ = env.kubectl_run(
        &[
            "-n",
            "istio-system",
            "delete",
            "pod",
            "-l",
            "mesh-doctor-test=stand-in",
            "--wait=true",
        ],
        None,
    );
    let ns = env.namespace("real-amb", &["istio.io/dataplane-mode=ambient"]);
    env.apply(&plain_pod(&ns, "app", ""));
    env.wait_ready(&ns, "app");

    // 1. For real: no ztunnel, no CNI agent anywhere. Not captured, exit 79, never "nothing
    // to do".
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ambient-not-captured", "{doc:#}");
    assert_eq!(doc["findings"][0]["code"], "MD0111", "{doc:#}");
    let (status, detail) = check(&doc, ZTUNNEL);
    assert_eq!(status, "fail");
    assert!(
        detail.starts_with("no ztunnel pod (app=ztunnel) runs in the cluster"),
        "{detail}"
    );
    assert_eq!(check(&doc, CNI).0, "fail");
    assert_eq!(check(&doc, REDIRECTED).0, "fail");
    let text = env.mesh_doctor(&["pod", "app", "-n", &ns]);
    assert_eq!(text.code, 79);
    assert!(
        text.stdout.contains("\u{2716} not captured by ambient"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.contains("nothing to do"), "{}", text.stdout);

    // 2. A stand-in ztunnel that is not ready: its state is quoted.
    env.apply(&stand_in("ztunnel-standin", "app=ztunnel", false));
    env.wait_pod(
        "istio-system",
        "ztunnel-standin",
        "Running",
        Duration::from_secs(60),
        |p| p["status"]["phase"] == "Running",
    );
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}");
    let (status, detail) = check(&doc, ZTUNNEL);
    assert_eq!(status, "fail");
    assert!(
        detail.starts_with("ztunnel istio-system/ztunnel-standin on ")
            && detail.contains(
                "is not ready (phase Running, ztunnel-standin Running, not ready, 0 restart(s))"
            ),
        "{detail}"
    );

    // 3. A ready stand-in ztunnel and a ready stand-in CNI agent, but no redirection
    // annotation on the running pod: redirection failed, read the CNI agent's log.
    env.kubectl(&[
        "-n",
        "istio-system",
        "delete",
        "pod",
        "ztunnel-standin",
        "--wait=true",
    ]);
    env.apply(&stand_in("ztunnel-standin", "app=ztunnel", true));
    env.apply(&stand_in("cni-standin", "k8s-app=istio-cni-node", true));
    env.wait_ready("istio-system", "ztunnel-standin");
    env.wait_ready("istio-system", "cni-standin");
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}");
    assert_eq!(check(&doc, ZTUNNEL).0, "pass", "{doc:#}");
    assert_eq!(check(&doc, CNI).0, "pass", "{doc:#}");
    let (status, detail) = check(&doc, REDIRECTED);
    assert_eq!(status, "fail");
    assert!(
        detail.contains("has no ambient.istio.io/redirection annotation"),
        "{detail}"
    );
    assert!(
        doc["nextSteps"]
            .to_string()
            .contains("kubectl -n istio-system logs cni-standin | grep app"),
        "{doc:#}"
    );

    // 4. The annotation set by the test, as the CNI agent sets it: captured, exit 0.
    env.kubectl(&[
        "-n",
        &ns,
        "annotate",
        "pod",
        "app",
        "ambient.istio.io/redirection=enabled",
    ]);
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 0, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ambient-captured", "{doc:#}");
    assert_eq!(doc["findings"], serde_json::json!([]));
    assert!(
        doc["nextSteps"]
            .to_string()
            .contains("istioctl ztunnel-config workload ztunnel-standin.istio-system"),
        "{doc:#}"
    );
    // Its Traffic section: ztunnel enforces its PeerAuthentication (Istio's default here).
    let text = env.mesh_doctor(&["pod", "app", "-n", &ns]);
    assert!(
        text.stdout.contains(
            "PeerAuthentication enforced by ztunnel (the pod is captured by ambient): workload PERMISSIVE; no PeerAuthentication applies (Istio's default)"
        ),
        "{}",
        text.stdout
    );

    // 4b. While it is captured: its own label asks for a sidecar, which istiod's webhook would
    // give a replacement (MD0116, with the verdict); a RequestAuthentication of the namespace
    // without selector or targetRefs that no proxy of it applies (MD0420, under Traffic). Both
    // Warnings: exit 79. Then both are taken back.
    env.kubectl(&[
        "-n",
        &ns,
        "label",
        "pod",
        "app",
        "sidecar.istio.io/inject=true",
    ]);
    env.apply(&format!(
        "apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata:
  name: ns-wide
  namespace: {ns}
spec:
  jwtRules:
  - issuer: https://issuer.example
"
    ));
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ambient-captured", "{doc:#}");
    let codes = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|f| f["code"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(codes(&doc["findings"]), ["MD0116"], "{doc:#}");
    let md0116 = doc["findings"][0]["message"].as_str().unwrap();
    assert!(
        md0116.contains("its pod label sidecar.istio.io/inject=true asks for a sidecar: a pod created now gets one from the injection webhook (")
            && md0116.contains("its replacement runs with a sidecar and leaves ambient mode"),
        "{md0116}"
    );
    assert_eq!(codes(&doc["traffic"]["findings"]), ["MD0420"], "{doc:#}");
    assert!(
        doc["traffic"]["findings"][0]["origin"]
            .as_str()
            .unwrap()
            .contains(&format!("RequestAuthentication {ns}/ns-wide")),
        "{doc:#}"
    );
    env.kubectl(&["-n", &ns, "label", "pod", "app", "sidecar.istio.io/inject-"]);
    env.kubectl(&["-n", &ns, "delete", "requestauthentication", "ns-wide"]);
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 0, "{doc:#}\n{}", run.stderr);

    // 5. disabled: not captured.
    env.kubectl(&[
        "-n",
        &ns,
        "annotate",
        "--overwrite",
        "pod",
        "app",
        "ambient.istio.io/redirection=disabled",
    ]);
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}");
    assert!(
        check(&doc, REDIRECTED).1.contains("is \"disabled\""),
        "{doc:#}"
    );
    let text = env.mesh_doctor(&["pod", "app", "-n", &ns]);
    assert!(
        text.stdout.contains(
            "PeerAuthentication not enforced: the pod has no sidecar and ambient does not capture it"
        ),
        "{}",
        text.stdout
    );

    // 6. A pod in the ambient namespace that asks for a sidecar and gets one from istiod's
    // webhook: both; ztunnel does not capture it (MD0112, Warning: exit 79).
    env.apply(&plain_pod(
        &ns,
        "both",
        ", sidecar.istio.io/inject: \"true\"",
    ));
    env.wait_ready(&ns, "both");
    let (doc, run) = pod_doc(&env, &ns, "both");
    assert_eq!(run.code, 79, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ambient-with-sidecar", "{doc:#}");
    assert_eq!(doc["findings"][0]["code"], "MD0112", "{doc:#}");

    env.kubectl(&[
        "-n",
        "istio-system",
        "delete",
        "pod",
        "-l",
        "mesh-doctor-test=stand-in",
    ]);
    env.delete_namespaces(&[&ns]);
}
