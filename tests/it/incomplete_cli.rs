//! Issue 10 on files: no success line and no exit 0 over input that was not read or not analysed.

use crate::offline::{mesh_doctor, output};

const DIR: &str = "tests/fixtures/incomplete";

/// The binary with the kubeconfig `kubeconfig` (whose context namespace file mode uses).
fn run_with(args: &[&str], kubeconfig: &str, stdin: Option<&str>) -> (String, String, i32) {
    let mut cmd = mesh_doctor();
    cmd.env("KUBECONFIG", kubeconfig).args(args);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    output(&mut cmd)
}

fn run(args: &[&str]) -> (String, String, i32) {
    run_with(args, "/nonexistent/kubeconfig", None)
}

#[test]
fn objects_without_namespace_get_the_context_namespace() {
    let file = format!("{DIR}/mixed.yaml");
    let kubeconfig = format!("{DIR}/kubeconfig-team");
    let (stdout, _, code) = run_with(&["analyze", "-f", &file], &kubeconfig, None);
    assert!(
        stdout.contains("Warning [IST0103] (Pod team-0004/lonely "),
        "{stdout}"
    );
    assert_eq!(code, 79);
    // -n still wins over the context.
    let (stdout, _, code) = run_with(&["analyze", "-f", &file, "-n", "other"], &kubeconfig, None);
    assert!(!stdout.contains("IST0103"), "{stdout}");
    assert_ne!(code, 79);
}

#[test]
fn a_directory_without_r_reads_its_top_level() {
    let (stdout, stderr, code) = run(&["analyze", "-f", &format!("{DIR}/topdir")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Service shop/web"), "{stdout}");
    assert!(!stdout.contains("Service shop/deep"), "{stdout}");
    let (stdout, _, _) = run(&["analyze", "-f", &format!("{DIR}/topdir"), "-R"]);
    assert!(stdout.contains("Service shop/deep"), "{stdout}");
}

#[test]
fn a_directory_with_no_manifest_at_its_top_level_is_exit_65() {
    let (stdout, stderr, code) = run(&["analyze", "-f", "examples/"]);
    assert_eq!(code, 65, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("nothing to analyse in examples/: no .yaml, .yml or .json file was found (subdirectories are read with -R)"),
        "{stderr}"
    );
    assert!(!stderr.contains("No validation issues"), "{stderr}");
}

#[test]
fn empty_input_is_exit_65() {
    for (args, stdin) in [
        (vec!["analyze", "-f", "/dev/null"], None),
        (vec!["analyze", "-f", "-"], Some("")),
        (vec!["analyze", "-f", "-"], Some("---\n# nothing\n")),
    ] {
        let (_, stderr, code) = run_with(&args, "/nonexistent", stdin);
        assert_eq!(code, 65, "{args:?}: {stderr}");
        assert!(stderr.contains("holds no document"), "{stderr}");
        assert!(!stderr.contains("No validation issues"), "{stderr}");
    }
}

#[test]
fn only_unanalysed_kinds_is_exit_65_naming_them() {
    let (_, stderr, code) = run(&["analyze", "-f", &format!("{DIR}/certificates.yaml")]);
    assert_eq!(code, 65, "{stderr}");
    assert!(
        stderr.contains("only kinds no mesh analysis concerns: Certificate (2)"),
        "{stderr}"
    );
    assert!(!stderr.contains("No validation issues"), "{stderr}");
}

#[test]
fn unread_mesh_kinds_are_counted_and_carried_in_every_format() {
    let file = format!("{DIR}/mixed-mesh.yaml");
    let (stdout, stderr, code) = run(&["analyze", "-f", &file, "-n", "shop"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    // The UDPRoute is a gap; the ServiceAccount is not.
    assert!(
        stderr.contains("1 document of kinds not analysed: UDPRoute (1)"),
        "{stderr}"
    );
    assert!(!stderr.contains("ServiceAccount"), "{stderr}");
    assert!(!stderr.contains("No validation issues"), "{stderr}");
    assert!(stderr.contains("the analysis is not complete"), "{stderr}");

    let (stdout, _, _) = run(&["analyze", "-f", &file, "-n", "shop", "-o", "json"]);
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(items.len(), 1, "{stdout}");
    let entry = &items[0];
    assert_eq!(entry["code"], "MD0002");
    assert_eq!(entry["level"], "Warning");
    assert_eq!(entry["origin"], "UDPRoute");
    assert_eq!(
        entry["message"],
        "1 document(s) of kind UDPRoute not analysed: no analyzer reads this kind"
    );
    assert!(
        entry["documentationUrl"]
            .as_str()
            .unwrap()
            .ends_with("/MD0002.md")
    );
    assert_eq!(entry["kind"], "UDPRoute");
    assert_eq!(entry["documents"], 1);

    let (stdout, _, _) = run(&["analyze", "-f", &file, "-n", "shop", "-o", "yaml"]);
    assert!(stdout.contains("code: MD0002"), "{stdout}");
    assert!(stdout.contains("kind: UDPRoute"), "{stdout}");

    let (stdout, _, _) = run(&["analyze", "-f", &file, "-n", "shop", "-o", "sarif"]);
    let sarif: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let notes = &sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert_eq!(notes[0]["descriptor"]["id"], "not-analysed", "{sarif}");
    assert_eq!(
        sarif["runs"][0]["results"],
        serde_json::json!([]),
        "{sarif}"
    );
}

#[test]
fn kinds_no_mesh_analysis_concerns_are_not_a_gap() {
    let file = format!("{DIR}/mixed.yaml");
    let (stdout, stderr, code) = run(&["analyze", "-f", &file, "-n", "shop", "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("not analysed"), "{stderr}");
    assert!(stderr.contains("No validation issues found"), "{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert!(items.iter().all(|i| i["code"].is_string()), "{stdout}");
}

#[test]
fn bookinfo_json_is_istioctls_shape_with_nothing_appended() {
    // Istio's bookinfo sample: Services, Deployments and 4 ServiceAccounts.
    let file = "tests/fixtures/bookinfo/bookinfo.yaml";
    let (stdout, stderr, code) = run(&["analyze", "-f", file, "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("not analysed"), "{stderr}");
    assert!(!stderr.contains("not complete"), "{stderr}");
    assert_eq!(stdout.trim(), "[]", "{stdout}");
    assert!(stderr.contains("No validation issues found"), "{stderr}");
}

#[test]
fn a_complete_clean_run_keeps_the_success_line_and_the_plain_array() {
    let (stdout, stderr, code) = run(&["analyze", "-f", "tests/fixtures/clean.yaml", "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "[]");
    assert!(stderr.contains("No validation issues found"), "{stderr}");
}
