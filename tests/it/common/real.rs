//! Helpers for the end-to-end tests against the REAL node (`testenv/node-up.sh`: kubelet on
//! containerd + runc, kube-proxy, CoreDNS, kube-scheduler, kube-controller-manager) with Istio
//! installed by istioctl from the locally built images (`testenv/node/istio-up.sh`).
//!
//! Pods run for real: every status, event and log line these tests read was written by the
//! kubelet, the controllers, pilot-agent, Envoy or istiod. The tests find the cluster through
//! `MESH_DOCTOR_TESTENV_REAL` (its state directory).
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{Run, TestEnv, unique};
use serde_json::Value;

/// The running real-node cluster; panics with instructions when there is none.
pub fn real_env() -> TestEnv {
    super::suite::enter();
    let dir = std::env::var_os("MESH_DOCTOR_TESTENV_REAL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "MESH_DOCTOR_TESTENV_REAL is not set: these tests need the real node with Istio. \
                 Run scripts/test-all.sh, or `eval \"$(TESTENV_NAME=x testenv/node-up.sh)\"; \
                 TESTENV_NAME=x testenv/node/istio-up.sh` and \
                 MESH_DOCTOR_TESTENV_REAL=$TESTENV_DIR cargo test --test it e2e_real_mesh -- --include-ignored"
            )
        });
    let kubeconfig = dir.join("kubeconfig");
    assert!(
        kubeconfig.exists(),
        "{} does not exist: is the real node up?",
        kubeconfig.display()
    );
    let kubectl = std::env::var_os("TESTENV_KUBECTL")
        .map(PathBuf::from)
        .or_else(|| super::find_cached("kubectl-"))
        .expect("no kubectl: run testenv/build.sh or set TESTENV_KUBECTL");
    TestEnv {
        dir,
        kubeconfig,
        kubectl,
    }
}

/// The cached istioctl (the oracle), built by testenv/build.sh.
pub fn istioctl() -> PathBuf {
    super::find_cached("istioctl-").expect("no istioctl: run testenv/build.sh --node")
}

/// The image hub and tag the node's images carry (testenv/env.sh).
pub fn image(name: &str) -> String {
    let env = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testenv/env.sh"),
    )
    .unwrap();
    let var = |key: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=\"")))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{key} in testenv/env.sh"))
            .to_string()
    };
    let tag = match name {
        "app" => var("APP_VERSION"),
        _ => var("ISTIO_VERSION"),
    };
    format!("{}/{name}:{tag}", var("TESTENV_IMAGE_HUB"))
}

pub fn istio_version() -> String {
    image("pilot").rsplit(':').next().unwrap().to_string()
}

impl TestEnv {
    pub fn istioctl(&self, args: &[&str]) -> Run {
        let mut cmd = std::process::Command::new(istioctl());
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd.stdin(std::process::Stdio::null());
        cmd.output().expect("istioctl runs").into()
    }

    /// A fresh namespace with the given labels (`key=value`).
    pub fn namespace(&self, prefix: &str, labels: &[&str]) -> String {
        let ns = unique(prefix);
        self.kubectl(&["create", "namespace", &ns]);
        if !labels.is_empty() {
            let mut args = vec!["label", "namespace", ns.as_str()];
            args.extend_from_slice(labels);
            self.kubectl(&args);
        }
        ns
    }

    /// Deletes namespaces without waiting (the namespace controller finishes it); called at
    /// the end of a passing test, so a failing one leaves its pods for a look.
    pub fn delete_namespaces(&self, namespaces: &[&str]) {
        for ns in namespaces {
            let _ = self.kubectl_run(&["delete", "namespace", ns, "--wait=false"], None);
        }
    }

    pub fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).unwrap()
    }

    pub fn pod(&self, ns: &str, name: &str) -> Value {
        self.get_json(&["pod", name, "-n", ns])
    }

    /// Waits until `check` on the pod's JSON is true; panics with the pod after `limit`.
    pub fn wait_pod(
        &self,
        ns: &str,
        name: &str,
        what: &str,
        limit: Duration,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let run = self.kubectl_run(&["get", "pod", name, "-n", ns, "-o", "json"], None);
            if run.code == 0 {
                let pod: Value = serde_json::from_str(&run.stdout).unwrap();
                if check(&pod) {
                    return pod;
                }
                if Instant::now() > deadline {
                    let events = self.kubectl(&["get", "events", "-n", ns]);
                    panic!(
                        "{ns}/{name}: not {what} after {limit:?}:\n{:#}\n{events}",
                        pod["status"]
                    );
                }
            } else if Instant::now() > deadline {
                panic!("{ns}/{name}: {}", run.stderr);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    pub fn wait_ready(&self, ns: &str, name: &str) -> Value {
        self.wait_pod(ns, name, "Ready", Duration::from_secs(120), |p| {
            condition(p, "Ready") == Some("True")
        })
    }

    /// Waits until `f` returns Some.
    pub fn wait_for<T>(&self, what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not reached after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

pub fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a str> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)?["status"]
        .as_str()
}

/// The status of container `name` (containers and init containers).
pub fn container_status<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|k| pod["status"][k].as_array())
        .flatten()
        .find(|c| c["name"] == name)
}

/// Names of the pod's containers and init containers, in order.
pub fn container_names(pod: &Value) -> Vec<String> {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod["spec"][k].as_array())
        .flatten()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// A bare Pod of the small app (busybox httpd on 8080) with extra annotations. Its sidecar's
/// readiness probe (set through Istio's readiness.status.sidecar.istio.io annotations) runs
/// every second and gives up after 2 failures, so mesh-doctor's startup grace (derived from
/// that probe) is 2 s and a broken proxy is judged at once rather than called "starting".
pub fn app_pod(ns: &str, name: &str, annotations: &[(&str, &str)]) -> String {
    let probe = [
        ("readiness.status.sidecar.istio.io/initialDelaySeconds", "0"),
        ("readiness.status.sidecar.istio.io/periodSeconds", "1"),
        ("readiness.status.sidecar.istio.io/failureThreshold", "2"),
    ];
    let annotations: Vec<(&str, &str)> = probe.iter().chain(annotations).copied().collect();
    let mut ann = String::new();
    for (k, v) in &annotations {
        ann.push_str(&format!("    {k}: {}\n", serde_json::to_string(v).unwrap()));
    }
    let ann = if ann.is_empty() {
        String::new()
    } else {
        format!("  annotations:\n{ann}")
    };
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {name}}}
{ann}spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: {image}
    ports:
    - {{containerPort: 8080, name: http}}
    readinessProbe:
      httpGet: {{path: /, port: 8080}}
      periodSeconds: 2
",
        image = image("app")
    )
}

/// A Deployment of the small app, and its Service.
pub fn app_deployment(ns: &str, name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: {image}
        ports:
        - {{containerPort: 8080, name: http}}
---
apiVersion: v1
kind: Service
metadata:
  name: {name}
  namespace: {ns}
spec:
  selector: {{app: {name}}}
  ports:
  - {{name: http, port: 80, targetPort: 8080}}
",
        image = image("app")
    )
}

/// The JSON a mesh-doctor run printed; panics with its output when it is not JSON.
pub fn json(run: &super::Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", run.stdout, run.stderr))
}

/// `pod POD -n NS -o json`: its document and the run.
pub fn pod_doc(env: &super::TestEnv, ns: &str, pod: &str) -> (Value, super::Run) {
    let run = env.mesh_doctor(&["pod", pod, "-n", ns, "-o", "json"]);
    (json(&run), run)
}

/// A raw HTTP/1.1 `GET path` from the app container of `deploy/client` in `ns` to `host:80`
/// (busybox `nc`: the status line, headers and body come back whatever the status; empty when
/// the connection is reset; its `wget -T` segfaults and plain `wget` hides an error's body),
/// through the sidecar that captures its outbound traffic when it has one.
pub fn http_get(env: &super::TestEnv, ns: &str, host: &str, path: &str) -> super::Run {
    let script = format!(
        "(printf 'GET {path} HTTP/1.1\\r\\nHost: {host}\\r\\nConnection: close\\r\\n\\r\\n'; sleep 3) | timeout 8 nc {host} 80"
    );
    env.kubectl_run(
        &[
            "-n",
            ns,
            "exec",
            "deploy/client",
            "-c",
            "app",
            "--",
            "sh",
            "-c",
            &script,
        ],
        None,
    )
}

/// The codes of an `-o json` run's findings, in order.
pub fn codes(run: &Run) -> Vec<String> {
    let items: Vec<serde_json::Value> = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", run.stdout, run.stderr));
    items
        .iter()
        .filter_map(|i| i["code"].as_str().map(String::from))
        .collect()
}

/// Waits for a Deployment's rollout.
pub fn rollout(env: &TestEnv, ns: &str, deployment: &str) {
    env.kubectl(&[
        "-n",
        ns,
        "rollout",
        "status",
        &format!("deploy/{deployment}"),
        "--timeout=180s",
    ]);
}

/// `analyze -n NS -o json` (live) and `analyze -f` over `manifests` (files): the codes of both.
pub fn live_and_files(env: &TestEnv, ns: &str, manifests: &[String]) -> (Vec<String>, Vec<String>) {
    let live = env.mesh_doctor(&["analyze", "-n", ns, "-o", "json"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("manifests.yaml");
    let text: Vec<String> = manifests
        .iter()
        .map(|m| m.trim_end().trim_end_matches("---").to_string())
        .collect();
    std::fs::write(&file, text.join("\n---\n")).unwrap();
    let files = env.mesh_doctor(&["analyze", "-f", file.to_str().unwrap(), "-o", "json"]);
    (codes(&live), codes(&files))
}

/// The log line of `analyze -n NS` with `code`.
pub fn line_of(env: &TestEnv, ns: &str, code: &str) -> String {
    let text = env.mesh_doctor(&["analyze", "-n", ns]);
    text.stdout
        .lines()
        .find(|l| l.contains(&format!("[{code}]")))
        .unwrap_or_else(|| panic!("no {code}:\n{}\n{}", text.stdout, text.stderr))
        .to_string()
}

/// The body of the test app's page.
pub const PAGE: &str = "mesh-doctor test app";

/// A GET of `host` from `deploy/client` in `ns` ([`http_get`]): what it printed, stdout then
/// stderr (empty output: the connection was reset).
pub fn request(env: &TestEnv, ns: &str, host: &str) -> String {
    let run = http_get(env, ns, host, "/");
    format!("{}{}", run.stdout, run.stderr)
}

/// Requests until `want` holds for the answer (the sidecars get their config a moment after the
/// objects change); the last answer otherwise.
pub fn request_until(env: &TestEnv, ns: &str, host: &str, want: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..40 {
        last = request(env, ns, host);
        if want(&last) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    last
}

/// The test app's page, 200 OK.
pub fn ok(answer: &str) -> bool {
    answer.starts_with("HTTP/1.1 200 OK") && answer.contains(PAGE)
}
