//! `analyze --exclude-namespace GLOB` and `-o junit` (issue 26) on files.

use crate::offline;
use offline::run;

const POLICY: &str = "tests/fixtures/security/namespace-of-objects.yaml";

#[test]
fn findings_of_excluded_namespaces_are_left_out() {
    let (stdout, stderr, code) = run(&["analyze", "-f", POLICY]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");

    let (stdout, stderr, code) = run(&["analyze", "-f", POLICY, "--exclude-namespace", "book*"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");

    // A glob that matches another namespace leaves them; the flag is repeatable.
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        POLICY,
        "--exclude-namespace",
        "shop",
        "--exclude-namespace",
        "books",
    ]);
    assert_eq!(code, 79);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
}

#[test]
fn junit_has_one_test_case_per_finding_failed_at_the_threshold() {
    let (stdout, stderr, code) = run(&[
        "analyze",
        "-f",
        POLICY,
        "-o",
        "junit",
        "--failure-threshold",
        "Error",
    ]);
    assert_eq!(code, 79, "{stderr}");
    assert!(
        stdout.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
        "{stdout}"
    );
    assert!(stdout.contains("tests=\"2\" failures=\"1\""), "{stdout}");
    assert!(
        stdout.contains("name=\"IST0101 AuthorizationPolicy bookinfo/same-namespace\">\n      <failure type=\"IST0101\" message=\"Referenced namespace not found: &quot;nowhere&quot;\">"),
        "{stdout}"
    );
    // The Warning is below the threshold: a passing test case.
    assert!(stdout.contains("<system-out>Warning [IST0127]"), "{stdout}");

    // A clean run is one passing test case, never an empty report.
    let (stdout, _, code) = run(&[
        "analyze",
        "-f",
        "tests/fixtures/bookinfo/bookinfo.yaml",
        "-o",
        "junit",
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains("tests=\"1\" failures=\"0\""), "{stdout}");
}
