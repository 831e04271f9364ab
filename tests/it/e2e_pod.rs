//! `pod NAME` and the runtime findings of `analyze` on the real path: real Envoy 1.40.0
//! processes started by these tests, reached through kube-rs port-forward -> the test
//! kube-apiserver -> kwok PortForward resources; logs served by kwok Logs resources; pod
//! statuses (CrashLoopBackOff, 1/2 ready) set by the testenv kwok stages.
//!
//! Each test makes its own namespace and its own Envoys, on ports it picked, and stops them
//! when it ends (even when it fails): see [`Envoy`].

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{Run, TestEnv, testenv, unique};
use serde_json::Value;

/// The real Envoy: MESH_DOCTOR_ENVOY (set by scripts/test-all.sh), else the one testenv/build.sh
/// caches.
fn envoy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MESH_DOCTOR_ENVOY") {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("MESH_DOCTOR_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/mesh-doctor")
        });
    let cached = cache.join("bin/envoy-1.40.0");
    assert!(
        cached.exists(),
        "no Envoy: set MESH_DOCTOR_ENVOY or run testenv/build.sh (it links {})",
        cached.display()
    );
    cached
}

/// Ports handed out to the Envoys of this test binary. Envoy binds its listeners with
/// SO_REUSEPORT, so two Envoys given the same port would share it silently instead of failing:
/// a port is never given twice (testenv/README.md, "Listener ports are shared between Envoys").
static GIVEN_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A local port that was free when asked for and that no other Envoy of these tests has.
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free local port");
        if GIVEN_PORTS.lock().unwrap().insert(port) {
            return port;
        }
    }
}

/// Nothing listens on TCP port 1: an xDS cluster pointed there finds istiod unreachable
/// (connection refused), whatever istiods other tests run.
const NO_ISTIOD_PORT: u16 = 1;

/// A bootstrap of tests/fixtures/envoy/bootstraps (copies of the reference captures) with the
/// admin on port 0 (the real one is read from --admin-address-path), every static listener on
/// a port of its own, and the ADS cluster pointed at a closed port. Returns the bootstrap and
/// listener name -> port.
fn bootstrap(name: &str) -> (Value, BTreeMap<String, u16>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/envoy/bootstraps")
        .join(name);
    let mut b: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    b["admin"]["address"]["socket_address"]["port_value"] = 0.into();
    let mut ports = BTreeMap::new();
    for listener in b["static_resources"]["listeners"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let port = free_port();
        listener["address"]["socket_address"]["port_value"] = port.into();
        ports.insert(listener["name"].as_str().unwrap().to_string(), port);
    }
    for cluster in b["static_resources"]["clusters"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if cluster["name"] == "xds-grpc" || cluster["name"] == "xds_grpc" {
            cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
                ["socket_address"]["port_value"] = NO_ISTIOD_PORT.into();
        }
    }
    (b, ports)
}

/// An Envoy process started by a test. Its stderr is copied, line by line as Envoy writes it,
/// into `istio-proxy.log` in CRI format, which a kwok Logs resource serves as the container's
/// log. Dropping it kills the process (by its own handle) and removes its files.
struct Envoy {
    child: Child,
    dir: tempfile::TempDir,
    /// The admin port; `None` when Envoy exited before it opened one.
    admin: Option<u16>,
    listeners: BTreeMap<String, u16>,
    pump: Option<JoinHandle<()>>,
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(pump) = self.pump.take() {
            let _ = pump.join();
        }
    }
}

impl Envoy {
    /// Starts Envoy with a bootstrap; returns once its admin answers, or once it exited.
    fn start(bootstrap: &Value, listeners: BTreeMap<String, u16>) -> Envoy {
        let dir = tempfile::Builder::new()
            .prefix("mesh-doctor-e2e-envoy-")
            .tempdir()
            .unwrap();
        let config = dir.path().join("bootstrap.json");
        std::fs::write(&config, serde_json::to_vec_pretty(bootstrap).unwrap()).unwrap();
        let address_path = dir.path().join("admin-address");
        let log_path = dir.path().join("istio-proxy.log");
        let mut child = Command::new(envoy_binary())
            .arg("-c")
            .arg(&config)
            // Several Envoys at once: no shared-memory hot restart between them.
            .arg("--disable-hot-restart")
            .arg("--admin-address-path")
            .arg(&address_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("envoy starts");
        let stderr = child.stderr.take().unwrap();
        let mut log = std::fs::File::create(&log_path).unwrap();
        let pump = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(log, "{}", cri_line(&line));
            }
        });
        let mut envoy = Envoy {
            child,
            dir,
            admin: None,
            listeners,
            pump: Some(pump),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(text) = std::fs::read_to_string(&address_path)
                && let Some(port) = text.trim().rsplit(':').next().and_then(|p| p.parse().ok())
            {
                envoy.admin = Some(port);
                return envoy;
            }
            if let Ok(Some(_)) = envoy.child.try_wait() {
                return envoy;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "envoy wrote no admin address within 20s; log:\n{}",
            envoy.log_text()
        );
    }

    /// Waits for an Envoy that is expected to exit, and for its whole log.
    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(pump) = self.pump.take() {
                    pump.join().unwrap();
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "envoy did not exit within 20s; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("istio-proxy.log")
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn admin(&self) -> u16 {
        self.admin
            .unwrap_or_else(|| panic!("envoy has no admin port; log:\n{}", self.log_text()))
    }

    fn listener(&self, name: &str) -> u16 {
        self.listeners[name]
    }
}

/// One line of a container log as the kubelet (CRI) writes it, which is what kwok serves.
fn cri_line(text: &str) -> String {
    format!("2026-01-01T00:00:00Z stderr F {text}")
}

/// A local TCP server that accepts connections and never writes a byte: a proxy that hangs.
struct Silent {
    port: u16,
    _accepting: JoinHandle<()>,
}

fn silent_server() -> Silent {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = std::thread::spawn(move || {
        // Held open (never read, never answered) until the test process ends.
        let mut held: Vec<TcpStream> = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    Silent {
        port,
        _accepting: accepting,
    }
}

/// `mesh-doctor.test/sidecar` value of the testenv kwok stage for a pod, or none (Ready).
#[derive(Clone, Copy, PartialEq)]
enum Status {
    Ready,
    CrashLoop,
    NotReady,
}

/// A sidecar-injected pod as the injector leaves it: app + istio-proxy, the status annotation
/// and the istio-token volume with Istio's audience.
fn pod_yaml(namespace: &str, name: &str, status: Status) -> String {
    let stage = match status {
        Status::Ready => String::new(),
        Status::CrashLoop => "\n    mesh-doctor.test/sidecar: crashloop".to_string(),
        Status::NotReady => "\n    mesh-doctor.test/sidecar: not-ready".to_string(),
    };
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  labels:
    app: {name}{stage}
  annotations:
    sidecar.istio.io/status: '{{"containers":["istio-proxy"],"revision":"default"}}'
spec:
  nodeName: kwok-node-0
  serviceAccountName: default
  containers:
  - {{name: web, image: nginx}}
  # A startup grace of 0 + 1 x 1 = 1 s (the readiness probe's): past it, a proxy that is not
  # ready is judged (within it, every command says "starting").
  - name: istio-proxy
    image: istio/proxyv2:1.24.0
    readinessProbe: {{httpGet: {{path: /healthz/ready, port: 15021}}, periodSeconds: 1, failureThreshold: 1}}
  volumes:
  - name: istio-token
    projected:
      sources:
      - serviceAccountToken: {{audience: istio-ca, expirationSeconds: 43200, path: istio-token}}
---
"#
    )
}

/// kwok Logs resource: istio-proxy's current log, and the previous one when it restarted.
fn logs_yaml(namespace: &str, pod: &str, current: &Path, previous: Option<&Path>) -> String {
    let previous = previous
        .map(|p| format!("\n    previousLogsFile: {}", p.display()))
        .unwrap_or_default();
    format!(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Logs\nmetadata: {{name: {pod}, namespace: {namespace}}}\nspec:\n  logs:\n  - containers: [istio-proxy]\n    logsFile: {}{previous}\n---\n",
        current.display()
    )
}

/// kwok PortForward resource: pod port -> a local port (the Envoy admin, the 15021 listener).
fn port_forward_yaml(namespace: &str, pod: &str, forwards: &[(u16, u16)]) -> String {
    let mut yaml = format!(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: PortForward\nmetadata: {{name: {pod}, namespace: {namespace}}}\nspec:\n  forwards:\n"
    );
    for (pod_port, local) in forwards {
        yaml.push_str(&format!(
            "  - ports: [{pod_port}]\n    target: {{address: 127.0.0.1, port: {local}}}\n"
        ));
    }
    yaml.push_str("---\n");
    yaml
}

fn namespace_yaml(namespace: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n  labels: {{istio-injection: enabled}}\n---\n"
    )
}

/// An egress NetworkPolicy with no rule: it blocks everything, 15012 to istiod included.
fn deny_egress_yaml(namespace: &str, app: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {{name: deny-egress, namespace: {namespace}}}\nspec:\n  podSelector: {{matchLabels: {{app: {app}}}}}\n  policyTypes: [Egress]\n---\n"
    )
}

impl Status {
    /// A jsonpath whose value is `want` once the kwok stage has written the status.
    fn settled(self) -> (&'static str, &'static str) {
        match self {
            Status::Ready => ("{.status.conditions[?(@.type==\"Ready\")].status}", "True"),
            Status::CrashLoop => (
                "{.status.containerStatuses[?(@.name==\"istio-proxy\")].state.waiting.reason}",
                "CrashLoopBackOff",
            ),
            Status::NotReady => (
                "{.status.containerStatuses[?(@.name==\"istio-proxy\")].ready}{.status.phase}",
                "falseRunning",
            ),
        }
    }
}

/// Waits until kwok has given the pod the status its stage sets.
fn wait_for_status(env: &TestEnv, namespace: &str, pod: &str, status: Status) {
    let (path, want) = status.settled();
    let jsonpath = format!("jsonpath={path}");
    let mut got = String::new();
    for _ in 0..150 {
        got = env
            .kubectl_run(&["-n", namespace, "get", "pod", pod, "-o", &jsonpath], None)
            .stdout;
        if got == want {
            if matches!(status, Status::NotReady) {
                // Past the pod's startup grace (1 s, its readiness probe's), so it is judged.
                std::thread::sleep(Duration::from_millis(1500));
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("pod {namespace}/{pod}: {path} is {got:?}, never {want:?}");
}

/// Runs mesh-doctor, killing it if it has not finished after `limit` (a hang fails the test
/// instead of blocking the suite).
fn mesh_doctor_within(env: &TestEnv, args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(common::binary())
        .env("KUBECONFIG", &env.kubeconfig)
        .env("NO_COLOR", "1")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mesh-doctor starts");
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap().into();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "mesh-doctor {args:?} did not finish within {limit:?} (it hangs); stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", run.stdout, run.stderr))
}

fn codes(doc: &Value) -> Vec<&str> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect()
}

/// checks[] as name -> status.
fn checks(doc: &Value) -> BTreeMap<&str, &str> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect()
}

// ---------------------------------------------------------------------------------- scenarios

/// The crash: bootstrap B names its ADS cluster `xds-grpc` but defines `xds_grpc`. The real
/// Envoy exits at once; its stderr becomes the previous (and current) log of the crash-looping
/// istio-proxy. Returns the exited Envoy (it owns the log file).
fn crashing_pod(env: &TestEnv, namespace: &str, name: &str) -> Envoy {
    let (b, ports) = bootstrap("B_wrong_xds_cluster_name.json");
    let mut envoy = Envoy::start(&b, ports);
    let status = envoy.wait_exit();
    assert!(
        !status.success(),
        "bootstrap B must make Envoy exit with an error"
    );
    let log = envoy.log_path();
    env.apply(&format!(
        "{}{}",
        logs_yaml(namespace, name, &log, Some(&log)),
        pod_yaml(namespace, name, Status::CrashLoop)
    ));
    wait_for_status(env, namespace, name, Status::CrashLoop);
    envoy
}

/// The wait: bootstrap A's ADS cluster points at a closed port, so Envoy stays
/// PRE_INITIALIZING. Returns that Envoy and the one that answers the pod's 15021.
///
/// Why a second Envoy for 15021: Envoy opens its listeners only once it has its configuration,
/// so bootstrap A's own readiness listener refuses connections (captures
/// A_15021__healthz_ready: curl exit 7, "Couldn't connect"). In a pod, the kubelet's readiness
/// probe of istio-proxy answers HTTP 503 while the proxy waits for istiod (the pod shows 1/2,
/// "Readiness probe failed: HTTP probe failed with statuscode: 503"). No pilot-agent runs here,
/// so the pod's 15021 is forwarded to a real listener of a second, static-only Envoy whose
/// /healthz/ready is a direct_response 503: a real Envoy HTTP answer, not a hand-written
/// server.
fn waiting_pod(env: &TestEnv, namespace: &str, name: &str) -> (Envoy, Envoy) {
    let (b, ports) = bootstrap("A_sidecar_istiod_unreachable.json");
    let waiting = Envoy::start(&b, ports);
    let (mut health, ports) = bootstrap("C_static_only.json");
    for listener in health["static_resources"]["listeners"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter(|l| l["name"] == "readiness_listener")
    {
        let routes = &mut listener["filter_chains"][0]["filters"][0]["typed_config"]["route_config"]
            ["virtual_hosts"][0]["routes"];
        for route in routes.as_array_mut().unwrap() {
            if route["match"]["path"] == "/healthz/ready" {
                route["direct_response"] = serde_json::json!({
                    "status": 503,
                    "body": {"inline_string": "not ready: no configuration from istiod\n"}
                });
            }
        }
    }
    let health = Envoy::start(&health, ports);
    env.apply(&format!(
        "{}{}{}{}",
        logs_yaml(namespace, name, &waiting.log_path(), None),
        port_forward_yaml(
            namespace,
            name,
            &[
                (15000, waiting.admin()),
                (15021, health.listener("readiness_listener"))
            ]
        ),
        deny_egress_yaml(namespace, name),
        pod_yaml(namespace, name, Status::NotReady)
    ));
    wait_for_status(env, namespace, name, Status::NotReady);
    (waiting, health)
}

/// A healthy sidecar: bootstrap C (static only) is LIVE and its readiness listener answers 200.
fn healthy_pod(env: &TestEnv, namespace: &str, name: &str) -> Envoy {
    let (b, ports) = bootstrap("C_static_only.json");
    let envoy = Envoy::start(&b, ports);
    env.apply(&format!(
        "{}{}{}",
        logs_yaml(namespace, name, &envoy.log_path(), None),
        port_forward_yaml(
            namespace,
            name,
            &[
                (15000, envoy.admin()),
                (15021, envoy.listener("readiness_listener"))
            ]
        ),
        pod_yaml(namespace, name, Status::Ready)
    ));
    wait_for_status(env, namespace, name, Status::Ready);
    envoy
}

fn new_namespace(env: &TestEnv, prefix: &str) -> String {
    let namespace = unique(prefix);
    env.apply(&namespace_yaml(&namespace));
    namespace
}

// -------------------------------------------------------------------------------------- tests

const LIMIT: Duration = Duration::from_secs(120);

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn crash_loop_is_a_bootstrap_crash_quoting_envoys_error() {
    let env = testenv();
    let ns = new_namespace(&env, "pod-crash");
    let envoy = crashing_pod(&env, &ns, "web-crash");
    assert!(
        envoy
            .log_text()
            .contains("Unknown gRPC client cluster 'xds-grpc'"),
        "the real Envoy's stderr has the error: {}",
        envoy.log_text()
    );

    let run = mesh_doctor_within(&env, &["pod", "web-crash", "-n", &ns, "-o", "json"], LIMIT);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "bootstrap-crash");
    assert_eq!(codes(&doc), ["MD0101"]);
    assert_eq!(doc["findings"][0]["level"], "Error");
    assert_eq!(doc["pod"]["proxy"]["restarts"], 7);
    let evidence = doc["evidence"].to_string();
    assert!(
        evidence.contains("logs (previous)") && evidence.contains("Unknown gRPC client cluster"),
        "{evidence}"
    );
    // Not running: no port-forward attempted; the previous log was read.
    assert!(doc["probe"]["admin"]["serverInfo"]["skipped"].is_string());
    assert!(
        doc["probe"]["logs"]["previous"]["ok"]["lines"]
            .as_u64()
            .unwrap()
            > 10
    );

    let run = mesh_doctor_within(&env, &["pod", "web-crash", "-n", &ns], LIMIT);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let text = &run.stdout;
    assert!(text.contains("bootstrap crash"), "{text}");
    assert!(text.contains("Error [MD0101]"), "{text}");
    // The quoted log line is the real Envoy's critical line.
    let quoted = text
        .lines()
        .find(|l| l.contains("logs (previous) line"))
        .unwrap_or_else(|| panic!("no quoted log line:\n{text}"));
    assert!(
        quoted.contains("[critical]")
            && quoted
                .contains("error `Unknown gRPC client cluster 'xds-grpc'` initializing config"),
        "{quoted}"
    );
    assert!(
        text.contains(&format!(
            "kubectl -n {ns} logs web-crash -c istio-proxy --previous"
        )),
        "{text}"
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn proxy_without_istiod_is_waiting_with_the_causes_checked() {
    let env = testenv();
    let ns = new_namespace(&env, "pod-wait");
    let _envoys = waiting_pod(&env, &ns, "web-wait");

    let run = mesh_doctor_within(&env, &["pod", "web-wait", "-n", &ns, "-o", "json"], LIMIT);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(
        doc["verdict"]["kind"], "waiting-for-control-plane",
        "{doc:#}"
    );
    // The ADS cluster points at 127.0.0.1:1, which is not istiod's: a finding of its own, and
    // the first next step (whatever istiod the shared cluster runs).
    assert_eq!(codes(&doc), ["MD0102", "MD0109"]);
    assert!(
        doc["findings"][1]["message"]
            .as_str()
            .unwrap()
            .contains("sends its xDS requests to 127.0.0.1:1, which is not istiod"),
        "{doc:#}"
    );
    assert!(
        doc["nextSteps"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Point the proxy back at istiod"),
        "{doc:#}"
    );
    let admin = &doc["probe"]["admin"];
    assert_eq!(admin["serverInfo"]["ok"]["state"], "PRE_INITIALIZING");
    assert_eq!(admin["ready"]["ok"]["status"], 503);
    assert_eq!(admin["health"]["ok"]["status"], 503);
    // Envoy sets control_plane.connected_state to 1 when it starts an xDS stream, before the
    // connection is refused, and back to 0 when it is: a read during a retry can see 1 (a CI
    // run did). Read, either way.
    assert!(
        matches!(admin["stats"]["ok"]["connectedState"].as_u64(), Some(0 | 1)),
        "{admin}"
    );
    assert!(
        admin["via"].as_str().unwrap().contains("port-forward"),
        "{admin}"
    );
    let checks = checks(&doc);
    assert_eq!(
        checks.get("no NetworkPolicy blocks egress to istiod (TCP 15012)"),
        Some(&"fail"),
        "{checks:?}"
    );
    assert_eq!(
        checks.get(format!("ConfigMap istio-ca-root-cert exists in {ns}").as_str()),
        Some(&"fail"),
        "{checks:?}"
    );
    assert_eq!(
        checks.get("the istio-token audience is istio-ca"),
        Some(&"pass"),
        "{checks:?}"
    );
    // Whatever istiod the shared cluster has, its endpoints were looked at.
    assert!(
        matches!(
            checks.get("istiod has ready endpoints"),
            Some(&("pass" | "fail"))
        ),
        "{checks:?}"
    );

    let run = mesh_doctor_within(&env, &["pod", "web-wait", "-n", &ns], LIMIT);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let text = &run.stdout;
    for want in [
        "waiting for istiod",
        "Error [MD0102]",
        "Envoy state        PRE_INITIALIZING",
        "/ready             503 PRE_INITIALIZING",
        "15021 ready        503 not ready",
        "15021 /healthz/ready: HTTP 503 (not ready)",
        "Checked causes",
        "no NetworkPolicy blocks egress to istiod (TCP 15012)",
        "NetworkPolicy deny-egress selects this pod for egress",
        "ADS cluster        xds-grpc -> 127.0.0.1:1",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    // Read between two attempts (0) or as Envoy starts the next one (1, before the refusal):
    // either way the proxy is not said to be connected.
    assert!(
        text.contains("control_plane.connected_state 0 (no xDS stream to istiod)")
            || text.contains("control_plane.connected_state 1 (not connected to istiod yet: "),
        "{text}"
    );
    assert!(!text.contains("(connected to istiod"), "{text}");
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn live_proxy_is_healthy_and_exits_0() {
    let env = testenv();
    let ns = new_namespace(&env, "pod-ok");
    let _envoy = healthy_pod(&env, &ns, "web");

    let run = mesh_doctor_within(&env, &["pod", "web", "-n", &ns, "-o", "json"], LIMIT);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "healthy", "{doc:#}");
    assert_eq!(codes(&doc), Vec::<&str>::new());
    assert_eq!(doc["level"], Value::Null);
    assert_eq!(doc["probe"]["admin"]["serverInfo"]["ok"]["state"], "LIVE");
    assert_eq!(doc["probe"]["admin"]["health"]["ok"]["status"], 200);

    let run = mesh_doctor_within(&env, &["pod", "web", "-n", &ns], LIMIT);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for want in [
        "✔ healthy",
        "Envoy state        LIVE",
        "/ready             200 LIVE",
        "15021 ready        200 ready",
        "nothing to do",
    ] {
        assert!(
            run.stdout.contains(want),
            "missing {want:?} in:\n{}",
            run.stdout
        );
    }
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn proxy_that_never_answers_is_a_timeout_finding_not_a_hang() {
    let env = testenv();
    let ns = new_namespace(&env, "pod-hang");
    let silent = silent_server();
    env.apply(&format!(
        "{}{}",
        port_forward_yaml(
            &ns,
            "web-hang",
            &[(15000, silent.port), (15021, silent.port)]
        ),
        pod_yaml(&ns, "web-hang", Status::NotReady)
    ));
    wait_for_status(&env, &ns, "web-hang", Status::NotReady);

    let run = mesh_doctor_within(
        &env,
        &[
            "pod",
            "web-hang",
            "-n",
            &ns,
            "--probe-timeout",
            "2s",
            "-o",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    assert_eq!(doc["verdict"]["kind"], "proxy-unreachable", "{doc:#}");
    assert_eq!(codes(&doc), ["MD0107"]);
    assert_eq!(
        doc["probe"]["admin"]["serverInfo"]["error"]["kind"], "timeout",
        "{doc:#}"
    );
    assert_eq!(doc["probe"]["admin"]["health"]["error"]["kind"], "timeout");
    let message = doc["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("web-hang"), "{message}");
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn analyze_adds_runtime_findings_for_flagged_injected_pods() {
    let env = testenv();
    let ns = new_namespace(&env, "pod-fleet");
    let _crash = crashing_pod(&env, &ns, "web-crash");
    let _wait = waiting_pod(&env, &ns, "web-wait");
    let _ok = healthy_pod(&env, &ns, "web");

    let run = mesh_doctor_within(&env, &["analyze", "-n", &ns, "-o", "json"], LIMIT);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let findings: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let got: BTreeSet<(String, String)> = findings
        .iter()
        .filter(|f| f["code"].as_str().is_some_and(|c| c.starts_with("MD01")))
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["origin"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("MD0101", format!("Pod {ns}/web-crash")),
        ("MD0102", format!("Pod {ns}/web-wait")),
        // Its ADS cluster points at 127.0.0.1:1, not at istiod.
        ("MD0109", format!("Pod {ns}/web-wait")),
    ]
    .into_iter()
    .map(|(c, o)| (c.to_string(), o))
    .collect();
    assert_eq!(got, want, "{}", run.stdout);

    // The log format, and --no-probe turns the runtime findings off.
    let run = mesh_doctor_within(&env, &["analyze", "-n", &ns], LIMIT);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains(&format!("Error [MD0101] (Pod {ns}/web-crash)")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("Error [MD0102] (Pod {ns}/web-wait)")),
        "{}",
        run.stdout
    );
    let run = mesh_doctor_within(&env, &["analyze", "-n", &ns, "--no-probe"], LIMIT);
    assert!(!run.stdout.contains("MD01"), "{}", run.stdout);
}
