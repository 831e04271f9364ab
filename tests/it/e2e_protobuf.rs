//! The built-in kinds mesh-doctor lists are read in protobuf (`src/formats/kube_protobuf.rs`): on
//! a real API server, every object of their lists decodes from protobuf to the object its JSON
//! decodes to. Both lists are asked for at one resourceVersion, so the kubelet writing a
//! status between them changes neither. On the test cluster (kwok's pods) and on the real node
//! (pods the kubelet runs, with Istio's injected sidecars and their statuses).

use crate::common;

use common::TestEnv;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use mesh_doctor::formats::kube_protobuf::{self, Root};
use mesh_doctor::formats::kube_protobuf_schema as schema;

/// GET `path` with `accept`, through curl (the kubeconfig's token and CA); a 4xx or 5xx fails.
fn get(env: &TestEnv, path: &str, accept: &str) -> Vec<u8> {
    fetch(env, path, accept, true)
}

fn fetch(env: &TestEnv, path: &str, accept: &str, fail: bool) -> Vec<u8> {
    let (server, ca, token) = common::credentials(&env.kubeconfig);
    let out = std::process::Command::new("curl")
        .args(fail.then_some("--fail"))
        .args(["-sS", "--cacert", &ca, "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .args(["-H", &format!("Accept: {accept}")])
        .arg(format!("{server}{path}"))
        .output()
        .expect("curl runs");
    assert!(
        out.status.success(),
        "GET {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The list at `path` in both encodings decodes to equal objects; returns them.
fn same_both_ways<T>(env: &TestEnv, path: &str, root: Root) -> Vec<T>
where
    T: serde::de::DeserializeOwned + PartialEq + serde::Serialize + Clone,
{
    let json = get(env, path, "application/json");
    let json = String::from_utf8(json).unwrap();
    let json = mesh_doctor::formats::json_members::cut_members(json, "managedFields");
    let from_json: kube::core::ObjectList<T> = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("GET {path}: {e}: {}", &json[..json.len().min(2000)]));
    let version = from_json.metadata.resource_version.clone().unwrap();
    let body = get(
        env,
        &format!("{path}?resourceVersion={version}&resourceVersionMatch=Exact"),
        "application/vnd.kubernetes.protobuf",
    );
    let listed = kube_protobuf::list(&body).unwrap();
    assert_eq!(listed.items.len(), from_json.items.len(), "{path}");
    for (item, expected) in listed.items.iter().zip(&from_json.items) {
        let decoded: T =
            kube_protobuf::decode(item, root).unwrap_or_else(|e| panic!("{path}: {e}"));
        if &decoded != expected {
            panic!(
                "{path}: protobuf gave\n{}\nJSON gave\n{}",
                serde_json::to_string_pretty(&decoded).unwrap(),
                serde_json::to_string_pretty(expected).unwrap()
            );
        }
    }
    from_json.items
}

/// Compares the lists of every kind listed in protobuf; returns the Pods as JSON gave them.
fn all_kinds(env: &TestEnv) -> Vec<Pod> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
    use k8s_openapi::api::batch::v1::CronJob;
    use k8s_openapi::api::core::v1::{Event, Node};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let pods = same_both_ways::<Pod>(env, "/api/v1/pods", schema::POD);
    same_both_ways::<Service>(env, "/api/v1/services", schema::SERVICE);
    same_both_ways::<Namespace>(env, "/api/v1/namespaces", schema::NAMESPACE);
    same_both_ways::<Node>(env, "/api/v1/nodes", schema::NODE);
    same_both_ways::<Event>(env, "/api/v1/events", schema::EVENT);
    same_both_ways::<Deployment>(env, "/apis/apps/v1/deployments", schema::DEPLOYMENT);
    same_both_ways::<StatefulSet>(env, "/apis/apps/v1/statefulsets", schema::STATEFUL_SET);
    same_both_ways::<DaemonSet>(env, "/apis/apps/v1/daemonsets", schema::DAEMON_SET);
    same_both_ways::<CronJob>(env, "/apis/batch/v1/cronjobs", schema::CRON_JOB);
    same_both_ways::<EndpointSlice>(
        env,
        "/apis/discovery.k8s.io/v1/endpointslices",
        schema::ENDPOINT_SLICE,
    );
    same_both_ways::<NetworkPolicy>(
        env,
        "/apis/networking.k8s.io/v1/networkpolicies",
        schema::NETWORK_POLICY,
    );
    same_both_ways::<PodDisruptionBudget>(
        env,
        "/apis/policy/v1/poddisruptionbudgets",
        schema::POD_DISRUPTION_BUDGET,
    );
    pods
}

#[test]
#[ignore = "needs the test cluster: testenv/up.sh"]
fn protobuf_lists_decode_as_json_on_the_test_cluster() {
    let env = common::testenv();
    all_kinds(&env);
    // An error's Status, which comes in protobuf too when protobuf is asked for.
    let path = "/api/v1/namespaces/mesh-doctor-none/pods/none";
    let json: kube::core::Status =
        serde_json::from_slice(&fetch(&env, path, "application/json", false)).unwrap();
    let body = fetch(&env, path, "application/vnd.kubernetes.protobuf", false);
    let raw = kube_protobuf::object(&body).unwrap();
    let protobuf: kube::core::Status = kube_protobuf::decode(raw, schema::STATUS).unwrap();
    assert_eq!(protobuf, json);
    assert_eq!((protobuf.code, protobuf.reason.as_str()), (404, "NotFound"));
}

#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn protobuf_lists_decode_as_json_on_the_real_node() {
    let env = common::real::real_env();
    // Pods the kubelet runs and writes the status of, with the sidecar istiod injected.
    let ns = env.namespace("real-protobuf", &["istio-injection=enabled"]);
    env.apply(&common::real::app_deployment(&ns, "web", 1));
    common::real::rollout(&env, &ns, "web");
    let pods = all_kinds(&env);
    let injected_and_running = pods.iter().any(|p| {
        p.metadata.namespace.as_deref() == Some(ns.as_str())
            && p.status
                .as_ref()
                .and_then(|s| s.init_container_statuses.as_ref())
                .is_some_and(|all| {
                    all.iter().any(|c| {
                        c.name == "istio-proxy"
                            && c.state.as_ref().is_some_and(|s| s.running.is_some())
                    })
                })
    });
    assert!(
        injected_and_running,
        "no running injected pod in {ns} among the {} listed",
        pods.len()
    );
    env.delete_namespaces(&[&ns]);
}
