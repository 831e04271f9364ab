//! `analyze` on ambient-mode manifests (issue 25), as a user runs it on files: waypoints named
//! by a Namespace, a Service and a pod (MD0113, MD0114), AuthorizationPolicies ztunnel does not
//! enforce as written (MD0403) or that only a missing waypoint would enforce (MD0404), a pod
//! whose own label names a waypoint for Services only (MD0113), and
//! their negative twins (an L4 policy, a Service-targeted policy with a waypoint); policies on
//! ServiceEntries (MD0404, tests/fixtures/ambient/service-entries.yaml); policies attached to a
//! Gateway that does not exist (MD0115), captured pods that ask for a sidecar (MD0116) and
//! namespace-wide objects no proxy applies (MD0420), each with its twins.

const WAYPOINTS: &str = "tests/fixtures/ambient/waypoints.yaml";

use crate::offline;
use offline::run;

#[test]
fn ambient_findings_on_files_with_their_lines() {
    let (stdout, stderr, code) = run(&["analyze", "-f", WAYPOINTS]);
    assert_eq!(code, 79, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "Warning [MD0113] (Pod amb/direct {WAYPOINTS}:144) Pod amb/direct uses waypoint amb/waypoint (pod label istio.io/use-waypoint=waypoint), but Gateway amb/waypoint takes service traffic (istio.io/waypoint-for: service), not a workload's own traffic (set istio.io/waypoint-for: workload or all on the Gateway): traffic to it does not go through a waypoint, so no L7 policy, routing or telemetry of the waypoint applies to it."
            ),
            format!(
                "Warning [MD0113] (Service amb/api {WAYPOINTS}:60) Service amb/api uses waypoint amb/api-waypoint (service label istio.io/use-waypoint=api-waypoint), but no Gateway amb/api-waypoint exists (create it with: istioctl waypoint apply -n amb --name api-waypoint): traffic to it does not go through a waypoint, so no L7 policy, routing or telemetry of the waypoint applies to it."
            ),
            format!(
                "Warning [MD0403] (AuthorizationPolicy amb/get-only {WAYPOINTS}:86) AuthorizationPolicy amb/get-only applies to ambient workload(s) Deployment amb/web, where ztunnel enforces it at L4: ztunnel does not see HTTP attributes (found: methods, paths): the rules of this ALLOW policy that use them never match, so it allows less than written. Enforce HTTP rules at a waypoint: give the workloads one (istio.io/use-waypoint) and attach the policy to it with targetRefs (kind Service or Gateway) instead of a selector."
            ),
            format!(
                "Warning [MD0404] (AuthorizationPolicy amb/db-l7 {WAYPOINTS}:129) AuthorizationPolicy amb/db-l7 targets Service amb/db, which opts out of waypoints (istio.io/use-waypoint=none): only a waypoint enforces a policy attached to a Service or ServiceEntry, so nothing enforces this one."
            ),
            format!(
                "Info [MD0114] (Namespace side {WAYPOINTS}:11) Namespace side has the label istio.io/use-waypoint=waypoint, but no workload of the namespace is in ambient mode (istio.io/dataplane-mode=ambient): the label has no effect."
            ),
        ],
        "{stdout}"
    );
    // The negative twins: namespace amb's waypoint exists (no status on files: not judged
    // further), the L4 policy l4-only and via-waypoint (targetRefs to web, whose namespace
    // names the waypoint) give nothing.
    assert!(!stdout.contains("Namespace amb "), "{stdout}");
    assert!(
        !stdout.contains("l4-only") && !stdout.contains("via-waypoint"),
        "{stdout}"
    );
}

#[test]
fn the_ambient_analyzer_can_be_chosen_and_listed() {
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        WAYPOINTS,
        "--analyzer",
        "ambient",
        "-o",
        "json",
    ]);
    assert_eq!(code, 79);
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let codes: Vec<&str> = items.iter().filter_map(|i| i["code"].as_str()).collect();
    assert_eq!(
        codes,
        ["MD0113", "MD0113", "MD0403", "MD0404", "MD0114"],
        "{stdout}"
    );
    let (list, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    assert!(
        list.contains("* ambient:\n    Ambient mode: waypoints")
            && list.contains("(MD0111, MD0112, MD0113, MD0114, MD0116, MD0403, MD0404)"),
        "{list}"
    );
}

const L7: &str = "tests/fixtures/ambient/l7.yaml";

#[test]
fn proxy_only_kinds_on_ambient_workloads_and_services_without_waypoint() {
    let (stdout, stderr, code) = run(&["analyze", "-f", L7]);
    assert_eq!(code, 79, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let selects = |kind: &str, name: &str, line: u32, skips: &str| {
        format!(
            "Warning [MD0412] ({kind} l7/{name} {L7}:{line}) {kind} l7/{name} selects ambient workload(s) Deployment l7/web, which have no proxy of their own: ztunnel carries their traffic at L4 and does not {skips}, so nothing applies it. Attach it to a waypoint with targetRefs (kind Service or Gateway) instead of a selector, and give the workloads a waypoint (istio.io/use-waypoint) if they have none."
        )
    };
    let without = |kind: &str, name: &str, line: u32, lost: &str| {
        format!(
            "Warning [MD0413] ({kind} l7/{name} {L7}:{line}) {kind} l7/{name} is for Service l7/web, which names no waypoint (istio.io/use-waypoint on it or its namespace): in ambient mode only a waypoint applies it, so {lost}. Give the Service a waypoint that carries its traffic (istioctl waypoint apply, then istio.io/use-waypoint on the Service or its namespace)."
        )
    };
    let routes = "requests from ambient clients do not take its routes (only clients with a sidecar apply them)";
    assert_eq!(
        lines,
        [
            selects("RequestAuthentication", "jwt-web", 85, "validate JWTs"),
            selects(
                "Telemetry",
                "logs-web",
                98,
                "apply Telemetry (HTTP metrics, access logs, tracing)"
            ),
            selects("WasmPlugin", "filter-web", 110, "run Wasm plugins"),
            without("HTTPRoute", "web-split", 150, routes),
            without(
                "Telemetry",
                "logs-web-service",
                120,
                "its telemetry is not produced"
            ),
            without("VirtualService", "web-retries", 135, routes),
        ],
        "{stdout}"
    );
    // The negative twins: Service api has a waypoint (jwt-api, api-retries), and jwt-shop
    // selects workloads with a sidecar.
    for name in ["jwt-api", "api-retries", "jwt-shop"] {
        assert!(!stdout.contains(name), "{name}: {stdout}");
    }
    let (list, _, _) = run(&["analyze", "--list-analyzers"]);
    assert!(
        list.contains("* ambient-l7:\n    Ambient mode: RequestAuthentications")
            && list.contains("(MD0115, MD0412, MD0413, MD0420)"),
        "{list}"
    );
}

#[test]
fn a_policy_on_a_service_entry_without_waypoint_is_md0404() {
    let file = "tests/fixtures/ambient/service-entries.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", file, "--analyzer", "ambient"]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        stdout.trim_end(),
        format!(
            "Warning [MD0404] (AuthorizationPolicy egress/payments-get-only {file}:36) AuthorizationPolicy egress/payments-get-only targets ServiceEntry egress/payments-api, which names no waypoint (istio.io/use-waypoint on it or its namespace): only a waypoint enforces a policy attached to a Service or ServiceEntry, so nothing enforces this one."
        ),
        "the ServiceEntry with a waypoint (maps-api) gives nothing"
    );
}

#[test]
fn a_policy_attached_to_a_gateway_that_does_not_exist_is_md0115() {
    let file = "tests/fixtures/ambient/gateway-targets.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", file, "--analyzer", "ambient-l7"]);
    assert_eq!(code, 79, "{stderr}");
    let missing = |kind: &str, policy: &str, line: u32, gateway: &str, effect: &str| {
        let ns = policy.split('/').next().unwrap();
        format!(
            "Warning [MD0115] ({kind} {policy} {file}:{line}) {kind} {policy} targets Gateway {gateway}, which does not exist (no Gateway API Gateway of that name in namespace {ns}): nothing applies the policy, so {effect}. Correct the targetRef's name in {kind} {policy}, or create Gateway {gateway}."
        )
    };
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            missing(
                "AuthorizationPolicy",
                "edge/deny-admin",
                23,
                "edge/pubilc",
                "requests its rules match are not denied (they would get 403 \"RBAC: access denied\")"
            ),
            missing(
                "RequestAuthentication",
                "edge/jwt-edge",
                40,
                "edge/internal",
                "a request with an invalid or expired JWT is not refused by it (401), and no request principal is taken from its tokens"
            ),
            missing(
                "Telemetry",
                "mesh/logs-waypoint",
                105,
                "mesh/waypiont",
                "its telemetry is not produced"
            ),
        ],
        "{stdout}"
    );
    // The twins: attached to the ingress Gateway edge/public and to the waypoint mesh/waypoint,
    // which exist (from files, their status is not judged).
    for name in ["allow-get", "logs-edge", "filter-waypoint"] {
        assert!(!stdout.contains(name), "{name}: {stdout}");
    }
}

const SIDECAR_ASK: &str = "tests/fixtures/ambient/sidecar-ask.yaml";

#[test]
fn a_captured_pod_that_asks_for_a_sidecar_is_md0116_once() {
    let (stdout, stderr, code) = run(&["analyze", "-f", SIDECAR_ASK]);
    assert_eq!(code, 79, "{stderr}");
    let head = |pod: &str, line: u32, by: &str| {
        format!(
            "Warning [MD0116] (Pod amb/{pod} {SIDECAR_ASK}:{line}) Pod amb/{pod} is captured by ambient (ambient.istio.io/redirection: enabled, no sidecar: ztunnel carries its traffic), but its {by} asks for a sidecar: "
        )
    };
    let tail = " Remove the sidecar request from the pod and its workload's template to keep it in ambient mode, or remove istio.io/dataplane-mode=ambient if it should run with a sidecar.";
    let injected = "a pod created now gets one from the injection webhook (a default installation's selectors assumed: no injection webhook configuration was read), so when this one is re-created (a rollout, an eviction, a node drain) its replacement runs with a sidecar and leaves ambient mode (the CNI agent does not redirect a pod with a sidecar): ztunnel no longer carries its traffic.";
    let md0116: Vec<&str> = stdout.lines().filter(|l| l.contains("[MD0116]")).collect();
    assert_eq!(
        md0116,
        [
            format!(
                "{}the annotation is read only by an injection webhook already called for the pod, and none is (the namespace has no injection label and the pod no sidecar.istio.io/inject or istio.io/rev label), so its replacements start without a sidecar too: the annotation has no effect, but says the opposite of how the pod runs.{tail}",
                head(
                    "annotated",
                    42,
                    "pod annotation sidecar.istio.io/inject=true"
                )
            ),
            format!(
                "{}{injected}{tail}",
                head("asks", 12, "pod label sidecar.istio.io/inject=true")
            ),
            format!(
                "{}{injected}{tail}",
                head("revision", 27, "pod label istio.io/rev=canary")
            ),
        ],
        "{stdout}"
    );
    // Said once: no IST0103 (nor MD0103/MD0204) for the pods MD0116 covers.
    for pod in ["amb/asks", "amb/revision", "amb/annotated"] {
        assert!(
            !stdout.contains(&format!("[IST0103] (Pod {pod} ")),
            "{pod}: {stdout}"
        );
    }
    // The twins: a captured pod that asks for nothing; a pod with a sidecar asked into ambient
    // (MD0112, not MD0116); a pod not captured that asks for a sidecar, and a captured pod of a
    // namespace that asks for injection itself, keep Istio's IST0103.
    assert!(!stdout.contains("amb/plain"), "{stdout}");
    assert!(
        stdout.contains("[MD0112] (Pod amb/with-sidecar ")
            && !stdout.contains("[MD0116] (Pod amb/with-sidecar "),
        "{stdout}"
    );
    for pod in ["amb/not-captured", "both/captured"] {
        assert!(
            stdout.contains(&format!("[IST0103] (Pod {pod} {SIDECAR_ASK}:"))
                && !stdout.contains(&format!("[MD0116] (Pod {pod} ")),
            "{pod}: {stdout}"
        );
    }
}

#[test]
fn namespace_wide_objects_no_proxy_applies_in_ambient_namespaces_are_md0420() {
    let file = "tests/fixtures/ambient/namespace-wide.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", file, "--analyzer", "ambient-l7"]);
    assert_eq!(code, 79, "{stderr}");
    let head = |kind: &str, ns: &str, name: &str, line: u32, workload: &str| {
        format!(
            "Warning [MD0420] ({kind} {ns}/{name} {file}:{line}) {kind} {ns}/{name} has no selector and no targetRefs, so it is for the proxies of namespace {ns}, but that namespace is in ambient mode and no proxy there applies it: its workloads (Deployment {ns}/{workload}) have no sidecar, and "
        )
    };
    let attach = |ns: &str| {
        format!(
            "Attach it to the workloads' waypoint with targetRefs (kind: Gateway, group: gateway.networking.k8s.io; or kind: Service for one Service), and give the namespace a waypoint if it has none (istioctl waypoint apply -n {ns} --enroll-namespace)."
        )
    };
    let jwt = "a waypoint applies only the RequestAuthentications attached to it with targetRefs, never a namespace-wide one: nothing validates JWTs there, and a request with an invalid or expired token is not refused (401). ";
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{}{jwt}{}",
                head("RequestAuthentication", "wide", "jwt-all", 29, "web"),
                attach("wide")
            ),
            // Namespace wide-wp has a waypoint: it does not apply a namespace-wide
            // RequestAuthentication either.
            format!(
                "{}{jwt}{}",
                head("RequestAuthentication", "wide-wp", "jwt-all", 93, "api"),
                attach("wide-wp")
            ),
            format!(
                "{}no waypoint that carries traffic serves the namespace (neither the namespace nor its Services name a usable one): its metrics, access logging and tracing settings are applied nowhere. Give the namespace a waypoint (istioctl waypoint apply -n wide --enroll-namespace), which applies the namespace's Telemetry, or attach this one to a waypoint with targetRefs.",
                head("Telemetry", "wide", "logs-all", 39, "web")
            ),
            format!(
                "{}a waypoint applies only the WasmPlugins attached to it with targetRefs, never a namespace-wide one: its Wasm plugin runs nowhere. {}",
                head("WasmPlugin", "wide", "filter-all", 49, "web"),
                attach("wide")
            ),
        ],
        "{stdout}"
    );
    // The twins: wide-wp's waypoint applies its Telemetry; mixed/legacy's sidecar applies
    // mixed/jwt-all; the root namespace's RequestAuthentication is mesh-wide, not judged.
    for twin in ["wide-wp/logs-all", "mixed/", "istio-system/"] {
        assert!(!stdout.contains(twin), "{twin}: {stdout}");
    }
}
