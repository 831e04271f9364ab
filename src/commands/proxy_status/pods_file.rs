//! `--pods-file`: the pods as `kubectl get pods -A -o json` prints them, read one at a time into
//! a [`Pod`] that holds only what `proxy-status` looks at (the names, labels, annotations and
//! times of the metadata; the name, image, args, readiness probe and restart policy of each
//! container; the phase, reason, IP, conditions and container statuses), turned into its
//! [`PodFacts`] and dropped before the next pod is read. Everything else of a pod (env, volumes,
//! resources, tolerations, managed fields...) is skipped while parsing, never allocated: 10,000
//! pods are ~25 MB of JSON, and would be ~100 MB as whole k8s-openapi pods.
//!
//! What is kept is what [`super::status`] and `--probe` read; the test
//! `the_trimmed_pods_give_the_same_report` compares the facts and the report from trimmed pods
//! with those from whole pods over every pod fixture and pods that use every field read (and
//! `build_both` in the status tests does the same for every pod there). The errors are those of
//! `Vec<Pod>` (`the_errors_are_those_of_whole_pods`).

use std::collections::BTreeMap;

use k8s_openapi::Resource;
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Unexpected,
    Visitor,
};

use super::status::PodFacts;

/// Parses a pod list (`{"items": [...]}`) into the facts of each pod at `now`, one pod at a
/// time (no pod is kept whole); `Err` is serde's error, as for a `Vec<Pod>` field `items` (its
/// message names what is missing, e.g. "missing field `items`", with the line and column).
pub fn list(text: &str, now: jiff::Timestamp) -> serde_json::Result<Vec<PodFacts>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let facts = de.deserialize_struct("List", &["items"], List(now))?;
    de.end()?;
    Ok(facts)
}

/// `{"items": [...]}`, as `#[derive(Deserialize)] struct List { items: Vec<Pod> }` reads it.
struct List(jiff::Timestamp);

impl<'de> Visitor<'de> for List {
    type Value = Vec<PodFacts>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("struct List")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        seq.next_element_seed(Items(self.0))?
            .ok_or_else(|| A::Error::invalid_length(0, &"struct List with 1 element"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut items = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" {
                if items.is_some() {
                    return Err(A::Error::duplicate_field("items"));
                }
                items = Some(map.next_value_seed(Items(self.0))?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        items.ok_or_else(|| A::Error::missing_field("items"))
    }
}

/// The `items` array: each pod trimmed, judged and dropped before the next is read.
struct Items(jiff::Timestamp);

impl<'de> DeserializeSeed<'de> for Items {
    type Value = Vec<PodFacts>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items {
    type Value = Vec<PodFacts>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(pod) = seq.next_element::<TrimmedPod>()? {
            out.push(PodFacts::of(&pod.into_pod(), self.0));
        }
        Ok(out)
    }
}

/// Parses one pod.
pub fn one(text: &str) -> serde_json::Result<Pod> {
    serde_json::from_str::<TrimmedPod>(text).map(TrimmedPod::into_pod)
}

/// `apiVersion` and `kind`, when given, must be the Pod's (as k8s-openapi checks them).
fn check<'de, D: Deserializer<'de>>(d: D, want: &'static str) -> Result<IgnoredAny, D::Error> {
    let value = std::borrow::Cow::<'de, str>::deserialize(d)?;
    if value != want {
        return Err(D::Error::invalid_value(Unexpected::Str(&value), &want));
    }
    Ok(IgnoredAny)
}

fn api_version<'de, D: Deserializer<'de>>(d: D) -> Result<IgnoredAny, D::Error> {
    check(d, Pod::API_VERSION)
}

fn kind<'de, D: Deserializer<'de>>(d: D) -> Result<IgnoredAny, D::Error> {
    check(d, Pod::KIND)
}

#[derive(Deserialize)]
struct TrimmedPod {
    #[serde(rename = "apiVersion", default, deserialize_with = "api_version")]
    _api_version: IgnoredAny,
    #[serde(rename = "kind", default, deserialize_with = "kind")]
    _kind: IgnoredAny,
    #[serde(default)]
    metadata: Option<Meta>,
    #[serde(default)]
    spec: Option<Spec>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    creation_timestamp: Option<Time>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    containers: Option<Vec<TrimmedContainer>>,
    #[serde(default)]
    init_containers: Option<Vec<TrimmedContainer>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrimmedContainer {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    image: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    readiness_probe: Option<Probe>,
    #[serde(default)]
    restart_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(rename = "podIP", default)]
    pod_ip: Option<String>,
    #[serde(default)]
    conditions: Option<Vec<PodCondition>>,
    #[serde(default)]
    container_statuses: Option<Vec<ContainerStatus>>,
    #[serde(default)]
    init_container_statuses: Option<Vec<ContainerStatus>>,
}

impl TrimmedContainer {
    fn into_container(self) -> Container {
        Container {
            name: self.name.unwrap_or_default(),
            image: self.image,
            args: self.args,
            readiness_probe: self.readiness_probe,
            restart_policy: self.restart_policy,
            ..Container::default()
        }
    }
}

fn containers(list: Option<Vec<TrimmedContainer>>) -> Option<Vec<Container>> {
    list.map(|l| {
        l.into_iter()
            .map(TrimmedContainer::into_container)
            .collect()
    })
}

impl TrimmedPod {
    fn into_pod(self) -> Pod {
        let metadata = self
            .metadata
            .map_or_else(ObjectMeta::default, |m| ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                labels: m.labels,
                annotations: m.annotations,
                creation_timestamp: m.creation_timestamp,
                deletion_timestamp: m.deletion_timestamp,
                ..ObjectMeta::default()
            });
        Pod {
            metadata,
            spec: self.spec.map(|s| PodSpec {
                containers: containers(s.containers).unwrap_or_default(),
                init_containers: containers(s.init_containers),
                ..PodSpec::default()
            }),
            status: self.status.map(|s| PodStatus {
                phase: s.phase,
                reason: s.reason,
                pod_ip: s.pod_ip,
                conditions: s.conditions,
                container_statuses: s.container_statuses,
                init_container_statuses: s.init_container_statuses,
                ..PodStatus::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::proxy_status::status::{Inputs, IstiodAnswer, build};
    use serde_json::json;

    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/syncz/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    /// Pods that use every field `proxy-status` reads: native sidecars, init containers that
    /// block, readiness probes, a terminating pod, a gateway, revisions, an unscheduled pod.
    fn varied() -> String {
        let proxy = |extra: serde_json::Value| {
            let mut c = json!({"name": "istio-proxy", "image": "istio/proxyv2:1.30.3-distroless",
                "env": [{"name": "X", "value": "y"}], "ports": [{"containerPort": 15090}]});
            c.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            c
        };
        let running = json!({"name": "istio-proxy", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
            "started": true, "state": {"running": {"startedAt": "2026-11-29T15:49:30Z"}}});
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"metadata": {"name": "native", "namespace": "shop", "creationTimestamp": "2026-11-29T15:49:00Z",
                "annotations": {"istio.io/rev": "canary", "big": "x"}, "uid": "u1",
                "managedFields": [{"manager": "kubectl"}]},
             "spec": {"containers": [{"name": "app", "image": "nginx"}],
                "initContainers": [{"name": "istio-init", "image": "i"},
                    proxy(json!({"restartPolicy": "Always", "readinessProbe": {"initialDelaySeconds": 5, "periodSeconds": 2, "failureThreshold": 30, "httpGet": {"port": 15021}}}))],
                "volumes": [{"name": "v", "emptyDir": {}}], "tolerations": [{"key": "k"}]},
             "status": {"phase": "Running", "podIP": "10.0.0.1", "initContainerStatuses": [
                {"name": "istio-init", "ready": false, "restartCount": 0, "image": "i", "imageID": "", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                running.clone()],
                "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {"startedAt": "2026-11-29T15:49:30Z"}}}]}},
            {"metadata": {"name": "blocked", "namespace": "shop", "creationTimestamp": "2026-11-29T15:00:00Z", "labels": {"istio.io/rev": "default"}},
             "spec": {"containers": [{"name": "app"}, proxy(json!({}))], "initContainers": [{"name": "wait", "image": "busybox"}]},
             "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "wait", "ready": false, "restartCount": 3, "image": "b", "imageID": "",
                 "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}},
                 "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}},
            {"metadata": {"name": "unscheduled", "namespace": "shop", "creationTimestamp": "2026-11-29T15:00:00Z"},
             "spec": {"containers": [proxy(json!({}))]},
             "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available"}]}},
            {"metadata": {"name": "leaving", "namespace": "shop", "deletionTimestamp": "2026-11-29T15:49:00Z"},
             "spec": {"containers": [proxy(json!({}))]}, "status": {"phase": "Running"}},
            {"metadata": {"name": "done", "namespace": "shop"},
             "spec": {"containers": [proxy(json!({}))]}, "status": {"phase": "Failed", "reason": "Evicted"}},
            {"metadata": {"name": "gw", "namespace": "istio-system", "creationTimestamp": "2026-11-29T15:00:00Z"},
             "spec": {"containers": [proxy(json!({"args": ["proxy", "router"], "readinessProbe": {"periodSeconds": 1}}))]},
             "status": {"phase": "Running", "containerStatuses": [running]}},
            {"metadata": {"name": "no-proxy", "namespace": "shop"}, "spec": {"containers": [{"name": "app"}]}},
            {"metadata": {"name": "bare"}}
        ]})
        .to_string()
    }

    #[test]
    fn the_trimmed_pods_give_the_same_report() {
        let istiods: Vec<IstiodAnswer> =
            ["synced.json", "stale.json", "error.json", "waypoint.json"]
                .iter()
                .map(|name| IstiodAnswer {
                    name: name.to_string(),
                    version: Some("1.31.0".to_string()),
                    revision: Some("default".to_string()),
                    via: "test".to_string(),
                    syncz: crate::istio::syncz::parse(&fixture(name)).map_err(|e| e.to_string()),
                })
                .collect();
        for text in [fixture("pods.json"), fixture("pods-ambient.json"), varied()] {
            let whole: Vec<Pod> = serde_json::from_value(
                serde_json::from_str::<serde_json::Value>(&text).unwrap()["items"].clone(),
            )
            .unwrap();
            for now in [
                "2026-11-29T15:50:00Z",
                "2026-11-29T15:49:40Z",
                "2026-12-29T00:00:00Z",
            ] {
                let now: jiff::Timestamp = now.parse().unwrap();
                let facts: Vec<PodFacts> = whole.iter().map(|p| PodFacts::of(p, now)).collect();
                let trimmed = list(&text, now).unwrap();
                assert_eq!(trimmed, facts);
                for istiods in [&istiods[..], &istiods[..1], &[]] {
                    let inputs = |pods| Inputs {
                        istiods,
                        pods: Some(pods),
                        namespace: None,
                        no_istiod: None,
                    };
                    let a = build(&inputs(&facts));
                    let b = build(&inputs(&trimmed));
                    assert_eq!(a.rows, b.rows);
                    assert_eq!(a.istiods, b.istiods);
                }
            }
        }
    }

    #[test]
    fn the_errors_are_those_of_whole_pods() {
        #[derive(Deserialize, Debug)]
        struct Whole {
            #[allow(dead_code)]
            items: Vec<Pod>,
        }
        for text in [
            r#"{"kind": "List"}"#,
            r#"{"items": [{"kind": "Service"}]}"#,
            r#"{"items": [{"apiVersion": "v2", "kind": "Pod"}]}"#,
            r#"{"items": [{"metadata": {"name": 3}}]}"#,
            r#"{"items": [{"status": {"containerStatuses": [{"name": "a", "ready": "yes"}]}}]}"#,
            r#"{"items": [{"spec": {"containers": [{"name": "a", "args": "x"}]}}]}"#,
            r#"{"items": {}}"#,
            r#"[1, 2]"#,
            "{\"items\": [",
        ] {
            let whole = serde_json::from_str::<Whole>(text).unwrap_err().to_string();
            assert_eq!(
                list(text, jiff::Timestamp::UNIX_EPOCH)
                    .unwrap_err()
                    .to_string(),
                whole,
                "{text}"
            );
        }
        let e = one(r#"{"apiVersion": "v2"}"#).unwrap_err().to_string();
        assert_eq!(
            e,
            serde_json::from_str::<Pod>(r#"{"apiVersion": "v2"}"#)
                .unwrap_err()
                .to_string()
        );
        assert_eq!(one("{}").unwrap(), Pod::default());
        assert_eq!(
            one(r#"{"metadata": null, "spec": null}"#).unwrap(),
            Pod::default()
        );
    }
}
