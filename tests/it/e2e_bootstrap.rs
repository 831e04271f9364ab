//! `bootstrap explain` against the test cluster of `scripts/test-all.sh` (a real kube-apiserver,
//! kwok as the kubelet) and a real Envoy 1.40 playing the pod's istio-proxy behind a kwok
//! PortForward: the node.id ingredients with the pod's real IP, name and namespace, the
//! comparison with the bootstrap the running Envoy loaded, and the checks that fail when the
//! root-certificate ConfigMap is missing, the token has the wrong audience, or a
//! bootstrapOverride ConfigMap holds a bootstrap Envoy refuses.
//!
//! The pods have the shape of Istio's own injector output
//! (tests/fixtures/istio/injection-golden/native-sidecar.yaml.injected: a native istio-proxy
//! sidecar with the injector's env, ISTIO_META_* and the istio-token projected volume).

use crate::common;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Run, TestEnv, testenv, unique};
use serde_json::{Value, json};

const NEEDS_CLUSTER: &str = "needs the test cluster: scripts/test-all.sh";
const GOLDEN: &str = "tests/fixtures/istio/injection-golden/native-sidecar.yaml.injected";
/// A copy of the reference capture envoy/bootstraps/A_sidecar_istiod_unreachable.json.
const BOOTSTRAP_A: &str = "tests/fixtures/envoy/bootstraps/A_sidecar_istiod_unreachable.json";
const ROOT_CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUbWVzaC1kb2N0b3ItdGVzdC1yb290MAoGCCqGSM49BAMC\n-----END CERTIFICATE-----\n";

fn manifest_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// The Envoy 1.40 binary: $MESH_DOCTOR_ENVOY, else the one testenv/build.sh links.
fn envoy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MESH_DOCTOR_ENVOY").filter(|p| !p.is_empty()) {
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
        "no Envoy: set MESH_DOCTOR_ENVOY to an Envoy 1.40 binary, or run testenv/build.sh"
    );
    cached
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// The injector's pod shape, for pod `name` in `namespace`, with the token audience given.
fn injected_pod(namespace: &str, name: &str, audience: &str, extra_env: &[(&str, &str)]) -> Value {
    let text = std::fs::read_to_string(manifest_path(GOLDEN)).expect("the injection golden file");
    let docs = mesh_doctor::formats::yaml::parse_stream(&text).expect("the golden file parses");
    let mut pod = docs[0].value.clone();
    pod["metadata"]["name"] = name.into();
    pod["metadata"]["namespace"] = namespace.into();
    pod["spec"]["nodeName"] = "kwok-node-0".into();
    // A projected token needs a service account (the test cluster has no controller to make
    // one; pods are admitted without it).
    pod["spec"]["serviceAccountName"] = "default".into();
    pod.as_object_mut().unwrap().remove("status");
    let proxy = pod["spec"]["initContainers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "istio-proxy")
        .expect("istio-proxy in the golden file");
    let env = proxy["env"].as_array_mut().unwrap();
    for var in env.iter_mut() {
        if var["name"] == "ISTIO_META_OWNER" {
            var["value"] =
                format!("kubernetes://apis/v1/namespaces/{namespace}/pods/{name}").into();
        }
    }
    for (k, v) in extra_env {
        env.push(json!({"name": k, "value": v}));
    }
    for volume in pod["spec"]["volumes"].as_array_mut().unwrap() {
        if volume["name"] == "istio-token" {
            volume["projected"]["sources"][0]["serviceAccountToken"]["audience"] = audience.into();
        }
    }
    pod
}

/// The proxy's ISTIO_META_* variables with literal values, as pilot-agent puts them in
/// node.metadata.
fn literal_metadata(pod: &Value) -> serde_json::Map<String, Value> {
    let proxy = pod["spec"]["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "istio-proxy")
        .unwrap();
    let mut out = serde_json::Map::new();
    for var in proxy["env"].as_array().unwrap() {
        let name = var["name"].as_str().unwrap();
        if let (Some(key), Some(value)) = (name.strip_prefix("ISTIO_META_"), var["value"].as_str())
        {
            out.insert(key.to_string(), value.into());
        }
    }
    out
}

fn wait_for_pod_ip(env: &TestEnv, namespace: &str, pod: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ip = env.kubectl(&[
            "get",
            "pod",
            pod,
            "-n",
            namespace,
            "-o",
            "jsonpath={.status.podIP}",
        ]);
        if !ip.is_empty() {
            return ip;
        }
        assert!(
            Instant::now() < deadline,
            "kwok gave {namespace}/{pod} no IP"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An Envoy started by a test, killed (by its own handle) when the test ends.
struct Envoy {
    child: Child,
    dir: tempfile::TempDir,
    admin: u16,
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Envoy {
    /// Bootstrap A (a sidecar whose istiod is unreachable) with this node and free ports.
    fn start(node: Value) -> Envoy {
        let text = std::fs::read_to_string(manifest_path(BOOTSTRAP_A)).unwrap();
        let mut b: Value = serde_json::from_str(&text).unwrap();
        b["node"] = node;
        let admin = free_port();
        b["admin"]["address"]["socket_address"]["port_value"] = admin.into();
        for listener in b["static_resources"]["listeners"].as_array_mut().unwrap() {
            listener["address"]["socket_address"]["port_value"] = free_port().into();
        }
        for cluster in b["static_resources"]["clusters"].as_array_mut().unwrap() {
            if cluster["name"] == "xds-grpc" {
                // Nothing listens there: istiod is unreachable, Envoy stays PRE_INITIALIZING.
                cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
                    ["socket_address"]["port_value"] = free_port().into();
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bootstrap.json");
        std::fs::write(&config, serde_json::to_vec(&b).unwrap()).unwrap();
        let child = Command::new(envoy_binary())
            .arg("-c")
            .arg(&config)
            .args(["--disable-hot-restart", "--log-level", "warning"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("stderr.txt")).unwrap())
            .spawn()
            .expect("envoy starts");
        let mut envoy = Envoy { child, dir, admin };
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", admin)).is_err() {
            if let Ok(Some(status)) = envoy.child.try_wait() {
                panic!("envoy exited ({status}):\n{}", envoy.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "envoy's admin never listened:\n{}",
                envoy.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        envoy
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.txt")).unwrap_or_default()
    }
}

/// The row of a text table whose first column is `name`, as its columns.
fn row<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name}  ")))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{stdout}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// The live bootstrap table and what follows it.
fn live_section(stdout: &str) -> &str {
    let start = stdout
        .find("live bootstrap (")
        .unwrap_or_else(|| panic!("no live bootstrap table in:\n{stdout}"));
    &stdout[start..]
}

fn explain(env: &TestEnv, namespace: &str, pod: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "bootstrap",
        "explain",
        pod,
        "-n",
        namespace,
        "--probe-timeout",
        "5s",
    ];
    args.extend_from_slice(extra);
    env.mesh_doctor(&args)
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn explains_a_pod_and_matches_its_running_envoy() {
    let _ = NEEDS_CLUSTER;
    let env = testenv();
    let ns = unique("bx");
    let name = "web-0";
    let pod = injected_pod(&ns, name, "istio-ca", &[]);
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: istio-ca-root-cert, namespace: {ns}}}\n\
         data:\n  root-cert.pem: {}\n---\n{}\n",
        serde_json::to_string(ROOT_CERT).unwrap(),
        serde_json::to_string(&pod).unwrap()
    ));
    let ip = wait_for_pod_ip(&env, &ns, name);

    // The sidecar's Envoy, with the node pilot-agent writes for this pod.
    let node_id = format!("sidecar~{ip}~{name}.{ns}~{ns}.svc.cluster.local");
    let mut metadata = literal_metadata(&pod);
    metadata.insert("NAMESPACE".into(), ns.clone().into());
    metadata.insert("NAME".into(), name.into());
    metadata.insert("NODE_NAME".into(), "kwok-node-0".into());
    metadata.insert("ISTIO_VERSION".into(), "1.31.0".into());
    let envoy = Envoy::start(json!({
        "id": node_id,
        "cluster": format!("hello.{ns}"),
        "metadata": metadata,
    }));
    env.apply(&format!(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: PortForward\nmetadata: {{name: {name}, namespace: {ns}}}\n\
         spec:\n  forwards:\n  - ports: [15000]\n    target: {{address: 127.0.0.1, port: {}}}\n",
        envoy.admin
    ));

    let run = explain(&env, &ns, name, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let out = &run.stdout;
    assert!(out.contains(&format!("node.id {node_id}\n")), "{out}");
    assert_eq!(
        row(out, "pod IP"),
        [
            "pod IP",
            ip.as_str(),
            "env INSTANCE_IP from status.podIP",
            "ok: an IP address"
        ]
    );
    assert_eq!(
        row(out, "pod name"),
        [
            "pod name",
            name,
            "env POD_NAME from metadata.name",
            "ok: the pod's name"
        ]
    );
    assert_eq!(
        row(out, "namespace"),
        [
            "namespace",
            ns.as_str(),
            "env POD_NAMESPACE from metadata.namespace",
            "ok: the pod's namespace"
        ]
    );
    let domain = format!("{ns}.svc.cluster.local");
    assert_eq!(
        row(out, "domain"),
        [
            "domain",
            domain.as_str(),
            "--domain $(POD_NAMESPACE).svc.cluster.local",
            "ok: <namespace>.svc.<cluster domain>"
        ]
    );
    assert_eq!(row(out, "proxy type")[1], "sidecar");
    assert_eq!(row(out, "metadata.CLUSTER_ID")[3], "ok: set");
    assert_eq!(row(out, "istio-token")[3], "ok: audience istio-ca");
    assert_eq!(
        row(out, "root certificate")[3],
        "ok: present, with root-cert.pem"
    );

    // The live bootstrap, read through the port-forward, has the same node.
    assert!(
        out.contains("live bootstrap (/config_dump through port-forward"),
        "{out}\n{}",
        envoy.stderr()
    );
    assert_eq!(
        row(live_section(out), "node.id"),
        ["node.id", node_id.as_str(), node_id.as_str(), "match"]
    );
    let live = live_section(out);
    let cluster = format!("hello.{ns}");
    assert_eq!(
        row(live, "node.cluster"),
        ["node.cluster", cluster.as_str(), cluster.as_str(), "match"]
    );
    assert_eq!(
        row(live, "metadata.CLUSTER_ID"),
        ["metadata.CLUSTER_ID", "Kubernetes", "Kubernetes", "match"]
    );
    assert_eq!(row(live, "ADS cluster").last(), Some(&"match"));
    // The one real difference: the test's Envoy has its admin on a free port, not 15000.
    let admin = envoy.admin.to_string();
    assert_eq!(
        row(live, "admin port"),
        ["admin port", "15000", admin.as_str(), "differs"]
    );
    assert!(
        run.stderr
            .contains("0 error(s), 0 warning(s), 1 live difference(s)"),
        "{}",
        run.stderr
    );

    // The same as JSON.
    let run = explain(&env, &ns, name, &["-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["passed"], true);
    assert_eq!(doc["podIp"], ip.as_str());
    assert_eq!(doc["nodeId"], node_id.as_str());
    assert_eq!(doc["live"]["available"], true);
    let live = |field: &str| {
        doc["live"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == field)
            .cloned()
            .unwrap_or_else(|| panic!("no live field {field}"))
    };
    assert_eq!(live("node.id")["live"], node_id.as_str());
    assert_eq!(live("node.id")["matches"], true);
    assert_eq!(live("metadata.POD_PORTS")["matches"], true);
    assert_eq!(live("admin port")["matches"], false);
    let ingredient = |name: &str| {
        doc["ingredients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(ingredient("pod IP")["value"], ip.as_str());
    assert_eq!(ingredient("pod IP")["group"], "node-id");
    assert_eq!(ingredient("pod IP")["status"], "ok");
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn a_missing_root_cert_and_a_wrong_audience_fail() {
    let env = testenv();
    let ns = unique("bx");
    let name = "web-0";
    let pod = injected_pod(&ns, name, "kubernetes.default.svc", &[]);
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n{}\n",
        serde_json::to_string(&pod).unwrap()
    ));
    let ip = wait_for_pod_ip(&env, &ns, name);

    let run = explain(&env, &ns, name, &[]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let out = &run.stdout;
    assert_eq!(row(out, "pod IP")[1], ip);
    assert_eq!(
        row(out, "root certificate")[3],
        "error: ConfigMap not found"
    );
    assert_eq!(
        row(out, "istio-token")[3],
        "error: audience is not istio-ca"
    );
    assert!(
        row(out, "istio-token")[1].contains("\"kubernetes.default.svc\""),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "error root certificate: istio-ca-root-cert does not exist in {ns}"
        )),
        "{out}"
    );
    assert!(
        out.contains("error istio-token: the token's audience is \"kubernetes.default.svc\", istiod expects istio-ca"),
        "{out}"
    );
    // No Envoy answers for this pod: said, not fatal.
    assert!(out.contains("live bootstrap: not available ("), "{out}");
    assert!(run.stderr.contains("2 error(s)"), "{}", run.stderr);

    let run = explain(&env, &ns, name, &["-o", "json"]);
    assert_eq!(run.code, 79);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["passed"], false);
    assert_eq!(doc["live"]["available"], false);
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn a_bootstrap_override_envoy_refuses_is_an_error_with_its_line() {
    let env = testenv();
    let ns = unique("bx");
    let name = "web-0";
    let mut pod = injected_pod(
        &ns,
        name,
        "istio-ca",
        &[(
            "ISTIO_BOOTSTRAP_OVERRIDE",
            "/etc/istio/custom-bootstrap/custom_bootstrap.json",
        )],
    );
    pod["metadata"]["annotations"]["sidecar.istio.io/bootstrapOverride"] =
        "custom-bootstrap".into();
    // A second xds-grpc: Envoy appends the override's clusters to pilot-agent's, then refuses
    // the duplicate.
    let custom = "static_resources:\n  clusters:\n  - name: xds-grpc\n    type: STATIC\n    connect_timeout: 1s\n";
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: istio-ca-root-cert, namespace: {ns}}}\n\
         data:\n  root-cert.pem: {}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: custom-bootstrap, namespace: {ns}}}\n\
         data:\n  custom_bootstrap.json: {}\n---\n{}\n",
        serde_json::to_string(ROOT_CERT).unwrap(),
        serde_json::to_string(custom).unwrap(),
        serde_json::to_string(&pod).unwrap()
    ));
    wait_for_pod_ip(&env, &ns, name);

    let run = explain(&env, &ns, name, &[]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let out = &run.stdout;
    let override_row = row(out, "bootstrapOverride");
    assert_eq!(
        override_row[1],
        format!("ConfigMap {ns}/custom-bootstrap, key custom_bootstrap.json")
    );
    assert_eq!(override_row[3], "error: 1 error(s), 0 warning(s)");
    assert!(
        out.contains("error [MD0302] custom_bootstrap.json:3 static_resources.clusters[0].name"),
        "{out}"
    );

    let run = explain(&env, &ns, name, &["-o", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let problem = &doc["overrideProblems"][0];
    assert_eq!(problem["code"], "MD0302");
    assert_eq!(problem["line"], 3);
    assert_eq!(problem["status"], "error");
}
