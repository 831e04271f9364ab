//! Schema validation (IST0106 errors, IST0133 warnings) of Gateways, ServiceEntries,
//! WorkloadEntries, WorkloadGroups, ProxyConfigs, Sidecars, DestinationRules and VirtualServices,
//! as a user runs it on files: every message must be the one `istioctl analyze --use-kube=false`
//! gives on the same file, as many times (recorded in tests/fixtures/schema/*.istioctl.txt).
//! `the_recordings_are_istioctls` records them again with the istioctl the test environment
//! built, when there is one.

use crate::offline;
use offline::run;

/// IST0106/IST0133 messages of a JSON output as `code origin | message` lines (newlines and
/// tabs in a message written `\\n` and `\\t`, as in the recorded files).
fn message_lines(items: &[serde_json::Value]) -> Vec<String> {
    items
        .iter()
        .filter(|i| matches!(i["code"].as_str(), Some("IST0106" | "IST0133")))
        .map(|i| {
            format!(
                "{} {} | {}",
                i["code"].as_str().unwrap(),
                i["origin"].as_str().unwrap(),
                i["message"]
                    .as_str()
                    .unwrap()
                    .replace('\n', "\\n")
                    .replace('\t', "\\t")
            )
        })
        .collect()
}

/// Our IST0106/IST0133 findings on `file`, sorted.
fn schema_lines(file: &str, extra: &[&str]) -> (Vec<String>, i32) {
    let mut args = vec!["analyze", "-f", file, "-A", "-o", "json"];
    args.extend_from_slice(extra);
    let (stdout, stderr, code) = run(&args);
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect(&stderr);
    let mut lines = message_lines(&items);
    lines.sort();
    (lines, code)
}

fn istioctl_lines(name: &str) -> Vec<String> {
    let text =
        std::fs::read_to_string(format!("tests/fixtures/schema/{name}.istioctl.txt")).unwrap();
    // Newlines and tabs inside a message (a multierror) are written `\n` and `\t`.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

fn assert_same_as_istioctl(name: &str) {
    let file = format!("tests/fixtures/schema/{name}.yaml");
    let (got, code) = schema_lines(&file, &[]);
    let want = istioctl_lines(name);
    let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
    let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing (istioctl reports, we do not): {missing:#?}\nextra (we report, istioctl does not): {extra:#?}"
    );
    assert_eq!(
        got, want,
        "the same messages, each as many times as istioctl says it"
    );
    assert_eq!(code, 79, "errors fail the run");
    // Every accepted twin (a name ending in `-ok`) gets no finding at all.
    let twins: Vec<&String> = got.iter().filter(|l| l.contains("-ok |")).collect();
    assert!(twins.is_empty(), "accepted twins with findings: {twins:#?}");
}

#[test]
fn gateway_servers_hosts_ports_binds_and_tls_as_istioctl() {
    assert_same_as_istioctl("gateway");
}

#[test]
fn serviceentry_workloadentry_workloadgroup_proxyconfig_as_istioctl() {
    assert_same_as_istioctl("serviceentry");
}

#[test]
fn sidecar_selector_listeners_hosts_and_outbound_policy_as_istioctl() {
    assert_same_as_istioctl("sidecar");
}

#[test]
fn destinationrule_outlier_detection_and_connection_pool_as_istioctl() {
    assert_same_as_istioctl("destinationrule");
}

#[test]
fn one_schema_analyzer_by_istios_name() {
    let (lines, _) = schema_lines(
        "tests/fixtures/schema/serviceentry.yaml",
        &["--analyzer", "schema.ValidationAnalyzer.WorkloadGroup"],
    );
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l.contains(" WorkloadGroup ")),
        "{lines:#?}"
    );
    assert!(lines.contains(
        &"IST0106 WorkloadGroup sch/wg-notemplate | Schema validation error: template is required"
            .to_string()
    ));
}

#[test]
fn list_analyzers_names_the_schema_analyzers_of_every_kind() {
    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    for kind in [
        "Gateway",
        "ServiceEntry",
        "Sidecar",
        "WorkloadEntry",
        "WorkloadGroup",
        "ProxyConfig",
    ] {
        assert!(
            stdout.contains(&format!("schema.ValidationAnalyzer.{kind}")),
            "{stdout}"
        );
    }
    // The CRDs' CEL rules: all evaluated but the transition rule, which is said.
    assert!(
        stdout.contains("CEL rules (x-kubernetes-validations): 114 evaluated, 0 not checked, 1 transition rule(s) the API server does not run on a create"),
        "{stdout}"
    );
    assert!(
        stdout.contains("- not run on a create: Value is immutable (GatewayClass)"),
        "{stdout}"
    );
}

#[test]
fn virtualservice_hosts_gateways_routes_matches_and_destinations_as_istioctl() {
    assert_same_as_istioctl("virtualservice");
}

#[test]
fn destinationrule_traffic_policies_subsets_export_and_selector_as_istioctl() {
    assert_same_as_istioctl("destinationrule-policy");
}

#[test]
fn virtualservice_headers_cors_faults_mirrors_redirects_and_direct_responses_as_istioctl() {
    assert_same_as_istioctl("virtualservice-http");
}

#[test]
fn sidecar_connection_pool_durations_as_istioctl() {
    assert_same_as_istioctl("sidecar-pool");
}

/// The recorded answers are istioctl's own: each fixture is analysed again by the istioctl that
/// `testenv/build.sh --istio` built (skipped, and said, when there is none).
#[test]
fn the_recordings_are_istioctls() {
    let Some(istioctl) = crate::common::cached_binary("istioctl-") else {
        eprintln!("no istioctl in the test environment's cache: recordings not checked");
        return;
    };
    let dir = std::path::Path::new("tests/fixtures/schema");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().ok()?;
            Some(name.strip_suffix(".istioctl.txt")?.to_string())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        let out = std::process::Command::new(&istioctl)
            .args(["analyze", "--use-kube=false", "-A", "-o", "json"])
            .arg(dir.join(format!("{name}.yaml")))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let items: Vec<serde_json::Value> = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let mut got = message_lines(&items);
        got.sort();
        assert_eq!(
            got,
            istioctl_lines(&name),
            "{name}: istioctl says otherwise today"
        );
    }
}

#[test]
fn nulls_in_lists_and_maps_are_zero_values_as_istioctl_reads_them() {
    assert_same_as_istioctl("nulls");
}

/// The reasons istioctl gives for the objects of `durations.yaml` it cannot read (recorded,
/// sorted, in `durations.istioctl-errors.txt`).
fn recorded_decode_errors() -> Vec<String> {
    let text =
        std::fs::read_to_string("tests/fixtures/schema/durations.istioctl-errors.txt").unwrap();
    text.lines().map(str::to_string).collect()
}

/// A Duration Go's `time.ParseDuration` refuses (`1e3s`, `5parsecs`, `10`, `1.5.s`) makes the
/// object unreadable to istioctl, which names Go's error and analyses the rest; mesh-doctor
/// says the same reason as IST0106 (`schema.Decode`) for the same objects, and nothing of the
/// kind for their accepted twins.
#[test]
fn durations_go_refuses_are_said_with_istioctls_reason() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        "tests/fixtures/schema/durations.yaml",
        "-A",
        "-o",
        "json",
    ]);
    assert_eq!(code, 79, "{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let mut reasons: Vec<String> = items
        .iter()
        .filter(|i| i["code"] == "IST0106")
        .map(|i| {
            let origin = i["origin"].as_str().unwrap();
            assert!(!origin.ends_with("-ok"), "a twin: {i}");
            let message = i["message"].as_str().unwrap();
            message
                .strip_prefix("Schema validation error: ")
                .unwrap_or(message)
                .to_string()
        })
        .collect();
    reasons.sort();
    assert_eq!(reasons, recorded_decode_errors());
}

/// The recording is istioctl's own (skipped, and said, without a cached istioctl).
#[test]
fn the_decode_errors_recorded_are_istioctls() {
    let Some(istioctl) = crate::common::cached_binary("istioctl-") else {
        eprintln!("no istioctl in the test environment's cache: recording not checked");
        return;
    };
    let out = std::process::Command::new(&istioctl)
        .args(["analyze", "--use-kube=false", "-A"])
        .arg("tests/fixtures/schema/durations.yaml")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut got: Vec<String> = stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("* error processing"))
        .filter_map(|l| l.split_once("failed parsing JSON for built-in type: "))
        .map(|(_, reason)| reason.to_string())
        .collect();
    got.sort();
    assert_eq!(got, recorded_decode_errors(), "{stderr}");
}

#[test]
fn nulls_in_the_security_telemetry_and_extensions_kinds_are_zero_values_as_istioctl_reads_them() {
    assert_same_as_istioctl("nulls-security");
}
