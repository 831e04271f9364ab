//! Pods that are ending or have ended, made for real on the real node with a real Istio (see
//! tests/it/common/real.rs): a pod being deleted, a Job pod held up by its classic sidecar, and the
//! same Job with a native sidecar. Each test asserts the verdict a person reading the pod would
//! give, and the exit code.

use crate::common;

use std::time::Duration;

use common::TestEnv;
use common::real::{container_status, image, pod_doc, real_env};

/// A Job of the app image that exits after two seconds, with istio-proxy classic or native.
fn job(ns: &str, name: &str, native: bool) -> String {
    format!(
        "apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {ns}}}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {{sidecar.istio.io/nativeSidecar: \"{native}\"}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: {image}
        command: [sh, -c, 'sleep 2; echo done']
",
        image = image("app")
    )
}

fn job_pod(env: &TestEnv, ns: &str, job: &str) -> String {
    env.wait_for("the Job's pod", Duration::from_secs(60), || {
        env.get_json(&["pods", "-n", ns, "-l", &format!("job-name={job}")])["items"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|p| p["metadata"]["name"].as_str())
            .map(str::to_string)
    })
}

/// A pod being deleted (grace period 60 s; its app ignores SIGTERM, so it stays Terminating):
/// "terminating" with the grace left, exit 0; never "starting", never a crash.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_terminating_pod_is_terminating() {
    let env = real_env();
    let ns = env.namespace("real-term", &["istio-injection=enabled"]);
    env.apply(&format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: slow-stop, namespace: {ns}}}
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: {image}
    command: [sh, -c, \"trap '' TERM; while true; do sleep 1; done\"]
",
        image = image("app")
    ));
    env.wait_ready(&ns, "slow-stop");
    env.kubectl(&["-n", &ns, "delete", "pod", "slow-stop", "--wait=false"]);
    env.wait_pod(&ns, "slow-stop", "deleted", Duration::from_secs(30), |p| {
        p["metadata"]["deletionTimestamp"].is_string()
    });
    let (doc, run) = pod_doc(&env, &ns, "slow-stop");
    assert_eq!(run.code, 0, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "terminating", "{doc:#}");
    let summary = doc["verdict"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("The pod is being deleted: its grace period of 60s has "),
        "{summary}"
    );
    assert!(summary.contains("s left."), "{summary}");
    assert!(summary.contains("it is not starting"), "{summary}");
    assert_eq!(doc["findings"], serde_json::json!([]), "{doc:#}");
    // The text says it too.
    let text = env.mesh_doctor(&["pod", "slow-stop", "-n", &ns, "--no-probe"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("\u{2139} terminating"),
        "{}",
        text.stdout
    );
    env.kubectl(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "slow-stop",
        "--grace-period=0",
        "--force",
    ]);
    env.delete_namespaces(&[&ns]);
}

/// A Job with a classic istio-proxy: the app exits, the proxy runs on, the Job never
/// completes (MD0110, exit 79). The step `pod` gives lets it finish; then it says completed.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_job_with_a_classic_sidecar_never_completes() {
    let env = real_env();
    let ns = env.namespace("real-jobc", &["istio-injection=enabled"]);
    env.apply(&job(&ns, "batch", false));
    let pod = job_pod(&env, &ns, "batch");
    env.wait_pod(&ns, &pod, "app exited", Duration::from_secs(120), |p| {
        container_status(p, "app").is_some_and(|s| s["state"]["terminated"].is_object())
            && container_status(p, "istio-proxy").is_some_and(|s| s["state"]["running"].is_object())
    });
    let (doc, run) = pod_doc(&env, &ns, &pod);
    assert_eq!(run.code, 79, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "job-held-by-sidecar", "{doc:#}");
    assert_eq!(
        doc["verdict"]["title"],
        "never completes: istio-proxy keeps running after the application exited"
    );
    assert_eq!(doc["findings"][0]["code"], "MD0110", "{doc:#}");
    assert!(
        doc["verdict"]["summary"]
            .as_str()
            .unwrap()
            .contains("its Job batch never completes"),
        "{doc:#}"
    );
    let steps = doc["nextSteps"].to_string();
    assert!(steps.contains("sidecar.istio.io/nativeSidecar"), "{steps}");
    assert!(steps.contains("15020/quitquitquit"), "{steps}");
    // The last step, run as given, lets the pod finish.
    let command = doc["nextSteps"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|s| s["command"].as_str().filter(|c| c.contains("quitquitquit")))
        .expect("a step that ends the proxy")
        .to_string();
    let args: Vec<&str> = command
        .strip_prefix("kubectl ")
        .unwrap()
        .split(' ')
        .collect();
    // kubectl exec may end with 137: the container stops while the command is attached.
    let ended = env.kubectl_run(&args, None);
    assert!([0, 137].contains(&ended.code), "{args:?}: {}", ended.stderr);
    env.wait_pod(&ns, &pod, "Succeeded", Duration::from_secs(60), |p| {
        p["status"]["phase"] == "Succeeded"
    });
    let (doc, run) = pod_doc(&env, &ns, &pod);
    assert_eq!(run.code, 0, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ended", "{doc:#}");
    assert_eq!(doc["verdict"]["title"], "completed", "{doc:#}");
    env.delete_namespaces(&[&ns]);
}

/// The same Job with a native sidecar: the kubelet stops the proxy, the pod Succeeds:
/// "completed", exit 0.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_job_with_a_native_sidecar_completes() {
    let env = real_env();
    let ns = env.namespace("real-jobn", &["istio-injection=enabled"]);
    env.apply(&job(&ns, "batch", true));
    let pod = job_pod(&env, &ns, "batch");
    let seen = env.wait_pod(&ns, &pod, "Succeeded", Duration::from_secs(120), |p| {
        p["status"]["phase"] == "Succeeded"
    });
    // istio-proxy was a native sidecar: an init container with restartPolicy Always.
    assert!(
        seen["spec"]["initContainers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "istio-proxy" && c["restartPolicy"] == "Always"),
        "{seen:#}"
    );
    let (doc, run) = pod_doc(&env, &ns, &pod);
    assert_eq!(run.code, 0, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ended", "{doc:#}");
    assert_eq!(doc["verdict"]["title"], "completed", "{doc:#}");
    assert!(
        doc["verdict"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("The pod has completed (phase Succeeded): every container exited."),
        "{doc:#}"
    );
    assert_eq!(doc["findings"], serde_json::json!([]), "{doc:#}");
    env.delete_namespaces(&[&ns]);
}
