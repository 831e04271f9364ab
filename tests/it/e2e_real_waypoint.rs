//! Waypoints and L7 policies of a captured ambient pod, on the real node with a real istiod
//! (`testenv/node/istio-up.sh`: ambient's control plane on, `PILOT_ENABLE_AMBIENT=true`, and the
//! Gateway API CRDs). What is REAL: istiod's gateway controller takes the Gateways of class
//! `istio-waypoint`, writes their `Accepted`/`Programmed` conditions and runs a Deployment of
//! the proxyv2 image per waypoint; that waypoint's Envoy (upstream Envoy, without Istio's
//! `metadata_discovery` bootstrap extension and waypoint filters) exits at start, so its pod is
//! never ready, for real; istiod writes the `ZtunnelAccepted` condition on an AuthorizationPolicy
//! with HTTP rules.
//!
//! STAND-INS (no ztunnel or CNI agent can run here, and no waypoint Envoy gets ready): pods of
//! the local app image (busybox httpd) in istio-system labelled `app=ztunnel` and
//! `k8s-app=istio-cni-node`, the `ambient.istio.io/redirection: enabled` annotation set by the
//! test (as in e2e_real_ambient), and, for the usable-waypoint case, a ready app-image pod
//! labelled `gateway.networking.k8s.io/gateway-name=waypoint` beside the real waypoint's
//! crashing one. mesh-doctor reads only their labels, node and readiness.
//!
//! Then policies on those Gateways: attached to a missing, a refused and a crashing waypoint
//! (MD0115, with istiod's own `WaypointAccepted` condition), namespace-wide config only the
//! waypoint could apply (MD0420), the captured pod labelled for a sidecar (MD0116), and a real
//! ingress Gateway whose ready proxy applies its policy though it is not Programmed (no
//! LoadBalancer here): no MD0115.
//!
//! One test, in order, because the stand-ins are cluster-wide.

use crate::common;

use std::time::Duration;

use common::real::{image, json, pod_doc, real_env};
use serde_json::Value;

const WAYPOINT_CHECK: &str = "the waypoints the pod uses carry traffic";
const POLICY_CHECK: &str =
    "ztunnel enforces the AuthorizationPolicies that select the pod as written";

fn check<'a>(doc: &'a Value, name: &str) -> (&'a str, &'a str) {
    let c = doc["checks"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name}: {doc:#}"));
    (c["status"].as_str().unwrap(), c["detail"].as_str().unwrap())
}

/// An app-image pod with these labels, ready once httpd answers.
fn app_pod(ns: &str, name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{{labels}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: {image}
    readinessProbe:
      httpGet: {{path: /, port: 8080}}
      periodSeconds: 1
",
        image = image("app")
    )
}

fn waypoint_gateway(ns: &str, name: &str, params: Option<&str>) -> String {
    let infrastructure = params
        .map(|p| {
            format!(
                "  infrastructure:\n    parametersRef: {{group: \"\", kind: ConfigMap, name: {p}}}\n"
            )
        })
        .unwrap_or_default();
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: {name}
  namespace: {ns}
  labels: {{istio.io/waypoint-for: service}}
spec:
  gatewayClassName: istio-waypoint
{infrastructure}  listeners:
  - name: mesh
    port: 15008
    protocol: HBONE
"
    )
}

fn condition(gateway: &Value, kind: &str) -> Option<String> {
    gateway["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .map(|c| c["status"].as_str().unwrap_or("").to_string())
}

fn codes(doc: &Value) -> Vec<String> {
    doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// `analyze -n NS -o json`: the (code, origin) of every finding.
fn analyze(env: &common::TestEnv, ns: &str) -> (Vec<(String, String)>, i32) {
    let run = env.mesh_doctor(&["analyze", "-n", ns, "--no-probe", "-o", "json"]);
    let items = json(&run);
    let mut got: Vec<(String, String)> = items
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| {
            Some((
                i.get("code")?.as_str()?.to_string(),
                i["origin"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect();
    got.sort();
    (got, run.code)
}

#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_waypoints_and_l7_policies() {
    let env = real_env();
    let classes = env.kubectl_run(&["get", "gatewayclass", "istio-waypoint"], None);
    assert_eq!(
        classes.code, 0,
        "istiod serves no GatewayClass istio-waypoint: run testenv/node/istio-up.sh (Gateway API CRDs, PILOT_ENABLE_AMBIENT=true): {}",
        classes.stderr
    );
    let _ = env.kubectl_run(
        &[
            "-n",
            "istio-system",
            "delete",
            "pod",
            "-l",
            "mesh-doctor-test=stand-in",
            "--wait=true",
        ],
        None,
    );
    for (name, label) in [
        ("ztunnel-standin", "app: ztunnel"),
        ("cni-standin", "k8s-app: istio-cni-node"),
    ] {
        env.apply(&app_pod(
            "istio-system",
            name,
            &format!("{label}, mesh-doctor-test: stand-in"),
        ));
    }
    let ns = env.namespace(
        "real-wp",
        &[
            "istio.io/dataplane-mode=ambient",
            "istio.io/use-waypoint=waypoint",
        ],
    );
    env.apply(&app_pod(&ns, "app", "app: app"));
    // The namespace's waypoint takes Service traffic (istio.io/waypoint-for: service, the
    // default): the pod uses it through this Service.
    env.apply(&format!(
        "apiVersion: v1
kind: Service
metadata: {{name: app, namespace: {ns}}}
spec:
  selector: {{app: app}}
  ports: [{{name: http, port: 80, targetPort: 8080}}]
"
    ));
    env.wait_ready("istio-system", "ztunnel-standin");
    env.wait_ready("istio-system", "cni-standin");
    env.wait_ready(&ns, "app");
    env.kubectl(&[
        "-n",
        &ns,
        "annotate",
        "pod",
        "app",
        "ambient.istio.io/redirection=enabled",
    ]);

    // 1. The namespace names a waypoint that does not exist.
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "waypoint-unavailable", "{doc:#}");
    assert_eq!(codes(&doc), ["MD0113"]);
    let (status, detail) = check(&doc, WAYPOINT_CHECK);
    assert_eq!(status, "fail");
    assert!(
        detail.contains(&format!(
            "(namespace label istio.io/use-waypoint=waypoint): no Gateway {ns}/waypoint exists"
        )),
        "{detail}"
    );
    let text = env.mesh_doctor(&["pod", "app", "-n", &ns]);
    assert!(
        text.stdout
            .contains("! captured by ambient; its waypoint carries no traffic"),
        "{}",
        text.stdout
    );
    let (found, code) = analyze(&env, &ns);
    assert_eq!(code, 79);
    assert!(
        found.contains(&("MD0113".to_string(), format!("Namespace {ns}"))),
        "{found:?}"
    );

    // 2. The real waypoint: istiod accepts and programs it, its Envoy never gets ready.
    env.apply(&waypoint_gateway(&ns, "waypoint", None));
    env.wait_for(
        "the waypoint Gateway Programmed and its pod created",
        Duration::from_secs(90),
        || {
            let gw = env.get_json(&["-n", &ns, "gateway", "waypoint"]);
            let pods = env.get_json(&[
                "-n",
                &ns,
                "pods",
                "-l",
                "gateway.networking.k8s.io/gateway-name=waypoint",
            ]);
            (condition(&gw, "Programmed").as_deref() == Some("True")
                && pods["items"].as_array().is_some_and(|a| !a.is_empty()))
            .then_some(())
        },
    );
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}");
    assert_eq!(doc["verdict"]["kind"], "waypoint-unavailable", "{doc:#}");
    let detail = check(&doc, WAYPOINT_CHECK).1;
    assert!(
        detail.contains(&format!("Gateway {ns}/waypoint has 1 pod(s), none ready")),
        "{detail}"
    );
    let status = env.mesh_doctor(&["proxy-status", "-n", &ns, "-o", "wide"]);
    let row = status
        .stdout
        .lines()
        .find(|l| l.starts_with("waypoint-"))
        .unwrap_or_else(|| panic!("no waypoint row:\n{}", status.stdout));
    assert!(row.contains(" waypoint "), "{row}");

    // 3. A waypoint istiod refuses: its parametersRef names no ConfigMap.
    env.apply(&waypoint_gateway(&ns, "broken", Some("no-such-params")));
    env.wait_for(
        "istiod's conditions on the broken Gateway",
        Duration::from_secs(60),
        || {
            let gw = env.get_json(&["-n", &ns, "gateway", "broken"]);
            condition(&gw, "Accepted").filter(|s| s == "False")
        },
    );
    env.kubectl(&[
        "label",
        "--overwrite",
        "namespace",
        &ns,
        "istio.io/use-waypoint=broken",
    ]);
    let (doc, _) = pod_doc(&env, &ns, "app");
    let detail = check(&doc, WAYPOINT_CHECK).1;
    assert!(
        detail.contains(&format!(
            "Gateway {ns}/broken is not Accepted (InvalidParameters: parametersRef ConfigMap {ns}/no-such-params does not exist)"
        )),
        "{detail}"
    );

    // 4. The real waypoint with a ready STAND-IN pod beside its crashing one: usable, exit 0.
    env.kubectl(&[
        "label",
        "--overwrite",
        "namespace",
        &ns,
        "istio.io/use-waypoint=waypoint",
    ]);
    env.apply(&app_pod(
        &ns,
        "waypoint-standin",
        "gateway.networking.k8s.io/gateway-name: waypoint, mesh-doctor-test: stand-in",
    ));
    env.wait_ready(&ns, "waypoint-standin");
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 0, "{doc:#}\n{}", run.stderr);
    assert_eq!(doc["verdict"]["kind"], "ambient-captured", "{doc:#}");
    assert_eq!(check(&doc, WAYPOINT_CHECK).0, "pass");

    // 5. An AuthorizationPolicy with an HTTP rule selecting the pod: istiod itself says
    // ztunnel drops it (ZtunnelAccepted), mesh-doctor says what that does. Exit 79.
    env.apply(&format!(
        "apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: get-only, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: app}}}}
  rules:
  - to:
    - operation: {{methods: [GET]}}
"
    ));
    env.wait_for(
        "istiod's ZtunnelAccepted condition",
        Duration::from_secs(60),
        || {
            let ap = env.get_json(&["-n", &ns, "authorizationpolicy", "get-only"]);
            condition(&ap, "ZtunnelAccepted")
        },
    );
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 79, "{doc:#}");
    assert_eq!(doc["verdict"]["kind"], "ambient-policy-gap", "{doc:#}");
    assert_eq!(codes(&doc), ["MD0403"]);
    assert!(
        doc["evidence"].to_string().contains(
            "ZtunnelAccepted True (UnsupportedValue): ztunnel does not support HTTP attributes (found: methods)"
        ),
        "{doc:#}"
    );
    let (found, _) = analyze(&env, &ns);
    assert!(
        found.contains(&(
            "MD0403".to_string(),
            format!("AuthorizationPolicy {ns}/get-only")
        )),
        "{found:?}"
    );

    // 6. Its negative twin: the same policy with only an L4 rule. Nothing, exit 0.
    env.kubectl(&["-n", &ns, "delete", "authorizationpolicy", "get-only"]);
    env.apply(&format!(
        "apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: from-ns, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: app}}}}
  rules:
  - from:
    - source: {{namespaces: [{ns}]}}
"
    ));
    let (doc, run) = pod_doc(&env, &ns, "app");
    assert_eq!(run.code, 0, "{doc:#}");
    assert_eq!(check(&doc, POLICY_CHECK).0, "pass", "{doc:#}");

    env.kubectl(&["-n", &ns, "delete", "authorizationpolicy", "from-ns"]);

    policies_on_gateways_and_namespace_wide_config(&env, &ns);

    env.kubectl(&[
        "-n",
        "istio-system",
        "delete",
        "pod",
        "-l",
        "mesh-doctor-test=stand-in",
    ]);
    env.delete_namespaces(&[&ns]);
}

/// `analyze -n NS -o json`: the (code, origin, message) of every finding.
fn findings(env: &common::TestEnv, ns: &str) -> Vec<(String, String, String)> {
    let run = env.mesh_doctor(&["analyze", "-n", ns, "--no-probe", "-o", "json"]);
    json(&run)
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| {
            Some((
                i.get("code")?.as_str()?.to_string(),
                i["origin"].as_str().unwrap_or("").to_string(),
                i["message"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

fn message_of<'a>(
    found: &'a [(String, String, String)],
    code: &str,
    origin: &str,
) -> Option<&'a str> {
    found
        .iter()
        .find(|(c, o, _)| c == code && o == origin)
        .map(|(_, _, m)| m.as_str())
}

fn deny_on(ns: &str, name: &str, gateway: &str) -> String {
    format!(
        "apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  targetRefs:
  - {{group: gateway.networking.k8s.io, kind: Gateway, name: {gateway}}}
  action: DENY
  rules:
  - to:
    - operation: {{paths: [/admin]}}
"
    )
}

/// MD0115 against the real Gateways' status (istiod's conditions, the waypoint's pods), MD0420
/// against the real waypoint, MD0116 against the real injection webhooks. The namespace names
/// the real waypoint, Programmed, whose own pod never gets ready; the ready STAND-IN pod beside
/// it makes it usable; Gateway `broken` is not Accepted (step 3).
fn policies_on_gateways_and_namespace_wide_config(env: &common::TestEnv, ns: &str) {
    env.apply(&deny_on(ns, "deny-on-waypoint", "waypoint"));
    env.apply(&deny_on(ns, "deny-on-broken", "broken"));
    env.apply(&deny_on(ns, "deny-on-typo", "waypiont"));
    env.apply(&format!(
        "apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {{name: jwt-all, namespace: {ns}}}
spec:
  jwtRules:
  - {{issuer: https://issuer.example.com, jwksUri: https://issuer.example.com/jwks.json}}
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {{name: logs-all, namespace: {ns}}}
spec:
  accessLogging:
  - providers: [{{name: envoy}}]
"
    ));
    // istiod's own word on the policy that names no Gateway: WaypointAccepted=False, which
    // Istio's condition analyzer (IST0171) repeats; MD0115 says what it means.
    let reason = env.wait_for(
        "istiod's WaypointAccepted condition on deny-on-typo",
        Duration::from_secs(60),
        || {
            let ap = env.get_json(&["-n", ns, "authorizationpolicy", "deny-on-typo"]);
            ap["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "WaypointAccepted")
                .map(|c| (c["status"].to_string(), c["reason"].to_string()))
        },
    );
    assert_eq!(
        reason,
        ("\"False\"".to_string(), "\"TargetNotFound\"".to_string())
    );
    let found = findings(env, ns);
    let origin = |name: &str| format!("AuthorizationPolicy {ns}/{name}");
    let denied = "nothing applies the policy, so requests its rules match are not denied (they would get 403 \"RBAC: access denied\")";
    assert_eq!(
        message_of(&found, "MD0115", &origin("deny-on-typo")),
        Some(
            format!(
                "AuthorizationPolicy {ns}/deny-on-typo targets Gateway {ns}/waypiont, which does not exist (no Gateway API Gateway of that name in namespace {ns}): {denied}. Correct the targetRef's name in AuthorizationPolicy {ns}/deny-on-typo, or create Gateway {ns}/waypiont."
            )
            .as_str()
        ),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|(c, o, _)| c == "IST0171" && *o == origin("deny-on-typo")),
        "{found:#?}"
    );
    let broken = message_of(&found, "MD0115", &origin("deny-on-broken")).unwrap_or_default();
    assert!(
        broken.contains(&format!(
            "targets Gateway {ns}/broken, which is not Accepted (InvalidParameters: parametersRef ConfigMap {ns}/no-such-params does not exist): {denied}. Fix the Gateway: kubectl describe gateway broken -n {ns}"
        )),
        "{found:#?}"
    );
    // The usable waypoint (the ready stand-in) applies the policy and the namespace's
    // Telemetry, never a namespace-wide RequestAuthentication.
    assert_eq!(
        message_of(&found, "MD0115", &origin("deny-on-waypoint")),
        None,
        "{found:#?}"
    );
    assert_eq!(
        message_of(&found, "MD0420", &format!("Telemetry {ns}/logs-all")),
        None,
        "{found:#?}"
    );
    let jwt = message_of(
        &found,
        "MD0420",
        &format!("RequestAuthentication {ns}/jwt-all"),
    )
    .unwrap_or_default();
    // Its workloads: the pod, and the stand-in (no proxy of its own; the real waypoint's pod
    // has one and is not a workload of the namespace).
    assert!(
        jwt.contains(&format!(
            "its workloads (Pod {ns}/app and Pod {ns}/waypoint-standin) have no sidecar, and a waypoint applies only the RequestAuthentications attached to it with targetRefs, never a namespace-wide one"
        )),
        "{found:#?}"
    );

    // Without the stand-in, the real waypoint has no ready pod: it applies nothing.
    env.kubectl(&["-n", ns, "delete", "pod", "waypoint-standin", "--wait=true"]);
    let found = findings(env, ns);
    let on_waypoint = message_of(&found, "MD0115", &origin("deny-on-waypoint")).unwrap_or_default();
    assert!(
        on_waypoint.contains(&format!("targets Gateway {ns}/waypoint, which has "))
            && on_waypoint.contains(&format!(
                "none ready (gateway.networking.k8s.io/gateway-name=waypoint): {denied}. Find why it has no ready pod: kubectl get pods -n {ns} -l gateway.networking.k8s.io/gateway-name=waypoint."
            )),
        "{found:#?}"
    );
    assert!(
        message_of(&found, "MD0420", &format!("Telemetry {ns}/logs-all"))
            .is_some_and(|m| m.contains("no waypoint that carries traffic serves the namespace")),
        "{found:#?}"
    );

    // The captured pod labelled for a sidecar after it was created: the real injection
    // webhook would give a new pod one. Said once (MD0116, no IST0103).
    env.kubectl(&[
        "-n",
        ns,
        "label",
        "pod",
        "app",
        "sidecar.istio.io/inject=true",
    ]);
    let found = findings(env, ns);
    let pod = format!("Pod {ns}/app");
    let asks = message_of(&found, "MD0116", &pod).unwrap_or_default();
    assert!(
        asks.starts_with(&format!(
            "Pod {ns}/app is captured by ambient (ambient.istio.io/redirection: enabled, no sidecar: ztunnel carries its traffic), but its pod label sidecar.istio.io/inject=true asks for a sidecar: a pod created now gets one from the injection webhook (istio-"
        )),
        "{found:#?}"
    );
    assert!(
        !found
            .iter()
            .any(|(c, o, _)| (c == "IST0103" || c == "MD0103") && *o == pod),
        "{found:#?}"
    );
    env.kubectl(&["-n", ns, "label", "pod", "app", "sidecar.istio.io/inject-"]);
    let found = findings(env, ns);
    assert_eq!(message_of(&found, "MD0116", &pod), None, "{found:#?}");

    // A real ingress Gateway (class istio): istiod runs its proxy, which gets ready, and leaves
    // it Programmed=False, as no LoadBalancer assigns its address here. Its ready proxy applies
    // the policy: no MD0115 (istiod's WaypointAccepted=False says only that it is no waypoint).
    env.apply(&format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: public, namespace: {ns}}}
spec:
  gatewayClassName: istio
  listeners:
  - {{name: http, port: 80, protocol: HTTP}}
"
    ));
    env.apply(&deny_on(ns, "deny-on-ingress", "public"));
    env.wait_for(
        "the ingress Gateway's pod ready",
        Duration::from_secs(120),
        || {
            let pods = env.get_json(&[
                "-n",
                ns,
                "pods",
                "-l",
                "gateway.networking.k8s.io/gateway-name=public",
            ]);
            pods["items"]
                .as_array()?
                .iter()
                .any(|p| common::real::condition(p, "Ready") == Some("True"))
                .then_some(())
        },
    );
    let gw = env.get_json(&["-n", ns, "gateway", "public"]);
    assert_eq!(
        condition(&gw, "Programmed").as_deref(),
        Some("False"),
        "{gw:#}"
    );
    // Its Envoy holds the policy's RBAC rule (the policy is applied, Programmed or not) and the
    // namespace-wide RequestAuthentication's issuer (a gateway's proxy applies it).
    let pods = env.get_json(&[
        "-n",
        ns,
        "pods",
        "-l",
        "gateway.networking.k8s.io/gateway-name=public",
    ]);
    let gateway_pod = pods["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let rule = format!("ns[{ns}]-policy[deny-on-ingress]-rule[0]");
    env.wait_for(
        "the policy's RBAC rule and the JWT issuer in the ingress gateway's Envoy",
        Duration::from_secs(60),
        || {
            let dump = env.kubectl_run(
                &[
                    "-n",
                    ns,
                    "exec",
                    &gateway_pod,
                    "--",
                    "pilot-agent",
                    "request",
                    "GET",
                    "config_dump",
                ],
                None,
            );
            (dump.stdout.contains(&rule) && dump.stdout.contains("https://issuer.example.com"))
                .then_some(())
        },
    );
    let found = findings(env, ns);
    assert_eq!(
        message_of(&found, "MD0115", &origin("deny-on-ingress")),
        None,
        "{found:#?}"
    );
    // The gateway's proxy also applies the namespace-wide RequestAuthentication and Telemetry.
    assert!(!found.iter().any(|(c, _, _)| c == "MD0420"), "{found:#?}");
}
