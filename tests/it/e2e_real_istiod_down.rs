//! istiod scaled to zero on the real node (see tests/it/common/real.rs). One test, because it
//! stops the control plane that the other real tests use; it brings istiod back when it ends,
//! also when it fails.
//!
//! What really happens then: the injection webhook fails closed, so the ReplicaSet controller
//! records FailedCreate events naming the webhook (MD0202/MD0203); pods already running keep
//! running; and a namespace created meanwhile gets no `istio-ca-root-cert`, so a sidecar pod
//! there stays in ContainerCreating until istiod is back.

use crate::common;

use std::time::Duration;

use common::TestEnv;
use common::real::{app_deployment, condition, container_status, real_env};
use serde_json::Value;

struct IstiodBack<'a>(&'a TestEnv);

impl Drop for IstiodBack<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl_run(
            &[
                "-n",
                "istio-system",
                "scale",
                "deploy/istiod",
                "--replicas=1",
            ],
            None,
        );
        let _ = self.0.kubectl_run(
            &[
                "-n",
                "istio-system",
                "rollout",
                "status",
                "deploy/istiod",
                "--timeout=180s",
            ],
            None,
        );
    }
}

fn json(run: &common::Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", run.stdout, run.stderr))
}

fn findings(doc: &Value) -> Vec<(String, String)> {
    doc.as_array()
        .unwrap_or_else(|| panic!("analyze -o json is a list: {doc:#}"))
        .iter()
        .map(|f| (f["code"].as_str().unwrap().to_string(), f.to_string()))
        .collect()
}

#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_istiod_scaled_to_zero() {
    let env = real_env();
    let ns = env.namespace("real-down", &["istio-injection=enabled"]);
    env.apply(&app_deployment(&ns, "web", 1));
    env.kubectl(&[
        "-n",
        &ns,
        "rollout",
        "status",
        "deploy/web",
        "--timeout=180s",
    ]);
    let running =
        env.get_json(&["pods", "-n", &ns, "-l", "app=web"])["items"][0]["metadata"]["name"]
            .as_str()
            .unwrap()
            .to_string();

    // A pod injected offline by istioctl kube-inject (it asks the running istiod for the
    // template), for a namespace that will be created while istiod is down.
    let late = common::unique("real-nocert");
    let pod_yaml = common::real::app_pod(&late, "nocert", &[]);
    let file = env.dir.join(format!("{late}-pod.yaml"));
    std::fs::write(&file, &pod_yaml).unwrap();
    let injected = env.istioctl(&["kube-inject", "-f", file.to_str().unwrap()]);
    assert_eq!(injected.code, 0, "{}", injected.stderr);
    assert!(
        injected.stdout.contains("istio-proxy"),
        "{}",
        injected.stdout
    );

    let _back = IstiodBack(&env);
    env.kubectl(&[
        "-n",
        "istio-system",
        "scale",
        "deploy/istiod",
        "--replicas=0",
    ]);
    env.wait_for("istiod pods gone", Duration::from_secs(120), || {
        let pods = env.get_json(&["pods", "-n", "istio-system", "-l", "app=istiod"]);
        pods["items"].as_array().unwrap().is_empty().then_some(())
    });

    // A new namespace meanwhile: nobody writes istio-ca-root-cert into it, and the injected
    // pod stays in ContainerCreating: the kubelet cannot mount the certificate volume.
    env.kubectl(&["create", "namespace", &late]);
    env.apply(&injected.stdout);

    // The rollout: the webhook cannot be called, the ReplicaSet says so in FailedCreate events.
    env.kubectl(&["-n", &ns, "scale", "deploy/web", "--replicas=2"]);
    let event = env.wait_for("FailedCreate event", Duration::from_secs(120), || {
        let events = env.get_json(&[
            "events",
            "-n",
            &ns,
            "--field-selector",
            "reason=FailedCreate",
        ]);
        events["items"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e["message"].as_str().map(str::to_string))
    });
    assert!(event.contains("sidecar-injector.istio.io"), "{event}");

    let run = env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let doc = json(&run);
    let found = findings(&doc);
    assert!(found.iter().any(|(c, _)| c == "MD0202"), "{found:#?}");
    let md0203 = found
        .iter()
        .find(|(c, _)| c == "MD0203")
        .unwrap_or_else(|| panic!("no MD0203: {found:#?}"));
    assert!(md0203.1.contains("web"), "{}", md0203.1);

    // The pod that was running keeps running with its sidecar.
    let pod = env.pod(&ns, &running);
    assert_eq!(
        condition(&pod, "Ready"),
        Some("True"),
        "{:#}",
        pod["status"]
    );
    assert_eq!(
        container_status(&pod, "istio-proxy").unwrap()["ready"],
        true
    );

    // The pod without its root certificate.
    let stuck = env.wait_pod(
        &late,
        "nocert",
        "ContainerCreating",
        Duration::from_secs(60),
        |p| p["status"]["phase"] == "Pending",
    );
    std::thread::sleep(Duration::from_secs(3));
    let events = env.kubectl(&["get", "events", "-n", &late]);
    assert!(events.contains("istio-ca-root-cert"), "{events}");
    let run = env.mesh_doctor(&["pod", "nocert", "-n", &late, "-o", "json"]);
    let doc = json(&run);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    assert!(
        doc.to_string().contains("istio-ca-root-cert"),
        "{doc:#}\n{:#}",
        stuck["status"]
    );

    // istiod back: it writes the certificate, and the stuck pod starts.
    drop(_back);
    env.wait_ready(&late, "nocert");
    env.delete_namespaces(&[&ns, &late]);
}
