//! Issue 10 on the real test cluster: no green over what was not read, and the verdicts a
//! person would give. Pods here have no node (kwok leaves them alone) and get their status with
//! `kubectl patch --subresource=status`, so each test sets exactly the state it is about.

use crate::common;

use std::process::Command;

use common::{Run, TestEnv, binary, testenv, unique};
use serde_json::Value;

fn now_minus(seconds: i64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(seconds);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A namespace of its own, enabled for injection (or not).
fn namespace(env: &TestEnv, prefix: &str, injection: bool) -> String {
    let ns = unique(prefix);
    let labels = if injection {
        "{istio-injection: enabled}"
    } else {
        "{}"
    };
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  labels: {labels}\n"
    ));
    ns
}

/// A pod with no node (no kubelet touches it), then the given status.
fn pod(env: &TestEnv, ns: &str, name: &str, containers: &str, status: &Value) {
    env.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{app: {name}}}\n  annotations:\n    sidecar.istio.io/status: '{{\"containers\":[\"istio-proxy\"],\"revision\":\"default\"}}'\nspec:\n  containers:\n{containers}"
    ));
    let patch = serde_json::json!({ "status": status }).to_string();
    let run = env.kubectl_run(
        &[
            "-n",
            ns,
            "patch",
            "pod",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ],
        None,
    );
    assert_eq!(run.code, 0, "patch status: {}", run.stderr);
}

const APP_AND_PROXY: &str = "  - {name: web, image: nginx}\n  - name: istio-proxy\n    image: istio/proxyv2:1.30.0\n    resources: {limits: {memory: 128Mi}}\n    readinessProbe: {httpGet: {path: /healthz/ready, port: 15021}, periodSeconds: 15, failureThreshold: 4}\n";

fn running_status(proxy: Value, ready: bool) -> Value {
    serde_json::json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
        "containerStatuses": [
            {"name": "web", "image": "nginx", "imageID": "", "ready": true, "restartCount": 0,
             "state": {"running": {"startedAt": now_minus(600)}}},
            proxy,
        ],
    })
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", run.stdout, run.stderr))
}

fn codes(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// mesh-doctor with another kubeconfig.
fn mesh_doctor_with(kubeconfig: &std::path::Path, args: &[&str]) -> Run {
    let out = Command::new(binary())
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap();
    out.into()
}

/// A user bound to a ClusterRole with these rules.
fn user_with(env: &TestEnv, prefix: &str, rules: &str) -> String {
    let user = unique(prefix);
    env.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {user}\nrules:\n{rules}---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {user}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {user}}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {user}}}]\n"
    ));
    user
}

/// The sidecar-less pod of an injected namespace (IST0103 when everything can be read).
fn namespace_with_unmeshed_pod(env: &TestEnv) -> String {
    let ns = namespace(env, "trust-team", true);
    pod(
        env,
        &ns,
        "lonely",
        "  - {name: web, image: nginx}\n",
        &serde_json::json!({"phase": "Running"}),
    );
    ns
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn analyze_defaults_to_the_context_namespace() {
    let env = testenv();
    let ns = namespace_with_unmeshed_pod(&env);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::copy(&env.kubeconfig, &kubeconfig).unwrap();
    let set = Command::new(&env.kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["config", "set-context", "--current", "--namespace", &ns])
        .output()
        .unwrap();
    assert!(set.status.success());

    let run = mesh_doctor_with(
        &kubeconfig,
        &["analyze", "--suppress", "IST0139=*", "--no-probe"],
    );
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    // The context's namespace was read: its pod is reported, as IST0103 (restart it) while some
    // injector webhook exists on the shared cluster, or MD0103 (no webhook matches) while
    // `no_injection_webhook_at_all_means_the_injector_is_missing` has removed them all.
    assert!(
        [
            format!("Warning [IST0103] (Pod {ns}/lonely)"),
            format!("Warning [MD0103] (Pod {ns}/lonely)"),
        ]
        .iter()
        .any(|line| run.stdout.contains(line)),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains(&format!("when analyzing namespace: {ns};")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("namespace: default"), "{}", run.stderr);
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn analyze_of_a_namespace_that_does_not_exist_is_not_a_pass() {
    let env = testenv();
    let ns = unique("no-such-namespace");
    let run = env.mesh_doctor(&["analyze", "--suppress", "IST0139=*", "-n", &ns]);
    assert_eq!(run.code, 69, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains(&format!("namespace {ns} does not exist")),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("No validation issues"),
        "{}",
        run.stderr
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn a_forbidden_list_makes_analyze_incomplete_not_green() {
    let env = testenv();
    let ns = namespace_with_unmeshed_pod(&env);
    // Everything but pods.
    let user = user_with(
        &env,
        "trust-nopods",
        "- {apiGroups: [\"\"], resources: [namespaces, services, configmaps, events], verbs: [get, list]}\n\
         - {apiGroups: [apps], resources: [deployments, statefulsets, daemonsets], verbs: [get, list]}\n\
         - {apiGroups: [batch], resources: [cronjobs], verbs: [get, list]}\n\
         - {apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [get, list]}\n\
         - {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list]}\n\
         - {apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get, list]}\n\
         - {apiGroups: [networking.k8s.io], resources: [networkpolicies], verbs: [get, list]}\n",
    );
    // With the permission: IST0103, exit 79.
    let run = env.mesh_doctor(&[
        "analyze",
        "--suppress",
        "IST0139=*",
        "-n",
        &ns,
        "--no-probe",
    ]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);

    for scope in [vec!["-n", ns.as_str()], vec!["-A"]] {
        // Other tests' overlapping injector configurations (IST0139, cluster-scoped, reported
        // in every namespace) would reach the threshold on the shared cluster.
        let mut args = vec![
            "analyze",
            "--no-probe",
            "--as",
            &user,
            "--suppress",
            "IST0139=*",
        ];
        args.extend(&scope);
        let run = env.mesh_doctor(&args);
        if scope[0] == "-A" && run.code == 79 {
            // Other tests' objects may reach the threshold in -A; the skipped read is still said.
            assert!(run.stderr.contains("skipped injection"), "{}", run.stderr);
            continue;
        }
        assert_eq!(run.code, 69, "{scope:?}: {}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr
                .contains("skipped injection: it needs pods, which could not be listed"),
            "{}",
            run.stderr
        );
        // The denial itself is said once.
        assert_eq!(
            run.stderr.matches("cannot list resource \"pods\"").count(),
            1,
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("is incomplete"), "{}", run.stderr);
        assert!(
            !run.stderr.contains("No validation issues"),
            "{}",
            run.stderr
        );

        args.push("--allow-incomplete");
        let run = env.mesh_doctor(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }

    // The structured outputs carry what was skipped and why.
    let run = env.mesh_doctor(&[
        "analyze",
        "--suppress",
        "IST0139=*",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &user,
        "-o",
        "json",
    ]);
    assert_eq!(run.code, 69, "{}", run.stderr);
    let items: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let skipped: Vec<&Value> = items.iter().filter(|i| i["code"] == "MD0001").collect();
    assert!(
        skipped
            .iter()
            .any(|s| s["check"] == "injection"
                && s["message"].as_str().unwrap().contains("needs pods")),
        "{items:?}"
    );
    assert!(
        skipped.iter().any(|s| s["check"] == "list pods"
            && s["message"].as_str().unwrap().contains("is forbidden")),
        "{items:?}"
    );
    let run = env.mesh_doctor(&[
        "analyze",
        "--suppress",
        "IST0139=*",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &user,
        "-o",
        "sarif",
    ]);
    let sarif: Value = serde_json::from_str(&run.stdout).unwrap();
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    assert!(
        invocation["toolExecutionNotifications"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["message"]["text"]
                .as_str()
                .unwrap()
                .contains("skipped list pods: pods is forbidden")),
        "{invocation}"
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn pod_with_its_namespace_forbidden_is_unknown_and_incomplete() {
    let env = testenv();
    let ns = namespace_with_unmeshed_pod(&env);
    let user = user_with(
        &env,
        "trust-nons",
        "- {apiGroups: [\"\"], resources: [pods, configmaps], verbs: [get, list]}\n\
         - {apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [get, list]}\n",
    );
    // With the permission: restart it, exit 79 (or the injector is missing: also 79).
    let run = env.mesh_doctor(&["pod", "lonely", "-n", &ns, "--no-probe"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);

    let run = env.mesh_doctor(&["pod", "lonely", "-n", &ns, "--no-probe", "--as", &user]);
    assert_eq!(run.code, 69, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("unknown: the namespace could not be read"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("Not read\n  ? namespace {ns}: ")),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("nothing to do"), "{}", run.stdout);
    assert!(run.stderr.contains("is incomplete"), "{}", run.stderr);

    let run = env.mesh_doctor(&[
        "pod",
        "lonely",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &user,
        "-o",
        "json",
    ]);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "unknown");
    assert!(
        doc["notRead"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["what"] == format!("namespace {ns}")),
        "{doc:#}"
    );
    let run = env.mesh_doctor(&[
        "pod",
        "lonely",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &user,
        "--allow-incomplete",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn proxy_status_in_a_namespace_without_istiod_says_so() {
    let env = testenv();
    let ns = namespace(&env, "trust-noistiod", false);
    let run = env.mesh_doctor(&["proxy-status", "-i", &ns]);
    assert_eq!(run.code, 69, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "no istiod found: no pod matches app=istiod in namespace {ns}"
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("NOT CONNECTED"), "{}", run.stdout);
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn no_injection_webhook_at_all_means_the_injector_is_missing() {
    let env = testenv();
    // The exact setup: no MutatingWebhookConfiguration at all. Test binaries run one after the
    // other, and the tests that need a webhook create their own.
    env.kubectl(&["delete", "mutatingwebhookconfigurations", "--all"]);
    let ns = namespace_with_unmeshed_pod(&env);
    let run = env.mesh_doctor(&["pod", "lonely", "-n", &ns, "--no-probe", "-o", "json"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "injector-missing", "{doc:#}");
    assert!(
        doc["verdict"]["summary"]
            .as_str()
            .unwrap()
            .contains("istiod (its sidecar injector) is not installed"),
        "{doc:#}"
    );
    let steps = doc["nextSteps"].to_string();
    assert!(
        !steps.contains("rollout restart") && !steps.contains("delete pod"),
        "{steps}"
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn a_young_sidecar_is_starting_not_broken() {
    let env = testenv();
    let ns = namespace(&env, "trust-young", true);
    let proxy = serde_json::json!({"name": "istio-proxy", "image": "istio/proxyv2:1.30.0",
        "imageID": "", "ready": false, "started": true, "restartCount": 0,
        "state": {"running": {"startedAt": now_minus(3)}}});
    pod(
        &env,
        &ns,
        "web-young",
        APP_AND_PROXY,
        &running_status(proxy, false),
    );
    let run = env.mesh_doctor(&["pod", "web-young", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "starting", "{doc:#}");
    assert!(codes(&doc).is_empty(), "{doc:#}");
    assert!(
        doc["evidence"]
            .to_string()
            .contains("60s (istio-proxy's readiness probe"),
        "{doc:#}"
    );
    // analyze's runtime findings follow the same rule: no MD0102 for it, exit 0.
    let run = env.mesh_doctor(&[
        "analyze",
        "--suppress",
        "IST0139=*",
        "-n",
        &ns,
        "--probe-timeout",
        "2s",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("MD01"), "{}", run.stdout);
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn oom_killed_and_image_pull_get_their_own_verdicts() {
    let env = testenv();
    let ns = namespace(&env, "trust-term", true);
    let oom = serde_json::json!({"name": "istio-proxy", "image": "istio/proxyv2:1.30.0",
        "imageID": "", "ready": false, "started": false, "restartCount": 5,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
            "startedAt": now_minus(100), "finishedAt": now_minus(90)}}});
    pod(
        &env,
        &ns,
        "web-oom",
        APP_AND_PROXY,
        &running_status(oom, false),
    );
    let pull = serde_json::json!({"name": "istio-proxy", "image": "istio/proxyv2:1.30.0",
        "imageID": "", "ready": false, "started": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff",
            "message": "Back-off pulling image \"istio/proxyv2:1.30.0\""}}});
    pod(
        &env,
        &ns,
        "web-pull",
        APP_AND_PROXY,
        &serde_json::json!({
            "phase": "Pending",
            "containerStatuses": [pull],
        }),
    );

    let run = env.mesh_doctor(&["pod", "web-oom", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "out-of-memory", "{doc:#}");
    assert_eq!(codes(&doc), ["MD0108"]);
    assert!(
        doc["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("its limit of 128Mi (OOMKilled, exit code 137)")
    );
    let steps = doc["nextSteps"].to_string();
    assert!(steps.contains("Raise the proxy's memory limit"), "{steps}");
    assert!(
        !steps.contains(" exec ") && !steps.contains("bootstrap validate"),
        "{steps}"
    );

    let run = env.mesh_doctor(&["pod", "web-pull", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "image-not-pulled", "{doc:#}");
    assert_eq!(codes(&doc), ["MD0108"]);
    let steps = doc["nextSteps"].to_string();
    assert!(steps.contains("Check the proxy image reference"), "{steps}");
    assert!(!steps.contains("root"), "{steps}");
    assert!(
        !doc["checks"].to_string().contains("istio-ca-root-cert"),
        "{doc:#}"
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn version_counts_running_proxies_finds_istiod_by_its_pods_and_honours_n() {
    let env = testenv();
    let ns = namespace(&env, "trust-version", true);
    let proxy = serde_json::json!({"name": "istio-proxy", "image": "istio/proxyv2:1.30.0",
        "imageID": "", "ready": true, "started": true, "restartCount": 0,
        "state": {"running": {"startedAt": now_minus(600)}}});
    pod(
        &env,
        &ns,
        "web-running",
        APP_AND_PROXY,
        &running_status(proxy, true),
    );
    pod(
        &env,
        &ns,
        "web-pending",
        APP_AND_PROXY,
        &serde_json::json!({"phase": "Pending"}),
    );
    // istiod as proxy-status finds it: a pod labelled app=istiod, no Deployment (in this
    // test's namespace, so that no other test's proxy-status finds it).
    env.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: istiod-trust\n  namespace: {ns}\n  labels: {{app: istiod}}\nspec:\n  containers:\n  - {{name: discovery, image: istio/pilot:1.30.0}}\n"
    ));
    let patch = serde_json::json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}})
    .to_string();
    env.kubectl(&[
        "-n",
        &ns,
        "patch",
        "pod",
        "istiod-trust",
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);

    let run = env.mesh_doctor(&["version", "-n", &ns]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("data plane version: 1.30.0 (1 proxy)\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("no istiod"), "{}", run.stdout);
    assert!(!run.stdout.contains("1 proxies"), "{}", run.stdout);
    env.kubectl(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "istiod-trust",
        "--grace-period=0",
        "--force",
    ]);
}
