//! `analyze` on files, as a user runs it: output, stderr and exit codes.

use crate::offline::{run, run_with_stdin};

const INJECTION: &str = "tests/fixtures/istio/analyzer-testdata/injection.yaml";

#[test]
fn istio_injection_testdata_gives_istio_findings_and_exit_79() {
    let (stdout, _, code) = run(&["analyze", "-f", INJECTION]);
    assert_eq!(code, 79);
    assert_eq!(stdout.lines().count(), 7, "{stdout}");
    assert!(
        stdout.contains("Info [IST0102] (Namespace bar "),
        "{stdout}"
    );
    assert!(
        stdout.contains("Warning [IST0103] (Pod default/noninjectedpod "),
        "{stdout}"
    );
    for ns in ["busted", "multi-ns-1", "multi-ns-2", "multi-ns-3"] {
        assert!(
            stdout.contains(&format!("Warning [IST0123] (Namespace {ns} ")),
            "{stdout}"
        );
    }
    // The pod that opts out with the deprecated annotation (annotations.K8sAnalyzer).
    assert!(
        stdout.contains("Info [IST0135] (Pod default/podinjectiondisabled "),
        "{stdout}"
    );
    insta::assert_snapshot!("injection_log", stdout);
}

#[test]
fn json_output_has_istioctl_fields_and_still_exits_79() {
    let (stdout, _, code) = run(&["analyze", "-f", INJECTION, "-o", "json"]);
    assert_eq!(code, 79);
    let findings: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(findings.len(), 7);
    let pod = findings.iter().find(|f| f["code"] == "IST0103").unwrap();
    assert_eq!(pod["level"], "Warning");
    assert_eq!(pod["origin"], "Pod default/noninjectedpod");
    assert_eq!(pod["reference"], format!("{INJECTION}:72"));
    assert!(
        pod["documentationUrl"]
            .as_str()
            .unwrap()
            .ends_with("/docs/codes/IST0103.md")
    );
    let keys: Vec<&String> = pod.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "code",
            "documentationUrl",
            "level",
            "message",
            "origin",
            "reference"
        ]
    );
    assert!(
        stdout.starts_with("[\n  {"),
        "two-space indented, as every command (docs/cli.md)"
    );
}

/// The whole SARIF document of the examples, byte for byte (the version aside): rules,
/// invocation, results with their file, line and logical location, in this order of keys.
#[test]
fn sarif_of_the_examples_is_pinned() {
    let (sarif, _, code) = run(&["analyze", "-f", "examples", "-R", "-o", "sarif"]);
    assert_eq!(code, 79);
    let version = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert_eq!(sarif.matches(&version).count(), 1, "{sarif}");
    insta::assert_snapshot!(
        "examples_sarif",
        sarif.replace(&version, "\"version\": \"[version]\"")
    );
}

#[test]
fn yaml_and_sarif_outputs_exit_79_too() {
    let (yaml, _, code) = run(&["analyze", "-f", INJECTION, "-o", "yaml"]);
    assert_eq!(code, 79);
    assert!(
        yaml.starts_with("- code: IST0103\n  documentationUrl: "),
        "{yaml}"
    );
    let (sarif, _, code) = run(&["analyze", "-f", INJECTION, "-o", "sarif"]);
    assert_eq!(code, 79);
    let doc: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    let results = doc["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 7);
    let pod = results.iter().find(|r| r["ruleId"] == "IST0103").unwrap();
    assert_eq!(pod["level"], "warning");
    let location = &pod["locations"][0]["physicalLocation"];
    assert_eq!(location["region"]["startLine"], 72);
    assert!(
        location["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("injection.yaml")
    );
    let rules = doc["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert_eq!(rules.len(), 4, "IST0102, IST0103, IST0123, IST0135");
}

#[test]
fn malformed_yaml_exits_65_naming_file_and_line() {
    let (stdout, stderr, code) = run(&["analyze", "-f", "tests/fixtures/broken.yaml"]);
    assert_eq!(code, 65);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("tests/fixtures/broken.yaml:13:1: while parsing a flow sequence"),
        "{stderr}"
    );
}

#[test]
fn invalid_object_exits_65_naming_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pod.json");
    std::fs::write(&path, r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "web"}}"#).unwrap();
    let (_, stderr, code) = run(&["analyze", "-f", path.to_str().unwrap()]);
    assert_eq!(code, 65);
    assert!(stderr.contains("pod.json: invalid Pod"), "{stderr}");
}

#[test]
fn clean_input_exits_0_with_the_success_line_on_stderr() {
    let (stdout, stderr, code) = run(&["analyze", "-f", "tests/fixtures/clean.yaml"]);
    assert_eq!(code, 0);
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(
        stderr,
        "\u{2714} No validation issues found when analyzing tests/fixtures/clean.yaml.\n"
    );
    let (stdout, _, code) = run(&["analyze", "-f", "tests/fixtures/clean.yaml", "-o", "json"]);
    assert_eq!((stdout.as_str(), code), ("[]\n", 0));
}

#[test]
fn stdin_and_directories() {
    let text = std::fs::read_to_string(INJECTION).unwrap();
    let (stdout, _, code) = run_with_stdin(&["analyze", "-f", "-"], &text);
    assert_eq!(code, 79);
    assert!(
        stdout.contains("(Pod default/noninjectedpod <stdin>:72)"),
        "{stdout}"
    );

    let (stdout, _, code) = run(&["analyze", "-f", "examples", "-R"]);
    assert_eq!(code, 79);
    insta::assert_snapshot!("examples_log", stdout);
    // Without -R only the top level of a directory is read; there is no manifest there, and
    // input that yields no object is an error, not a pass.
    let (_, stderr, code) = run(&["analyze", "-f", "examples"]);
    assert_eq!(code, 65, "{stderr}");
}

#[test]
fn thresholds() {
    // Error threshold: nothing in injection.yaml is an Error.
    let (stdout, _, code) = run(&["analyze", "-f", INJECTION, "--failure-threshold", "error"]);
    assert_eq!(code, 0);
    assert_eq!(stdout.lines().count(), 7);
    // Info findings hidden, but they still count for the exit code.
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        INJECTION,
        "--output-threshold",
        "Warning",
        "--failure-threshold",
        "Info",
    ]);
    assert_eq!(code, 79);
    assert!(!stdout.contains("IST0102"));
    assert_eq!(stdout.lines().count(), 5);
    assert!(stderr.contains("at or above Info"));
    let (_, stderr, code) = run(&["analyze", "-f", INJECTION, "--failure-threshold", "fatal"]);
    assert_eq!(code, 64);
    assert!(
        stderr.contains("invalid value 'fatal'")
            && stderr.contains("[possible values: Info, Warning, Error]"),
        "{stderr}"
    );
}

#[test]
fn suppression_by_flag_and_annotation() {
    let file = "tests/fixtures/suppressed.yaml";
    let (stdout, _, code) = run(&["analyze", "-f", file]);
    assert_eq!(code, 79);
    assert!(
        !stdout.contains("old-worker"),
        "the annotation suppresses it: {stdout}"
    );
    assert!(stdout.contains("(Pod shop/batch-1 "), "{stdout}");

    let (stdout, stderr, code) = run(&["analyze", "-f", file, "-S", "IST0103=Pod shop/batch-*"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stderr.contains("No validation issues"));

    let (_, _, code) = run(&["analyze", "-f", file, "-S", "IST0118=Pod shop/*"]);
    assert_eq!(code, 79, "another code is not suppressed");

    let (_, stderr, code) = run(&["analyze", "-f", file, "-S", "IST0103"]);
    assert_eq!(code, 64);
    assert!(stderr.contains("CODE=RESOURCE"), "{stderr}");
}

#[test]
fn namespace_flag_narrows_file_analysis() {
    let (stdout, _, _) = run(&["analyze", "-f", INJECTION, "-n", "bar"]);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("(Namespace bar "));
}

#[test]
fn missing_file_is_bad_input() {
    let (_, stderr, code) = run(&["analyze", "-f", "does/not/exist.yaml"]);
    assert_eq!(code, 65);
    assert!(stderr.contains("does/not/exist.yaml"), "{stderr}");
}

#[test]
fn help_shows_examples_and_exit_codes() {
    let (stdout, _, code) = run(&["analyze", "--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("kubectl mesh-doctor analyze -f k8s/ -R"));
    assert!(stdout.contains("79  findings at or above the failure threshold"));
    let (stdout, _, code) = run(&["--version"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("kubectl mesh-doctor "), "{stdout}");
}

#[test]
fn codes_lists_every_code() {
    let (stdout, _, code) = run(&["codes"]);
    assert_eq!(code, 0);
    for m in mesh_doctor::findings::messages::ALL {
        assert!(stdout.contains(m.code), "{} missing", m.code);
    }
}

#[test]
fn sidecar_runtime_checks_are_listed_documented_and_can_be_turned_off() {
    let (stdout, _, code) = run(&["analyze", "--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("--probe\n"), "{stdout}");
    assert!(stdout.contains("--no-probe\n"), "{stdout}");
    assert!(stdout.contains("--probe-timeout <DURATION>"), "{stdout}");
    assert!(stdout.contains("--no-probe turns this off"), "{stdout}");
    let (stdout, _, code) = run(&["analyze", "--list-analyzers"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("* sidecar-runtime:") && stdout.contains("(MD0101, MD0102,"),
        "{stdout}"
    );
    // Files are never probed; the name is a known analyzer; a bad bool is a usage error.
    let (_, _, code) = run(&[
        "analyze",
        "-f",
        INJECTION,
        "--analyzer",
        "sidecar-runtime",
        "--no-probe",
    ]);
    assert_eq!(code, 0);
    // The old spellings still work for one release, each with a deprecation line.
    for old in [&["--probe=false"][..], &["--probe", "false"]] {
        let mut args = vec!["analyze", "-f", INJECTION, "--analyzer", "sidecar-runtime"];
        args.extend_from_slice(old);
        let (_, stderr, code) = run(&args);
        assert_eq!(code, 0, "{old:?}: {stderr}");
        assert!(
            stderr.contains("deprecated:") && stderr.contains("use --no-probe"),
            "{old:?}: {stderr}"
        );
    }
    let (_, stderr, code) = run(&["analyze", "-f", INJECTION, "--probe=maybe"]);
    assert_eq!(code, 64, "{stderr}");
}
