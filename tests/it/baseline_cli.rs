//! `analyze --write-baseline` and `--baseline` (issue 26), as a CI job uses them on files.

use crate::offline;
use offline::run;

const POLICY: &str = "tests/fixtures/security/namespace-of-objects.yaml";

#[test]
fn a_baseline_fails_only_on_new_findings_and_names_what_went_away() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.json");
    let baseline = baseline.to_str().unwrap();

    // Recording: the findings are printed, the run does not fail on them.
    let (stdout, stderr, code) = run(&["analyze", "-f", POLICY, "--write-baseline", baseline]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("[IST0101]"), "{stdout}");
    assert!(
        stderr.contains("wrote 2 finding(s) to the baseline"),
        "{stderr}"
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(baseline).unwrap()).unwrap();
    assert_eq!(written["version"], 1);
    // No file line in an entry: lines move.
    assert!(!written.to_string().contains(".yaml"), "{written}");

    // The same findings: nothing new, exit 0.
    let (stdout, stderr, code) = run(&["analyze", "-f", POLICY, "--baseline", baseline]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("2 known finding(s) of the baseline"),
        "{stderr}"
    );
    assert!(
        stderr.contains("No new validation issues found"),
        "{stderr}"
    );

    // Lines moved (a comment added above) and a new finding replaces an old one.
    let text = std::fs::read_to_string(POLICY).unwrap();
    let edited = dir.path().join("policy.yaml");
    std::fs::write(
        &edited,
        format!("# moved\n# down\n{}", text.replace("nowhere", "elsewhere")),
    )
    .unwrap();
    let edited = edited.to_str().unwrap();
    let (stdout, stderr, code) = run(&["analyze", "-f", edited, "--baseline", baseline]);
    assert_eq!(code, 79, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].contains("Referenced namespace not found: \"elsewhere\""));
    assert!(
        stderr.contains("1 known finding(s) of the baseline"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 entry of the baseline")
            && stderr.contains(
                "IST0101 (AuthorizationPolicy bookinfo/same-namespace) Referenced namespace not found: \"nowhere\""
            ),
        "{stderr}"
    );

    // SARIF: new, unchanged and absent results.
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        edited,
        "--baseline",
        baseline,
        "-o",
        "sarif",
    ]);
    assert_eq!(code, 79);
    let sarif: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let states: Vec<(&str, &str)> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ruleId"].as_str().unwrap(),
                r["baselineState"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("IST0101", "new"),
            ("IST0127", "unchanged"),
            ("IST0101", "absent")
        ]
    );

    // The failure threshold still applies to the new ones.
    let (_, stderr, code) = run(&[
        "analyze",
        "-f",
        edited,
        "--baseline",
        baseline,
        "--failure-threshold",
        "Error",
    ]);
    assert_eq!(code, 79, "{stderr}");
    let (_, stderr, code) = run(&[
        "analyze",
        "-f",
        edited,
        "--baseline",
        baseline,
        "-S",
        "IST0101=*",
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_file_that_is_not_a_baseline_is_exit_65() {
    let (_, stderr, code) = run(&["analyze", "-f", POLICY, "--baseline", POLICY]);
    assert_eq!(code, 65, "{stderr}");
    assert!(stderr.contains("is not a baseline"), "{stderr}");
}
