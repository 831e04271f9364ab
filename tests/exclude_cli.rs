//! `analyze --exclude-namespace GLOB` (issue 26) on files.

mod offline;
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
