//! `analyze` on ambient-mode manifests (issue 25), as a user runs it on files: waypoints named
//! by a Namespace, a Service and a pod (MD0113, MD0114), AuthorizationPolicies ztunnel does not
//! enforce as written (MD0403) or that only a missing waypoint would enforce (MD0404), a pod
//! whose own label names a waypoint for Services only (MD0113), and
//! their negative twins (an L4 policy, a Service-targeted policy with a waypoint); policies on
//! ServiceEntries (MD0404, tests/fixtures/ambient/service-entries.yaml).

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
            && list.contains("(MD0111, MD0112, MD0113, MD0114, MD0403, MD0404)"),
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
            && list.contains("(MD0412, MD0413)"),
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
