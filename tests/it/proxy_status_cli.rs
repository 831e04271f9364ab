//! `proxy-status` from saved answers (no cluster): syncz answers captured from a real istiod and
//! the pods of the test cluster (tests/fixtures/syncz/), through the real binary: exit codes,
//! formats, filters and usage errors.

use std::process::Command;

use serde_json::Value;

use crate::common::Run;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/syncz/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn mesh_doctor(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-mesh_doctor"))
        .env("NO_COLOR", "1")
        // Never a real cluster by accident.
        .env("KUBECONFIG", "/nonexistent")
        .args(args)
        .output()
        .unwrap();
    Run::from(out)
}

fn offline(syncz: &str, extra: &[&str]) -> Run {
    let syncz = fixture(syncz);
    let pods = fixture("pods.json");
    let mut args = vec![
        "proxy-status",
        "--syncz-file",
        &syncz,
        "--istiod-name",
        "istiod-testenv",
        "--pods-file",
        &pods,
    ];
    args.extend_from_slice(extra);
    mesh_doctor(&args)
}

fn row<'a>(lines: &'a [&'a str], name: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name} in {lines:#?}"))
}

#[test]
fn unconnected_sidecars_fail_the_run() {
    let run = offline("synced.json", &[]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(row(&lines, "web-1.shop").contains("istiod-testenv"));
    assert!(row(&lines, "web-1.shop").contains("SYNCED"));
    assert!(row(&lines, "web-crash.shop").contains("NOT CONNECTED"));
    assert!(row(&lines, "web-crash.shop").contains("istio-proxy CrashLoopBackOff (7 restarts"));
    assert!(row(&lines, "web-wait.shop").contains("istio-proxy ImagePullBackOff"));
    assert!(
        !run.stdout.contains("plain."),
        "a pod without sidecar is no proxy"
    );
    assert!(
        run.stderr.contains(
            "fail: 3/5 proxies match --fail-on stale,error,disconnected: 3 NOT CONNECTED"
        ),
        "{}",
        run.stderr
    );

    let run = offline("synced.json", &["--fail-on", "stale,error"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
}

#[test]
fn stale_and_rejected_types() {
    let run = offline("stale.json", &["--fail-on", "stale", "--types"]);
    assert_eq!(run.code, 79);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let web2 = row(&lines, "web-2.shop");
    assert!(web2.contains("STALE ("), "{web2}");
    assert!(
        web2.contains("CDS,LDS,RDS pushed, not acknowledged yet"),
        "{web2}"
    );

    let run = offline("error.json", &["-o", "json", "--fail-on", "error"]);
    assert_eq!(run.code, 79);
    let value: Value = serde_json::from_str(&run.stdout).unwrap();
    let web1 = value["proxies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "web-1.shop")
        .unwrap();
    assert_eq!(web1["status"], "ERROR");
    assert!(
        web1["types"][0]["error"]
            .as_str()
            .unwrap()
            .contains("istio.metadata_exchange")
    );
    assert_eq!(
        value["failing"],
        serde_json::json!(["web-1.shop", "web-2.shop"])
    );
}

#[test]
fn json_and_yaml_carry_the_table_rows() {
    let table = offline("synced.json", &["--fail-on", "none"]);
    assert_eq!(table.code, 0);
    let names: Vec<&str> = table
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let json = offline("synced.json", &["-o", "json", "--fail-on", "none"]);
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    let json_names: Vec<&str> = value["proxies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, json_names);
    let yaml = offline("synced.json", &["-o", "yaml", "--fail-on", "none"]);
    for name in names {
        assert!(
            yaml.stdout.contains(&format!("- name: {name}\n")),
            "{}",
            yaml.stdout
        );
    }
}

#[test]
fn namespace_filter_and_one_proxy() {
    let run = offline("synced.json", &["-n", "other"]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout.lines().count(), 1, "header only: {}", run.stdout);

    let run = offline("synced.json", &["web-crash", "-n", "shop"]);
    assert_eq!(run.code, 79);
    assert!(
        run.stdout.contains(
            "Pod:      shop/web-crash (Running, 1/2 ready, istio-proxy restarted 7 times)"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("Version:  1.31.0-dev-eed52ebb (from the istio-proxy image)"),
        "{}",
        run.stdout
    );

    let run = offline("synced.json", &["nope.shop"]);
    assert_eq!(run.code, 65);
    assert!(
        run.stderr
            .contains("no proxy and no sidecar pod named nope.shop in namespace shop"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_and_input_errors() {
    let syncz = fixture("synced.json");
    let run = mesh_doctor(&[
        "proxy-status",
        "--syncz-file",
        &syncz,
        "--istiod-name",
        "a",
        "--istiod-name",
        "b",
    ]);
    assert_eq!(run.code, 64, "{}", run.stderr);
    let run = mesh_doctor(&[
        "proxy-status",
        "--syncz-file",
        &syncz,
        "--istiod-url",
        "http://x:1",
    ]);
    assert_eq!(run.code, 64);
    let run = mesh_doctor(&["proxy-status", "--fail-on", "bogus"]);
    assert_eq!(run.code, 64);
    let run = mesh_doctor(&["proxy-status", "--syncz-file", &fixture("version.txt")]);
    assert_eq!(run.code, 65);
    assert!(
        run.stderr.contains("version.txt: not a syncz answer"),
        "{}",
        run.stderr
    );
    let run = mesh_doctor(&["proxy-status", "--syncz-file", "/nonexistent/syncz.json"]);
    assert_eq!(run.code, 65);
}

#[test]
fn help_documents_columns_and_exit_codes() {
    let run = mesh_doctor(&["proxy-status", "--help"]);
    assert_eq!(run.code, 0);
    for text in [
        "SUBSCRIBED TYPES",
        "NOT CONNECTED",
        "--fail-on",
        "79  a proxy matches --fail-on",
        "--istiod-url",
    ] {
        assert!(
            run.stdout.contains(text),
            "{text} missing from:\n{}",
            run.stdout
        );
    }
    // istioctl's short name works too.
    let run = mesh_doctor(&["ps", "--help"]);
    assert_eq!(run.code, 0);
}

#[test]
fn waypoints_and_ztunnel_are_rows_with_their_type() {
    // waypoint.json: istiod's syncz captured on the real node with a waypoint connected (its
    // upstream Envoy rejects the waypoint listeners); pods-ambient.json: that waypoint's two
    // pods as the API server listed them, and a ztunnel pod written by hand (no ztunnel runs).
    let syncz = fixture("waypoint.json");
    let pods = fixture("pods-ambient.json");
    let run = mesh_doctor(&[
        "proxy-status",
        "--syncz-file",
        &syncz,
        "--istiod-name",
        "istiod-8c4b4dfd7-pqc65",
        "--pods-file",
        &pods,
        "-o",
        "wide",
    ]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let connected = row(&lines, "waypoint-765d597cdd-vzndn.wp1");
    assert!(connected.contains(" waypoint "), "{connected}");
    assert!(connected.contains("2 (CDS,LDS)"), "{connected}");
    assert!(
        connected.contains(
            "ERROR           LDS rejected: Error adding/updating listener(s) connect_terminate"
        ),
        "{connected}"
    );
    let crashing = row(&lines, "waypoint-57dccf54b6-rvw8w.wp1");
    assert!(
        crashing.contains(" waypoint ") && crashing.contains("NOT CONNECTED"),
        "{crashing}"
    );
    let ztunnel = row(&lines, "ztunnel-x7k2p.istio-system");
    assert!(
        ztunnel.contains(" ztunnel ") && ztunnel.contains("NOT CONNECTED"),
        "{ztunnel}"
    );
    assert!(
        ztunnel.contains("istio-proxy CrashLoopBackOff (5 restarts, last exit code 1 (Error))"),
        "{ztunnel}"
    );
    let json = mesh_doctor(&[
        "proxy-status",
        "--syncz-file",
        &syncz,
        "--istiod-name",
        "istiod-8c4b4dfd7-pqc65",
        "--pods-file",
        &pods,
        "-o",
        "json",
    ]);
    let v: Value = serde_json::from_str(&json.stdout).unwrap();
    let types: Vec<&str> = v["proxies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["proxyType"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        types,
        ["waypoint", "waypoint", "ztunnel"],
        "{}",
        json.stdout
    );
}
