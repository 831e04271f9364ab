//! `analyze` against a real kube-apiserver (the test cluster of `scripts/test-all.sh`):
//! injection findings on live pods, a real kubectl finding the plugin, RBAC degradation with
//! the shipped ClusterRole, unreachable servers, and proof from the audit log that mesh-doctor
//! only reads.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{TestEnv, testenv, unique};

const NEEDS_CLUSTER: &str = "needs the test cluster: scripts/test-all.sh";

fn pod(namespace: &str, name: &str, extra_meta: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n{extra_meta}spec:\n  nodeName: kwok-node-0\n{spec}---\n"
    )
}

const APP_ONLY: &str = "  containers:\n  - name: app\n    image: example/app:1\n";
const CLASSIC: &str = "  containers:\n  - name: app\n    image: example/app:1\n  - name: istio-proxy\n    image: istio/proxyv2:1.30.0\n";
const NATIVE: &str = "  initContainers:\n  - name: istio-proxy\n    image: istio/proxyv2:1.30.0\n    restartPolicy: Always\n  containers:\n  - name: app\n    image: example/app:1\n";

const ISTIOD_READY: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system}\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: istiod-e2e-analyze\n  namespace: istio-system\n  labels: {kubernetes.io/service-name: istiod}\naddressType: IPv4\nendpoints:\n- addresses: [10.244.0.2]\n  conditions: {ready: true}\nports:\n- {name: https-webhook, port: 15017, protocol: TCP}\n---\n";

/// Istio's default-revision injection webhooks, plus the rev.* ones for `revision`, and a ready
/// endpoint for the Service they call (istiod is up; without one, MD0202 reports an outage).
fn webhooks(name: &str, revision: &str) -> String {
    let hook = |hook: &str, ns: &str, obj: &str| {
        format!(
            "- name: {hook}.sidecar-injector.istio.io\n  clientConfig:\n    service: {{name: istiod, namespace: istio-system, path: /inject, port: 443}}\n  failurePolicy: Fail\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [pods]}}]\n  namespaceSelector:\n    matchExpressions: {ns}\n  objectSelector:\n    matchExpressions: {obj}\n"
        )
    };
    let not_false = "[{key: sidecar.istio.io/inject, operator: NotIn, values: [\"false\"]}]";
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: {name}\n  labels: {{istio.io/rev: default, app: sidecar-injector}}\nwebhooks:\n{}{}{}---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: {name}-{revision}\n  labels: {{istio.io/rev: {revision}, app: sidecar-injector}}\nwebhooks:\n{}---\n",
        hook(
            "namespace",
            "[{key: istio-injection, operator: In, values: [enabled]}]",
            not_false
        ),
        hook(
            "object",
            "[{key: istio-injection, operator: DoesNotExist}, {key: istio.io/rev, operator: DoesNotExist}]",
            "[{key: sidecar.istio.io/inject, operator: In, values: [\"true\"]}, {key: istio.io/rev, operator: DoesNotExist}]"
        ),
        hook(
            "rev.namespace",
            "[{key: istio.io/rev, operator: In, values: [default]}, {key: istio-injection, operator: DoesNotExist}]",
            not_false
        ),
        hook(
            "rev.namespace",
            &format!(
                "[{{key: istio.io/rev, operator: In, values: [{revision}]}}, {{key: istio-injection, operator: DoesNotExist}}]"
            ),
            not_false
        ),
    )
}

/// The scenario: namespaces and pods of every injection case, with names starting with `p`.
struct Scenario {
    p: String,
    /// The kubectl and kubeconfig that delete the scenario's injector configurations when the
    /// test ends (they are cluster-wide: left behind, they overlap with every later run's).
    kubectl: (std::path::PathBuf, std::path::PathBuf),
}

impl Drop for Scenario {
    fn drop(&mut self) {
        let (kubectl, kubeconfig) = &self.kubectl;
        let p = &self.p;
        let _ = std::process::Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "delete",
                "mutatingwebhookconfiguration",
                "--ignore-not-found",
                "--wait=false",
                &format!("{p}-injector"),
                &format!("{p}-injector-{p}-canary"),
            ])
            .output();
    }
}

impl Scenario {
    fn create(env: &TestEnv) -> Scenario {
        // The ready istiod endpoint is shared by every scenario: create it once per test process,
        // since parallel `kubectl apply`s of the same new object race (AlreadyExists).
        static ISTIOD: std::sync::Once = std::sync::Once::new();
        ISTIOD.call_once(|| env.apply(ISTIOD_READY));
        let p = unique("e2e");
        let rev = format!("{p}-canary");
        let mut yaml = webhooks(&format!("{p}-injector"), &rev);
        yaml.push_str(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {p}-inj\n  labels: {{istio-injection: enabled}}\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {p}-rev\n  labels: {{istio.io/rev: {rev}}}\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {p}-plain\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {p}-late\n---\n"
        ));
        let inj = format!("{p}-inj");
        yaml.push_str(&pod(&inj, "classic", "", CLASSIC));
        yaml.push_str(&pod(&inj, "native", "", NATIVE));
        yaml.push_str(&pod(&inj, "missing", "", APP_ONLY));
        yaml.push_str(&pod(
            &inj,
            "opted-out",
            "  labels: {sidecar.istio.io/inject: \"false\"}\n",
            APP_ONLY,
        ));
        yaml.push_str(&pod(
            &inj,
            "hostnet",
            "",
            &format!("  hostNetwork: true\n{APP_ONLY}"),
        ));
        yaml.push_str(&pod(&format!("{p}-rev"), "rev-missing", "", APP_ONLY));
        yaml.push_str(&pod(&format!("{p}-rev"), "rev-native", "", NATIVE));
        yaml.push_str(&pod(&format!("{p}-late"), "before-label", "", APP_ONLY));
        yaml.push_str(&format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad-port\n  namespace: {inj}\nspec:\n  ports:\n  - {{name: web, port: 80, targetPort: 8080}}\n  - {{name: http-ok, port: 81}}\n"
        ));
        env.apply(&yaml);
        // The namespace is labelled after its pod was created: that pod has no proxy.
        env.kubectl(&[
            "label",
            "namespace",
            &format!("{p}-late"),
            "istio-injection=enabled",
        ]);
        Scenario {
            p,
            kubectl: (env.kubectl.clone(), env.kubeconfig.clone()),
        }
    }

    /// The (code, origin) pairs this scenario must produce.
    fn expected(&self) -> BTreeSet<(String, String)> {
        let p = &self.p;
        [
            ("IST0103", format!("Pod {p}-inj/missing")),
            ("IST0103", format!("Pod {p}-rev/rev-missing")),
            ("IST0103", format!("Pod {p}-late/before-label")),
            ("IST0102", format!("Namespace {p}-plain")),
            ("IST0118", format!("Service {p}-inj/bad-port")),
        ]
        .into_iter()
        .map(|(c, o)| (c.to_string(), o))
        .collect()
    }

    /// The findings of a JSON output that are about this scenario's objects.
    fn mine(&self, json: &str) -> BTreeSet<(String, String)> {
        let findings: Vec<serde_json::Value> =
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
        findings
            .iter()
            .filter(|f| f["origin"].as_str().unwrap_or("").contains(&self.p))
            // The scenario's injector configurations call istio-system/istiod, which the test
            // cluster does not have, and overlap with other runs': webhook.Analyzer's IST0139 is
            // tested in e2e_gateway_api.rs.
            .filter(|f| f["code"] != "IST0139")
            .map(|f| {
                (
                    f["code"].as_str().unwrap().to_string(),
                    f["origin"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn live_injection_findings_in_all_namespaces() {
    let env = testenv();
    let s = Scenario::create(&env);
    let run = env.mesh_doctor(&["analyze", "-A", "-o", "json"]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    assert_eq!(s.mine(&run.stdout), s.expected());

    let run = env.mesh_doctor(&["analyze", "-A"]);
    assert_eq!(run.code, 79);
    let p = &s.p;
    assert!(
        run.stdout.contains(&format!(
            "Warning [IST0103] (Pod {p}-late/before-label) The pod {p}-late/before-label is missing the Istio proxy."
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(&format!(
        "Info [IST0118] (Service {p}-inj/bad-port) Port name web (port: 80, targetPort: 8080) doesn't follow the naming convention of Istio port."
    )));
    let _ = NEEDS_CLUSTER;
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn live_namespace_scope() {
    let env = testenv();
    let s = Scenario::create(&env);
    let p = &s.p;
    // Cluster-scoped findings (the injector configurations' IST0139) are in every scope.
    let run = env.mesh_doctor(&[
        "analyze",
        "-n",
        &format!("{p}-inj"),
        "--suppress",
        "IST0139=*",
    ]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "only {p}-inj's findings: {}", run.stdout);
    assert!(lines[0].starts_with(&format!("Warning [IST0103] (Pod {p}-inj/missing)")));
    assert!(lines[1].starts_with(&format!("Info [IST0118] (Service {p}-inj/bad-port)")));

    // A namespace with nothing wrong: exit 0 and the success line on stderr.
    let clean = unique("e2e-clean");
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {clean}\n  labels: {{istio-injection: enabled}}\n---\n{}",
        pod(&clean, "ok", "", CLASSIC)
    ));
    // Cluster-scoped findings are in every scope: the injector configurations the tests leave
    // on the shared cluster overlap (IST0139); this check is about the namespace.
    let run = env.mesh_doctor(&["analyze", "-n", &clean, "--suppress", "IST0139=*"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains(&format!(
        "No validation issues found when analyzing namespace: {clean}."
    )));

    // Files overlay the cluster with --use-kube=true.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("svc.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: v1\nkind: Service\nmetadata:\n  name: from-file\n  namespace: {clean}\nspec:\n  ports:\n  - {{name: odd, port: 9}}\n"),
    )
    .unwrap();
    let run = env.mesh_doctor(&[
        "analyze",
        "-n",
        &clean,
        "-f",
        file.to_str().unwrap(),
        "--use-kube=true",
        "--suppress",
        "IST0139=*",
    ]);
    assert_eq!(run.code, 0, "IST0118 is Info: {}", run.stderr);
    assert!(
        run.stdout
            .contains(&format!("(Service {clean}/from-file {}:8)", file.display())),
        "{}",
        run.stdout
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn real_kubectl_runs_the_plugin_from_path() {
    let env = testenv();
    let s = Scenario::create(&env);
    let bin_dir = common::binary().parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(&env.kubectl)
        .args([
            "mesh-doctor",
            "analyze",
            "-n",
            &format!("{}-inj", s.p),
            "--kubeconfig",
        ])
        .arg(&env.kubeconfig)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(79),
        "kubectl passes the exit code through: {stdout}"
    );
    assert!(
        stdout.contains(&format!("(Pod {}-inj/missing)", s.p)),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn shipped_rbac_role_is_enough_and_forbidden_kinds_degrade() {
    let env = testenv();
    let s = Scenario::create(&env);
    let reader = format!("{}-reader", s.p);
    let limited = format!("{}-limited", s.p);
    let rbac = std::fs::read_to_string("docs/rbac.yaml").unwrap();
    env.apply(&rbac);
    env.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {reader}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mesh-doctor-readonly}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {reader}}}]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {limited}\nrules:\n- {{apiGroups: [\"\"], resources: [namespaces, pods, configmaps], verbs: [get, list]}}\n- {{apiGroups: [apps, batch], resources: [deployments, statefulsets, daemonsets, cronjobs], verbs: [list]}}\n- {{apiGroups: [admissionregistration.k8s.io], resources: [mutatingwebhookconfigurations], verbs: [list]}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {limited}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {limited}}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {limited}}}]\n"
    ));

    // The shipped read-only ClusterRole reads everything analyze needs.
    let run = env.mesh_doctor(&["analyze", "-A", "-o", "json", "--as", &reader]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    assert!(!run.stderr.contains("cannot list"), "{}", run.stderr);
    assert_eq!(s.mine(&run.stdout), s.expected());

    // What the injection analyzer reads (namespaces, pods, the injector's ConfigMap, the
    // webhooks, the workloads) and no Services: the port-name analyzer is skipped and says why;
    // the rest runs.
    let run = env.mesh_doctor(&["analyze", "-A", "-o", "json", "--as", &limited]);
    assert!(
        run.stderr.contains("cannot list services"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("skipped port-names"), "{}", run.stderr);
    // Each denial is said once (the list that failed), not again by every check it skips.
    assert_eq!(
        run.stderr
            .matches("cannot list resource \"services\"")
            .count(),
        1,
        "{}",
        run.stderr
    );
    let got = s.mine(&run.stdout);
    assert!(
        got.contains(&(
            "IST0103".to_string(),
            format!("Pod {}-late/before-label", s.p)
        )),
        "{got:?}"
    );
    assert!(!got.iter().any(|(code, _)| code == "IST0118"));

    // Nobody: nothing can be read, exit 69.
    let run = env.mesh_doctor(&["analyze", "-A", "--as", &format!("{}-nobody", s.p)]);
    assert_eq!(run.code, 69, "{}", run.stderr);
    assert!(
        run.stderr.contains("nothing could be read"),
        "{}",
        run.stderr
    );
}

fn kubeconfig_for(server: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: gone, cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: gone, context: {{cluster: gone, user: u}}}}]\ncurrent-context: gone\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn unreachable_server_exits_69_within_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Connection refused: a port nothing listens on.
    let refused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = refused.local_addr().unwrap().port();
    drop(refused);
    let kubeconfig = kubeconfig_for(&format!("https://127.0.0.1:{port}"), dir.path());
    let out = std::process::Command::new(common::binary())
        .args(["analyze", "-A", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{stderr}");
    assert!(
        stderr.contains(&format!("https://127.0.0.1:{port}")),
        "names the server: {stderr}"
    );

    // A server that accepts connections and never answers: the request timeout ends it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let kubeconfig = kubeconfig_for(&format!("https://127.0.0.1:{port}"), dir.path());
    let started = Instant::now();
    let out = std::process::Command::new(common::binary())
        .args(["analyze", "-A", "--request-timeout", "2s", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{stderr}");
    assert!(
        stderr.contains(&format!("https://127.0.0.1:{port}")),
        "{stderr}"
    );
    // Not a timing assertion on speed: only that the timeout, not a hang, ended it.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    drop(silent);
}

#[test]
fn missing_kubeconfig_is_a_usage_error() {
    let out = std::process::Command::new(common::binary())
        .args(["analyze", "-A", "--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/kubeconfig"));
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn audit_log_shows_only_reads() {
    let env = testenv();
    let s = Scenario::create(&env);
    let marker = format!("{}-auditor", s.p);
    env.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {marker}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}\nsubjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {marker}}}]\n"
    ));
    // Every command, as a user with every right: what it does is all it chose to do.
    for args in [
        vec!["analyze", "-A"],
        vec!["analyze", "-n", "default", "-o", "json"],
    ] {
        let mut args = args.clone();
        args.extend(["--as", marker.as_str()]);
        let _ = env.mesh_doctor(&args);
    }
    std::thread::sleep(Duration::from_secs(2));
    let log =
        std::fs::read_to_string(env.dir.join("audit.log")).expect("the apiserver writes audit.log");
    let mut seen = 0;
    let mut verbs = BTreeSet::new();
    for line in log.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let agent = event["userAgent"].as_str().unwrap_or("");
        if !agent.starts_with("mesh-doctor/") {
            continue;
        }
        seen += 1;
        let verb = event["verb"].as_str().unwrap_or("").to_string();
        let subresource = event["objectRef"]["subresource"].as_str().unwrap_or("");
        let allowed = matches!(verb.as_str(), "get" | "list" | "watch")
            || (subresource == "portforward" && verb == "create");
        assert!(allowed, "mesh-doctor sent a write: {line}");
        verbs.insert(verb);
    }
    assert!(
        seen > 0,
        "the audit log has mesh-doctor's requests (user agent mesh-doctor/...)"
    );
    assert!(verbs.contains("list"));
}

/// `--exclude-namespace GLOB` on a live cluster: the findings of matching namespaces are left
/// out, the others stay, and every element of the JSON is in istioctl's shape.
#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn live_exclude_namespace_leaves_out_matching_namespaces() {
    let env = testenv();
    let kept = unique("exclkeep");
    let dropped = unique("excldrop");
    let service = |ns: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: {ns}}}\nspec:\n  selector: {{app: web}}\n  ports:\n  - {{name: foo, port: 80}}\n---\n"
        )
    };
    env.apply(&(service(&kept) + &service(&dropped)));
    let run = env.mesh_doctor(&[
        "analyze",
        "-A",
        "-o",
        "json",
        "--exclude-namespace",
        "excldrop-*",
    ]);
    assert!(
        run.code == 0 || run.code == 79 || run.code == 69,
        "{}",
        run.stderr
    );
    let items: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
    for item in &items {
        for key in ["code", "level", "message", "origin", "documentationUrl"] {
            assert!(item.get(key).is_some(), "{key} missing in {item}");
        }
    }
    let origins: Vec<&str> = items
        .iter()
        .filter(|i| i["code"] == "IST0118")
        .map(|i| i["origin"].as_str().unwrap())
        .collect();
    assert!(
        origins.contains(&format!("Service {kept}/web").as_str()),
        "{origins:?}"
    );
    assert!(
        !origins.iter().any(|o| o.contains(&dropped)),
        "{dropped} is excluded: {origins:?}"
    );
    let _ = env.kubectl_run(
        &["delete", "namespace", &kept, &dropped, "--wait=false"],
        None,
    );
}
