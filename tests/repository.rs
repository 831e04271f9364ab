//! Checks on the repository itself: every code has a documentation page, the krew manifest follows
//! krew's validation rules, and README's test command is what CI runs.

use std::collections::BTreeSet;

use mesh_doctor::analysis::messages::ALL;
use mesh_doctor::source::yaml::parse_stream;

#[test]
fn every_code_has_a_documentation_page() {
    let missing: Vec<&str> = ALL
        .iter()
        .map(|m| m.code)
        .filter(|code| !std::path::Path::new(&format!("docs/codes/{code}.md")).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "codes without docs/codes/<CODE>.md: {missing:?}"
    );
    for m in ALL {
        let page = std::fs::read_to_string(format!("docs/codes/{}.md", m.code)).unwrap();
        assert!(
            page.starts_with(&format!("# {} {}", m.code, m.name)),
            "docs/codes/{}.md must start with '# {} {}'",
            m.code,
            m.code,
            m.name
        );
    }
}

#[test]
fn krew_manifest_is_valid() {
    let text = std::fs::read_to_string("krew-manifest.yaml").unwrap();
    let doc = &parse_stream(&text).unwrap()[0].value;
    assert_eq!(
        doc["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(doc["kind"], "Plugin");
    let name = doc["metadata"]["name"].as_str().unwrap();
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );
    assert_eq!(
        name, "mesh-doctor",
        "krew installs it as kubectl-mesh_doctor"
    );
    let version = doc["spec"]["version"].as_str().unwrap();
    let semver = version
        .strip_prefix('v')
        .expect("version needs a leading v");
    assert_eq!(semver.split('.').count(), 3);
    assert!(semver.split('.').all(|p| p.parse::<u32>().is_ok()));
    assert_eq!(
        format!("v{}", env!("CARGO_PKG_VERSION")),
        version,
        "the manifest's version is the crate's version"
    );
    let short = doc["spec"]["shortDescription"].as_str().unwrap();
    assert!(!short.is_empty() && !short.contains('\n'));
    let supported: BTreeSet<(&str, &str)> = [
        ("windows", "386"),
        ("windows", "amd64"),
        ("windows", "arm64"),
        ("linux", "386"),
        ("linux", "amd64"),
        ("linux", "arm"),
        ("linux", "arm64"),
        ("linux", "ppc64le"),
        ("darwin", "386"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
    ]
    .into_iter()
    .collect();
    let mut seen = BTreeSet::new();
    for platform in doc["spec"]["platforms"].as_array().unwrap() {
        let labels = platform["selector"]["matchLabels"].as_object().unwrap();
        assert!(
            labels.keys().all(|k| k == "os" || k == "arch"),
            "only os/arch selectors"
        );
        let pair = (
            labels["os"].as_str().unwrap(),
            labels["arch"].as_str().unwrap(),
        );
        assert!(supported.contains(&pair), "unsupported platform {pair:?}");
        assert!(seen.insert(pair), "two platforms match {pair:?}");
        let sha = platform["sha256"].as_str().unwrap();
        assert!(sha.len() == 64 && sha.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
        assert!(platform["uri"].as_str().unwrap().starts_with("https://"));
        let bin = platform["bin"].as_str().unwrap();
        if pair.0 == "windows" {
            assert_eq!(bin, "kubectl-mesh_doctor.exe");
        } else {
            assert_eq!(bin, "kubectl-mesh_doctor");
        }
    }
    assert!(
        std::path::Path::new("LICENSE").exists(),
        "krew requires a LICENSE file in the archive"
    );
    // Exactly the platforms a release provides: scripts/release-archive.sh builds Linux x86_64.
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [("linux", "amd64")],
        "the manifest lists only what scripts/release-archive.sh builds"
    );
    let script = std::fs::read_to_string("scripts/release-archive.sh").unwrap();
    assert!(script.contains(r#"name="kubectl-mesh-doctor-$version-x86_64-linux-static""#));
    let uri = doc["spec"]["platforms"][0]["uri"].as_str().unwrap();
    assert!(
        uri.ends_with(&format!(
            "/kubectl-mesh-doctor-{version}-x86_64-linux-static.tar.gz"
        )),
        "{uri}"
    );
    // The description is for users: nothing about how a release is made.
    let description = doc["spec"]["description"].as_str().unwrap();
    for internal in ["sha256", "release job", "scripts/"] {
        assert!(!description.contains(internal), "{internal}: {description}");
    }
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let after = readme
        .split("<!-- test-command -->")
        .nth(1)
        .expect("README has the test-command marker");
    let command = after
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap();
    assert_eq!(command, "scripts/test-all.sh");
    let ci = std::fs::read_to_string(".ci/run").unwrap();
    assert!(
        ci.contains("test-command"),
        ".ci/run reads the README's command"
    );
}
