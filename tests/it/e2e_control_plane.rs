//! Control-plane checks against real kube-apiservers (the test cluster of `scripts/test-all.sh`,
//! and a second one for the multi-cluster check): MD0201-MD0205 from `analyze`, and `version`.
//!
//! The test cluster has no controller manager, so istiod's Deployment never gets pods, its
//! Service never gets EndpointSlices unless a test writes them, and the FailedCreate events the
//! ReplicaSet controller would write are written here, shaped like its own. Every object has a
//! unique name, and assertions look only at this test's objects: other tests share the cluster.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{TestEnv, testenv, unique};
use serde_json::Value;

/// An istiod Deployment of revision `rev` (one replica), its Service, and its injection
/// webhook (failurePolicy Fail) for namespaces labelled `istio.io/rev=<rev>`.
fn control_plane(rev: &str, cluster_id: &str, image_tag: &str) -> String {
    format!(
        "apiVersion: v1
kind: Namespace
metadata: {{name: istio-system}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: istiod-{rev}
  namespace: istio-system
  labels: {{app: istiod, istio.io/rev: {rev}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: istiod, istio.io/rev: {rev}}}
  template:
    metadata:
      labels: {{app: istiod, istio.io/rev: {rev}, sidecar.istio.io/inject: \"false\"}}
    spec:
      containers:
      - name: discovery
        image: istio/pilot:{image_tag}
        env:
        - {{name: CLUSTER_ID, value: {cluster_id}}}
---
apiVersion: v1
kind: Service
metadata:
  name: istiod-{rev}
  namespace: istio-system
spec:
  selector: {{app: istiod, istio.io/rev: {rev}}}
  ports:
  - {{name: https-webhook, port: 443, targetPort: 15017}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: istio-sidecar-injector-{rev}
  labels: {{app: sidecar-injector, istio.io/rev: {rev}}}
webhooks:
- name: rev.namespace.sidecar-injector.istio.io
  clientConfig:
    service: {{name: istiod-{rev}, namespace: istio-system, path: /inject, port: 443}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [pods]}}]
  namespaceSelector:
    matchExpressions:
    - {{key: istio.io/rev, operator: In, values: [{rev}]}}
    - {{key: istio-injection, operator: DoesNotExist}}
  objectSelector:
    matchExpressions:
    - {{key: sidecar.istio.io/inject, operator: NotIn, values: [\"false\"]}}
---
"
    )
}

fn namespace(name: &str, rev: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels: {{istio.io/rev: {rev}}}\n---\n"
    )
}

fn deployment(namespace: &str, name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - {{name: {name}, image: example/{name}:1}}\n---\n"
    )
}

/// A FailedCreate event as the ReplicaSet controller writes it when the injection webhook
/// cannot be called.
fn failed_create(namespace: &str, replica_set: &str, service: &str, count: u32) -> String {
    let now = jiff::Timestamp::now();
    let first = now - jiff::SignedDuration::from_mins(25);
    let last = now - jiff::SignedDuration::from_secs(40);
    let (first, last) = (
        first.strftime("%Y-%m-%dT%H:%M:%SZ"),
        last.strftime("%Y-%m-%dT%H:%M:%SZ"),
    );
    format!(
        "apiVersion: v1
kind: Event
metadata:
  name: {replica_set}.{suffix:x}
  namespace: {namespace}
type: Warning
reason: FailedCreate
involvedObject:
  apiVersion: apps/v1
  kind: ReplicaSet
  name: {replica_set}
  namespace: {namespace}
source:
  component: replicaset-controller
reportingComponent: replicaset-controller
message: 'Error creating: Internal error occurred: failed calling webhook \"namespace.sidecar-injector.istio.io\": failed to call webhook: Post \"https://{service}.istio-system.svc:443/inject?timeout=10s\": dial tcp 10.96.0.10:443: connect: connection refused'
count: {count}
firstTimestamp: \"{first}\"
lastTimestamp: \"{last}\"
---
",
        suffix = now.as_nanosecond() as u64
    )
}

/// The injection webhooks of one test's control plane (their names hold its revision),
/// deleted when the test ends, passed or not: a webhook left here would change what the
/// cluster says to the suites that run after it (e2e_workloads compares files with it).
struct WebhooksOf<'a> {
    env: &'a TestEnv,
    rev: String,
}

impl<'a> WebhooksOf<'a> {
    fn apply(env: &'a TestEnv, rev: &str, yaml: &str) -> Self {
        env.apply(yaml);
        WebhooksOf {
            env,
            rev: rev.to_string(),
        }
    }
}

impl Drop for WebhooksOf<'_> {
    fn drop(&mut self) {
        let names = self.env.kubectl_run(
            &["get", "mutatingwebhookconfigurations", "-o", "name"],
            None,
        );
        let mine: Vec<&str> = names
            .stdout
            .lines()
            .filter(|n| n.contains(&self.rev))
            .collect();
        if !mine.is_empty() {
            let mut args = vec!["delete", "--ignore-not-found", "--wait=false"];
            args.extend(mine);
            let _ = self.env.kubectl_run(&args, None);
        }
    }
}

/// (code, origin) of the findings of a JSON output whose resource's name contains `needle`.
fn findings_about(json: &str, needle: &str) -> Vec<(String, String)> {
    let all: Vec<Value> = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let mut out: Vec<(String, String)> = all
        .iter()
        .filter(|f| f["origin"].as_str().unwrap_or("").contains(needle))
        .map(|f| {
            (
                f["code"].as_str().unwrap_or("").to_string(),
                f["origin"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn has(list: &[(String, String)], code: &str, origin: &str) -> bool {
    list.iter().any(|(c, o)| c == code && o == origin)
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn fail_closed_webhook_with_one_istiod_no_endpoints_and_failed_creates() {
    let env = testenv();
    let rev = unique("cp");
    let shop = format!("{rev}-shop");
    let quiet = format!("{rev}-quiet");
    let mut yaml = control_plane(&rev, &unique("id"), "1.30.3");
    yaml.push_str(&namespace(&shop, &rev));
    yaml.push_str(&namespace(&quiet, &rev));
    yaml.push_str(&deployment(&shop, "web"));
    yaml.push_str(&failed_create(
        &shop,
        "web-5d8f7c9b6",
        &format!("istiod-{rev}"),
        12,
    ));
    yaml.push_str(&failed_create(
        &shop,
        "web-5d8f7c9b6",
        &format!("istiod-{rev}"),
        3,
    ));
    let _webhooks = WebhooksOf::apply(&env, &rev, &yaml);

    // Every namespace: the three control-plane findings, and exit 79.
    let run = env.mesh_doctor(&["analyze", "-A", "-o", "json"]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let mine = findings_about(&run.stdout, &rev);
    let istiod = format!("Deployment istio-system/istiod-{rev}");
    let webhook = format!("MutatingWebhookConfiguration istio-sidecar-injector-{rev}");
    let replica_set = format!("ReplicaSet {shop}/web-5d8f7c9b6");
    assert!(has(&mine, "MD0201", &istiod), "{mine:?}\n{}", run.stdout);
    assert!(has(&mine, "MD0202", &webhook), "{mine:?}");
    assert!(has(&mine, "MD0203", &replica_set), "{mine:?}");
    assert!(
        !mine.iter().any(|(c, _)| c == "MD0103" || c == "MD0204"),
        "{mine:?}"
    );

    // The log lines say what breaks and where to look.
    let run = env.mesh_doctor(&["analyze", "-A"]);
    assert_eq!(run.code, 79);
    let line = |code: &str, origin: &str| {
        run.stdout
            .lines()
            .find(|l| l.contains(&format!("[{code}] ({origin})")))
            .unwrap_or_else(|| panic!("no {code} for {origin}:\n{}", run.stdout))
            .to_string()
    };
    let ha = line("MD0201", &istiod);
    assert!(ha.starts_with("Warning [MD0201]"), "{ha}");
    assert!(
        ha.contains(&format!(
            "istiod revision \"{rev}\" runs 1 replica and no PodDisruptionBudget covers it"
        )),
        "{ha}"
    );
    assert!(
        ha.contains(&format!(
            "no pod can be created in namespaces {quiet} and {shop}."
        )),
        "{ha}"
    );
    let endpoints = line("MD0202", &webhook);
    assert!(endpoints.starts_with("Error [MD0202]"), "{endpoints}");
    assert!(
        endpoints.contains(&format!("call Service istio-system/istiod-{rev}, which has no ready endpoint (no EndpointSlice for it)")),
        "{endpoints}"
    );
    let events = line("MD0203", &replica_set);
    assert!(events.starts_with("Error [MD0203]"), "{events}");
    assert!(
        events.contains(&format!(
            "ReplicaSet {shop}/web-5d8f7c9b6 (of Deployment {shop}/web) cannot create pods"
        )),
        "{events}"
    );
    assert!(events.contains("could not be called: dial tcp 10.96.0.10:443: connect: connection refused (15 time(s), first at "), "{events}");
    assert!(
        events.contains(&format!("not Deployment {shop}/web")),
        "{events}"
    );

    // One namespace: its own findings plus the istiod and webhook it depends on.
    let run = env.mesh_doctor(&["analyze", "-n", &quiet, "-o", "json"]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let scoped = findings_about(&run.stdout, &rev);
    assert!(has(&scoped, "MD0202", &webhook), "{scoped:?}");
    assert!(has(&scoped, "MD0201", &istiod), "{scoped:?}");
    assert!(
        !scoped.iter().any(|(c, _)| c == "MD0203"),
        "the events are in {shop}: {scoped:?}"
    );

    // Healed: two replicas, a PodDisruptionBudget and a ready endpoint.
    env.kubectl(&[
        "-n",
        "istio-system",
        "scale",
        "deployment",
        &format!("istiod-{rev}"),
        "--replicas=2",
    ]);
    env.apply(&format!(
        "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: istiod-{rev}, namespace: istio-system}}
spec:
  minAvailable: 1
  selector:
    matchLabels: {{app: istiod, istio.io/rev: {rev}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: istiod-{rev}-a1b2c
  namespace: istio-system
  labels: {{kubernetes.io/service-name: istiod-{rev}}}
addressType: IPv4
endpoints:
- addresses: [10.244.7.7]
  conditions: {{ready: true}}
ports:
- {{name: https-webhook, port: 15017, protocol: TCP}}
"
    ));
    // The injector configurations other tests leave on the shared cluster overlap (IST0139,
    // cluster-scoped, so in every scope): this check is about the control plane's findings.
    let run = env.mesh_doctor(&["analyze", "-n", &quiet, "--suppress", "IST0139=*"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains(&rev), "{}", run.stdout);
    // The events stay until they expire: MD0203 still explains why web did not scale.
    let run = env.mesh_doctor(&["analyze", "-n", &shop, "-o", "json"]);
    assert_eq!(run.code, 79);
    assert_eq!(
        findings_about(&run.stdout, &rev),
        [("MD0203".to_string(), replica_set)]
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn namespace_asking_for_a_revision_no_webhook_serves() {
    let env = testenv();
    let rev = unique("cp");
    let tag = format!("{rev}-stable");
    let missing = format!("{rev}-missing");
    let blue = format!("{rev}-blue");
    let tagged = format!("{rev}-tagged");
    let mut yaml = control_plane(&rev, &unique("id"), "1.30.3");
    // A revision tag: `stable` points at the revision.
    yaml.push_str(&format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: istio-revision-tag-{tag}
  labels: {{app: sidecar-injector, istio.io/rev: {rev}, istio.io/tag: {tag}}}
webhooks:
- name: rev.namespace.sidecar-injector.istio.io
  clientConfig:
    service: {{name: istiod-{rev}, namespace: istio-system, path: /inject, port: 443}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  namespaceSelector:
    matchExpressions:
    - {{key: istio.io/rev, operator: In, values: [{tag}]}}
    - {{key: istio-injection, operator: DoesNotExist}}
---
"
    ));
    yaml.push_str(&namespace(&blue, &missing));
    yaml.push_str(&deployment(&blue, "api"));
    yaml.push_str(&namespace(&tagged, &tag));
    yaml.push_str(&deployment(&tagged, "api"));
    let _webhooks = WebhooksOf::apply(&env, &rev, &yaml);

    let run = env.mesh_doctor(&["analyze", "-n", &blue]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains(&format!("[MD0204] (Namespace {blue})")))
        .unwrap_or_else(|| panic!("no MD0204:\n{}", run.stdout));
    assert!(line.starts_with("Warning [MD0204]"), "{line}");
    assert!(line.contains(&format!("asks for Istio revision \"{missing}\" (label istio.io/rev={missing}), which no injection webhook serves")), "{line}");
    assert!(
        line.contains(&format!("{tag} (tag of {rev})")),
        "the served list names the tag: {line}"
    );
    assert!(line.contains(&format!("(Deployment {blue}/api)")), "{line}");
    assert!(
        !run.stdout.contains("MD0103"),
        "MD0204 replaces MD0103 here: {}",
        run.stdout
    );
    // A Warning: below an Error threshold.
    let run = env.mesh_doctor(&[
        "analyze",
        "-n",
        &blue,
        "--failure-threshold",
        "Error",
        "--analyzer",
        "injection",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    // The tagged namespace is served.
    let run = env.mesh_doctor(&["analyze", "-n", &tagged, "--analyzer", "injection"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    // `pod` says the same about a pod of that namespace.
    env.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: lonely, namespace: {blue}}}\nspec:\n  nodeName: kwok-node-0\n  containers:\n  - {{name: app, image: example/app:1}}\n"
    ));
    let run = env.mesh_doctor(&["pod", "lonely", "-n", &blue, "--no-probe", "-o", "json"]);
    let doc: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert_eq!(codes, ["MD0204"], "{}", run.stdout);
}

/// The state directory of the second test cluster: `MESH_DOCTOR_TESTENV_SECOND` (set by
/// scripts/test-all.sh), or an instance this test starts with `testenv/up.sh` (it shares the
/// first one's etcd, under its own `--etcd-prefix`, on other ports) and leaves running.
fn second_cluster(env: &TestEnv) -> PathBuf {
    if let Some(dir) = std::env::var_os("MESH_DOCTOR_TESTENV_SECOND") {
        return PathBuf::from(dir);
    }
    let first = env.dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = match first.strip_prefix("mesh-doctor-testenv-") {
        Some(n) => format!("{n}-second"),
        None => "second".to_string(),
    };
    let up = Path::new(env!("CARGO_MANIFEST_DIR")).join("testenv/up.sh");
    let out = Command::new(up)
        .env("TESTENV_NAME", &name)
        .env_remove("TESTENV_DIR")
        .env_remove("TESTENV_ETCD_PREFIX")
        .env_remove("TESTENV_PORT_OFFSET")
        .env_remove("TESTENV_APISERVER_PORT")
        .env_remove("TESTENV_KWOK_PORT")
        .stdin(Stdio::null())
        .output()
        .expect("testenv/up.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "starting the second cluster failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("export TESTENV_DIR="))
        .unwrap_or_else(|| panic!("no TESTENV_DIR in {stdout}"));
    eprintln!(
        "second test cluster {name} in {dir} (stop it with TESTENV_NAME={name} testenv/down.sh)"
    );
    PathBuf::from(dir.trim())
}

fn injected_pod(namespace: &str, name: &str, cluster_id: &str, tag: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  annotations: {{sidecar.istio.io/status: '{{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"revision\":\"default\"}}'}}
spec:
  nodeName: kwok-node-0
  containers:
  - {{name: app, image: example/app:1}}
  - name: istio-proxy
    image: istio/proxyv2:{tag}
    env:
    - {{name: ISTIO_META_CLUSTER_ID, value: {cluster_id}}}
---
"
    )
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn two_clusters_sharing_a_cluster_id() {
    let env = testenv();
    let second_dir = second_cluster(&env);
    let second = TestEnv {
        kubeconfig: second_dir.join("kubeconfig"),
        dir: second_dir,
        kubectl: env.kubectl.clone(),
    };
    let id = unique("mesh");
    let rev = unique("cp");
    let ns = format!("{rev}-app");
    let mut yaml = control_plane(&rev, &id, "1.30.3");
    yaml.push_str(&namespace(&ns, &rev));
    let _webhooks = WebhooksOf::apply(&env, &rev, &yaml);
    let mut yaml = control_plane(&rev, &id, "1.30.3");
    yaml.push_str(&namespace(&ns, &rev));
    yaml.push_str(&injected_pod(&ns, "web-1", &id, "1.30.3"));
    let _second_webhooks = WebhooksOf::apply(&second, &rev, &yaml);

    let tmp = tempfile::tempdir().unwrap();
    let east = format!("{rev}-east");
    let west = format!("{rev}-west");
    let alias = format!("{rev}-east-again");
    let kubeconfig = common::merged_kubeconfig(
        tmp.path(),
        &[
            (&east, &env.kubeconfig),
            (&west, &second.kubeconfig),
            (&alias, &env.kubeconfig),
        ],
    );
    let kubeconfig = kubeconfig.to_str().unwrap();

    let run = env.mesh_doctor(&[
        "analyze",
        "-A",
        "--kubeconfig",
        kubeconfig,
        "--context",
        &east,
        "--context",
        &west,
        "-o",
        "json",
    ]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let all: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let collisions: Vec<&Value> = all
        .iter()
        .filter(|f| {
            f["code"] == "MD0205"
                && f["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("\"{id}\""))
        })
        .collect();
    let clusters: Vec<&str> = collisions
        .iter()
        .map(|f| f["cluster"].as_str().unwrap())
        .collect();
    assert_eq!(clusters, [east.as_str(), west.as_str()], "{}", run.stdout);
    let message = collisions[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("is used by clusters {east} and {west}")),
        "{message}"
    );
    assert!(message.contains(&format!("{west}: istiod istio-system/istiod-{rev} env CLUSTER_ID, 1 injected pod(s) with ISTIO_META_CLUSTER_ID")), "{message}");
    assert_eq!(
        collisions[0]["origin"],
        format!("Deployment istio-system/istiod-{rev}")
    );
    // Findings of several clusters say which cluster they come from.
    assert!(
        all.iter().all(|f| f["cluster"].is_string()),
        "{}",
        run.stdout
    );

    let run = env.mesh_doctor(&[
        "analyze",
        "-A",
        "--kubeconfig",
        kubeconfig,
        "--context",
        &east,
        "--context",
        &west,
    ]);
    assert_eq!(run.code, 79);
    let line = run
        .stdout
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "Error [MD0205] [{west}] (Deployment istio-system/istiod-{rev})"
            ))
        })
        .unwrap_or_else(|| panic!("no MD0205 line for {west}:\n{}", run.stdout));
    assert!(
        line.contains(&format!(
            "CLUSTER_ID \"{id}\" is used by clusters {east} and {west}"
        )),
        "{line}"
    );

    // Two contexts of one cluster are not a collision.
    let run = env.mesh_doctor(&[
        "analyze",
        "-A",
        "--kubeconfig",
        kubeconfig,
        "--context",
        &east,
        "--context",
        &alias,
        "-o",
        "json",
        "--analyzer",
        "cluster-id",
    ]);
    assert!(!run.stdout.contains(&id), "{}", run.stdout);

    // version names both clusters.
    let run = env.mesh_doctor(&[
        "version",
        "--kubeconfig",
        kubeconfig,
        "--context",
        &east,
        "--context",
        &west,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains(&format!("control plane version [{east}]: ")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("data plane version [{west}]: ")),
        "{}",
        run.stdout
    );
}

#[test]
#[ignore = "needs the test cluster: scripts/test-all.sh"]
fn version_prints_client_control_plane_and_data_plane() {
    let env = testenv();
    let rev = unique("cp");
    // Tags unique to this test, so the counts are exact although other tests add proxies.
    let control = format!("0.0.1-{rev}");
    let data = format!("0.0.2-{rev}");
    let ns = format!("{rev}-v");
    let mut yaml = control_plane(&rev, &unique("id"), &control);
    yaml.push_str(&namespace(&ns, &rev));
    yaml.push_str(&injected_pod(&ns, "classic", "x", &data));
    yaml.push_str(&format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: native, namespace: {ns}, labels: {{istio.io/rev: {rev}}}}}
spec:
  nodeName: kwok-node-0
  initContainers:
  - {{name: istio-proxy, image: 'istio/proxyv2:{data}-distroless', restartPolicy: Always}}
  containers:
  - {{name: app, image: example/app:1}}
---
"
    ));
    let _webhooks = WebhooksOf::apply(&env, &rev, &yaml);

    let run = env.mesh_doctor(&["version"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with(&format!("client version: {}\n", env!("CARGO_PKG_VERSION"))),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("control plane version: "),
        "{}",
        run.stdout
    );
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains(&format!("istio-system/istiod-{rev}")))
        .unwrap_or_else(|| panic!("no istiod-{rev} row:\n{}", run.stdout));
    let cells: Vec<String> = row.split_whitespace().map(str::to_string).collect();
    let expected = [
        rev.clone(),
        format!("istio-system/istiod-{rev}"),
        control.clone(),
        "0/1".to_string(),
    ];
    assert_eq!(cells[..4], expected, "{row}");
    assert!(
        run.stdout.contains(&format!("{data} (2 proxies)")),
        "{}",
        run.stdout
    );

    let run = env.mesh_doctor(&["version", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["clientVersion"]["version"], env!("CARGO_PKG_VERSION"));
    let cluster = &doc["clusters"][0];
    let istiod = cluster["controlPlane"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["revision"] == rev.as_str())
        .unwrap();
    assert_eq!(istiod["version"], control.as_str());
    assert_eq!(istiod["replicas"], 1);
    let proxies = cluster["dataPlane"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["version"] == data.as_str())
        .unwrap();
    assert_eq!(proxies["proxies"], 2);
    assert_eq!(
        proxies["revisions"],
        serde_json::json!([rev, "default"]),
        "sorted"
    );

    // Client only: no cluster needed.
    let out = Command::new(common::binary())
        .args(["version", "--client"])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("client version: {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn version_without_a_reachable_cluster_prints_the_client_and_exits_69() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: gone, cluster: {{server: \"https://127.0.0.1:{port}\", insecure-skip-tls-verify: true}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: gone, context: {{cluster: gone, user: u}}}}]\ncurrent-context: gone\n"
        ),
    )
    .unwrap();
    let out = Command::new(common::binary())
        .args(["version", "--request-timeout", "5s"])
        .env("KUBECONFIG", &kubeconfig)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("client version: {}\n", env!("CARGO_PKG_VERSION"))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot reach the Kubernetes API server https://127.0.0.1:{port}"
        )),
        "{stderr}"
    );
}
