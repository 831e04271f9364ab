//! `pod NAME`'s traffic view against `istioctl x describe pod` on the same pod, on the real node
//! with a real Istio (see tests/it/common/real.rs). istioctl reads the DestinationRule and the
//! VirtualService from the pod's own Envoy and the rest from the cluster; mesh-doctor reads the
//! configuration. Both must state the same facts: the Service and its port (number, protocol,
//! the pod port it targets), the DestinationRule and the subsets the pod is in and not in, its TLS
//! mode, the VirtualService, the AuthorizationPolicy, the effective PeerAuthentication mode of
//! the workload and per port, and the PeerAuthentications that apply. istioctl's text is parsed
//! here, each fact compared with mesh-doctor's `-o json`.

use crate::common;

use common::real::{json, real_env, rollout};
use serde_json::Value;

/// The facts of `istioctl x describe pod`'s text, as (key, value) lines.
fn istioctl_facts(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = "";
    for line in text.lines() {
        let t = line.trim();
        let mut push = |k: &str, v: &str| out.push((k.to_string(), v.trim().to_string()));
        if let Some(v) = t.strip_prefix("Service: ") {
            push("service", v);
        } else if let Some(v) = t.strip_prefix("Port: ") {
            // "http 80/HTTP targets pod port 8080"
            push("port", v);
        } else if let Some(v) = t.strip_prefix("DestinationRule: ") {
            // `server for "server"`
            push("destination rule", v.split(" for ").next().unwrap_or(v));
        } else if let Some(v) = t.strip_prefix("Matching subsets: ") {
            push("subsets with pod", v);
        } else if let Some(v) = t.strip_prefix("(Non-matching subsets ") {
            push("subsets without pod", v.trim_end_matches(')'));
        } else if let Some(v) = t.strip_prefix("Traffic Policy TLS Mode: ") {
            push("tls", v);
        } else if let Some(v) = t.strip_prefix("VirtualService: ") {
            push("virtual service", v);
        } else if let Some(v) = t.strip_prefix("RBAC policies: ") {
            // ns[NS]-policy[NAME]-rule[0], ...
            for p in v.split(", ") {
                let name = p
                    .split("-policy[")
                    .nth(1)
                    .and_then(|r| r.split(']').next())
                    .unwrap_or(p);
                push("authorization policy", name);
            }
        } else if let Some(v) = t.strip_prefix("Workload mTLS mode: ") {
            push("workload mode", v);
        } else if t == "Port Level mTLS mode:" {
            section = "port level";
        } else if t == "Applied PeerAuthentication:" {
            section = "applied";
        } else if section == "port level" && t.contains(": ") {
            push("port mode", t);
        } else if section == "applied" && !t.is_empty() {
            for p in t.split(", ") {
                push("applied", p);
            }
            section = "";
        } else if !t.starts_with(char::is_numeric) {
            section = "";
        }
    }
    out.sort();
    out
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The same facts from `pod -o json`'s `traffic`, in istioctl's words.
fn mesh_doctor_facts(traffic: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let short = |v: &Value, kind: &str| {
        // "Kind ns/name" -> "name"
        text(v)
            .trim_start_matches(kind)
            .trim()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    for svc in traffic["services"].as_array().into_iter().flatten() {
        out.push(("service".into(), short(&svc["service"], "Service")));
        for p in svc["ports"].as_array().into_iter().flatten() {
            out.push((
                "port".into(),
                format!(
                    "{} {}/{} targets pod port {}",
                    text(&p["name"]),
                    p["port"],
                    text(&p["protocol"]),
                    p["podPort"]
                ),
            ));
        }
        let dr = &svc["destinationRule"];
        if dr.is_object() {
            out.push((
                "destination rule".into(),
                short(&dr["rule"], "DestinationRule"),
            ));
            let list = |k: &str| {
                dr[k]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|s| text(s).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if !list("subsetsWithPod").is_empty() {
                out.push(("subsets with pod".into(), list("subsetsWithPod")));
            }
            if !list("subsetsWithoutPod").is_empty() {
                out.push(("subsets without pod".into(), list("subsetsWithoutPod")));
            }
            if let Some(tls) = dr["tls"].as_str() {
                out.push(("tls".into(), tls.to_string()));
            }
        }
        for vs in svc["virtualServices"].as_array().into_iter().flatten() {
            out.push((
                "virtual service".into(),
                short(&vs["virtualService"], "VirtualService"),
            ));
        }
    }
    for p in traffic["authorizationPolicies"]
        .as_array()
        .into_iter()
        .flatten()
    {
        // "ALLOW ns/name (1 rule)"
        let name = text(p)
            .split(' ')
            .nth(1)
            .and_then(|n| n.rsplit('/').next())
            .unwrap_or_default();
        out.push(("authorization policy".into(), name.to_string()));
    }
    let pa = &traffic["peerAuthentication"];
    out.push((
        "workload mode".into(),
        text(&pa["workloadMode"]).to_string(),
    ));
    for m in pa["portModes"].as_array().into_iter().flatten() {
        out.push(("port mode".into(), text(m).to_string()));
    }
    for a in pa["applied"].as_array().into_iter().flatten() {
        // "PeerAuthentication ns/name" -> "name.ns", istioctl's way
        let (ns, name) = text(a)
            .trim_start_matches("PeerAuthentication ")
            .split_once('/')
            .unwrap_or_default();
        out.push(("applied".into(), format!("{name}.{ns}")));
    }
    out.sort();
    out
}

/// A server with two Services' worth of traffic config: STRICT namespace, a workload policy
/// with `portLevelMtls` PERMISSIVE on its pod port, a DestinationRule with a subset it is in and
/// one it is not, ISTIO_MUTUAL, a VirtualService splitting between them, and an ALLOW policy.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_pod_traffic_states_the_facts_of_istioctl_describe_pod() {
    let env = real_env();
    let ns = env.namespace("real-describe", &["istio-injection=enabled"]);
    let image = common::real::image("app");
    env.apply(&format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: server, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: server}}}}
  template:
    metadata: {{labels: {{app: server, version: v1}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: {image}
        ports: [{{containerPort: 8080, name: http}}]
---
apiVersion: v1
kind: Service
metadata: {{name: server, namespace: {ns}}}
spec:
  selector: {{app: server}}
  ports: [{{name: http, port: 80, targetPort: 8080}}]
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {{name: default, namespace: {ns}}}
spec: {{mtls: {{mode: STRICT}}}}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {{name: server-pa, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  portLevelMtls: {{\"8080\": {{mode: PERMISSIVE}}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: server, namespace: {ns}}}
spec:
  host: server
  trafficPolicy: {{tls: {{mode: ISTIO_MUTUAL}}}}
  subsets:
  - {{name: v1, labels: {{version: v1}}}}
  - {{name: v2, labels: {{version: v2}}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: server, namespace: {ns}}}
spec:
  hosts: [server]
  http:
  - match: [{{uri: {{prefix: /api}}}}]
    route:
    - {{destination: {{host: server, subset: v1}}, weight: 80}}
    - {{destination: {{host: server, subset: v2}}, weight: 20}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: allow-client, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: server}}}}
  action: ALLOW
  rules: [{{from: [{{source: {{principals: [cluster.local/ns/{ns}/sa/default]}}}}]}}]
"
    ));
    rollout(&env, &ns, "server");
    let pod = env
        .kubectl(&[
            "-n",
            &ns,
            "get",
            "pod",
            "-l",
            "app=server",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ])
        .trim()
        .to_string();

    // istioctl reads the rules from the pod's Envoy: wait until it has them.
    let mut theirs = Vec::new();
    let mut last = String::new();
    for _ in 0..30 {
        let run = env.istioctl(&["x", "describe", "pod", &pod, "-n", &ns]);
        last = format!("{}{}", run.stdout, run.stderr);
        theirs = istioctl_facts(&run.stdout);
        let has = |k: &str| theirs.iter().any(|(key, _)| key == k);
        if has("destination rule") && has("virtual service") && has("authorization policy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let run = env.mesh_doctor(&["pod", &pod, "-n", &ns, "-o", "json"]);
    let doc = json(&run);
    let ours = mesh_doctor_facts(&doc["traffic"]);
    assert_eq!(
        ours, theirs,
        "mesh-doctor's facts (left) and istioctl's (right) differ.\nistioctl:\n{last}\nmesh-doctor:\n{}",
        run.stdout
    );
    // The facts are the ones configured, not two empty lists that agree.
    for want in [
        ("subsets with pod", "v1"),
        ("subsets without pod", "v2"),
        ("tls", "ISTIO_MUTUAL"),
        ("workload mode", "STRICT"),
        ("port mode", "8080: PERMISSIVE"),
        ("port", "http 80/HTTP targets pod port 8080"),
    ] {
        assert!(
            ours.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} missing from {ours:?}"
        );
    }
    // And the coherence finding about these objects: the ALLOW policy needs an identity the
    // PERMISSIVE port does not guarantee.
    let codes: Vec<&str> = doc["traffic"]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(codes.contains(&"MD0406"), "{codes:?}\n{}", run.stdout);
    assert_eq!(run.code, 79, "a Warning about the traffic fails the run");

    // The text says the same, under Traffic.
    let text = env.mesh_doctor(&["pod", &pod, "-n", &ns]);
    for want in [
        "Traffic",
        "port http 80/HTTP -> pod port 8080, accepts PERMISSIVE",
        "the pod is in subset(s) v1; not in v2; TLS ISTIO_MUTUAL",
        "80% to host server subset v1 (this pod), 20% to host server subset v2 (not this pod)",
        "Warning [MD0406]",
    ] {
        assert!(
            text.stdout.contains(want),
            "{want:?} not in:\n{}",
            text.stdout
        );
    }
    env.delete_namespaces(&[&ns]);
}
