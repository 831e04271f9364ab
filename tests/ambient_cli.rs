//! `analyze` on ambient-mode manifests (issue 25), as a user runs it on files: waypoints named
//! by a Namespace, a Service and a pod (MD0113, MD0114), AuthorizationPolicies ztunnel does not
//! enforce as written (MD0403) or that only a missing waypoint would enforce (MD0404), a pod
//! whose own label names a waypoint for Services only (MD0113), and
//! their negative twins (an L4 policy, a Service-targeted policy with a waypoint).

const WAYPOINTS: &str = "tests/fixtures/ambient/waypoints.yaml";

mod offline;
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
                "Warning [MD0404] (AuthorizationPolicy amb/db-l7 {WAYPOINTS}:129) AuthorizationPolicy amb/db-l7 targets Service amb/db, which opts out of waypoints (istio.io/use-waypoint=none): only a waypoint enforces a policy attached to a Service, so nothing enforces this one."
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
