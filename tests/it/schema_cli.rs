//! Schema validation (IST0106 errors, IST0133 warnings) of Gateways, ServiceEntries,
//! WorkloadEntries, WorkloadGroups, ProxyConfigs and Sidecars, as a user runs it on files: every
//! message must be the one `istioctl analyze --use-kube=false` gives on the same file (recorded in
//! tests/fixtures/schema/*.istioctl.txt).

use crate::offline;
use offline::run;

/// Our IST0106/IST0133 findings on `file` as `code origin | message` lines, sorted (newlines
/// and tabs in a message written `\\n` and `\\t`, as in the recorded files).
fn schema_lines(file: &str, extra: &[&str]) -> (Vec<String>, i32) {
    let mut args = vec!["analyze", "-f", file, "-A", "-o", "json"];
    args.extend_from_slice(extra);
    let (stdout, stderr, code) = run(&args);
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect(&stderr);
    let mut lines: Vec<String> = items
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
        .collect();
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
    assert_eq!(code, 79, "errors fail the run");
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
}

#[test]
fn virtualservice_hosts_gateways_routes_matches_and_destinations_as_istioctl() {
    assert_same_as_istioctl("virtualservice");
}
