//! The live differential test of the security, telemetry and extensions analyzers (issue 14):
//! on the test cluster (with Istio's CRDs, applied by `testenv/istiod-up.sh`), scenario
//! namespaces `sec-…` with broken AuthorizationPolicies, PeerAuthentications,
//! RequestAuthentications, Telemetries and WasmPlugins. For each, `analyze -n NS -o json` gives
//! the findings of these analyzers that `istioctl analyze -n NS -o json` gives (code, origin,
//! message; the scenario pods' injection findings are left to tests/it/e2e_analyze.rs) except the
//! documented difference (a selector that matches a Deployment's pod template is not reported:
//! docs/compat.md, "Security and telemetry"), and the same manifests given as files give the
//! same findings as the cluster.
//!
//! The scenarios hold only what the CRDs' own validation accepts: the API server rejects most
//! broken RequestAuthentications and WasmPlugins before Istio's rules could see them (those
//! rules are tested on files, tests/it/security_cli.rs).

use crate::common;

use common::differential::{Found, findings, istioctl_analyze};
use common::{TestEnv, cached_binary, testenv, unique};

/// One test at a time: the IST0175 test puts an istiod Deployment into `istio-system` for a
/// moment, which the other tests' runs would see (MD0201 for every namespace).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The codes of the security, telemetry and extensions analyzers.
const CODES: &[&str] = &[
    "IST0002", "IST0101", "IST0106", "IST0127", "IST0133", "IST0157", "IST0159", "IST0160",
    "IST0175",
];

/// Applies a scenario (its own Namespace included) and compares. `template_only` names the
/// objects whose selector matches only a workload template: istioctl reports them (`code`),
/// mesh-doctor does not.
/// `istioctl analyze -n NAMESPACE`.
fn istioctl(env: &TestEnv, namespace: &str) -> Found {
    istioctl_analyze(env, &["-n", namespace])
}

fn compare(env: &TestEnv, file: &str, template_only: &[(&str, &str)]) {
    let text = std::fs::read_to_string(format!("tests/fixtures/security/{file}")).unwrap();
    let ns = unique("sec");
    let manifest = text.replace("__NS__", &ns);
    env.apply(&manifest);

    // The findings of these analyzers about the scenario's objects. The injection findings of
    // its pods (IST0103, MD0103...) depend on the injection webhooks other tests leave on the
    // cluster; tests/it/e2e_analyze.rs compares those.
    let in_namespace = |f: Found| -> Found {
        f.into_iter()
            .filter(|(code, origin, _)| {
                CODES.contains(&code.as_str()) && origin.contains(&format!(" {ns}/"))
            })
            .collect()
    };
    let theirs = in_namespace(istioctl(env, &ns));
    let run = env.mesh_doctor(&["analyze", "-n", &ns, "-o", "json"]);
    assert!(run.code == 0 || run.code == 79, "{file}: {}", run.stderr);
    let ours = in_namespace(findings(&run.stdout, "mesh-doctor live"));
    assert!(
        !theirs.is_empty(),
        "{file}: istioctl found nothing; is the scenario applied?"
    );
    let documented: Found = theirs
        .iter()
        .filter(|(code, origin, _)| {
            template_only
                .iter()
                .any(|(c, o)| code == c && *origin == o.replace("__NS__", &ns))
        })
        .cloned()
        .collect();
    assert_eq!(
        documented.len(),
        template_only.len(),
        "{file}: istioctl no longer reports the template-only selectors: {theirs:#?}"
    );
    let expected: Found = theirs.difference(&documented).cloned().collect();
    let missing: Vec<_> = expected.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{file}: live analyze differs from istioctl\n  missing: {missing:#?}\n  extra: {extra:#?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file.replace('/', "-"));
    std::fs::write(&path, &manifest).unwrap();
    let run = env.mesh_doctor(&["analyze", "-f", path.to_str().unwrap(), "-o", "json"]);
    assert!(run.code == 0 || run.code == 79, "{file}: {}", run.stderr);
    let from_file = in_namespace(findings(&run.stdout, "mesh-doctor files"));
    assert_eq!(
        from_file, ours,
        "{file}: the files give other findings than the cluster"
    );
}

#[test]
#[ignore = "needs the test cluster with Istio's CRDs: scripts/test-all.sh"]
fn broken_authorization_and_authentication_live_equal_istioctl() {
    let _serial = serial();
    compare(
        &testenv(),
        "scenarios/authz.yaml",
        &[("IST0127", "AuthorizationPolicy __NS__/not-yet")],
    );
}

#[test]
#[ignore = "needs the test cluster with Istio's CRDs: scripts/test-all.sh"]
fn broken_telemetry_and_wasm_plugins_live_equal_istioctl() {
    let _serial = serial();
    compare(
        &testenv(),
        "scenarios/telemetry.yaml",
        &[("IST0101", "Telemetry __NS__/batch-not-yet")],
    );
}

/// The manifests the CRDs would reject, and istiod's JWKS check, on files: istioctl's file
/// mode (`--use-kube=false`) applies the same rules, so both print the same lines.
#[test]
#[ignore = "needs istioctl: testenv/build.sh --istio (scripts/test-all.sh)"]
fn schema_rules_on_files_equal_istioctl() {
    let _serial = serial();
    let binary = cached_binary("istioctl-").expect("no istioctl: run testenv/build.sh --istio");
    for file in [
        "tests/fixtures/security/invalid.yaml",
        "tests/fixtures/security/blocked-cidrs.yaml",
        "tests/fixtures/security/schema-cases.yaml",
    ] {
        let out = std::process::Command::new(&binary)
            .args(["analyze", "--use-kube=false", "-A", "-o", "json", file])
            .output()
            .expect("istioctl runs");
        let theirs = findings(&String::from_utf8_lossy(&out.stdout), "istioctl");
        let ours = assert_cmd::Command::cargo_bin("kubectl-mesh_doctor")
            .unwrap()
            .env_remove("KUBECONFIG")
            .args(["analyze", "-f", file, "-o", "json"])
            .output()
            .unwrap();
        // istioctl's file mode drops Pods and Namespaces, so it skips the analyzers that need
        // them (auth.AuthorizationPoliciesAnalyzer); mesh-doctor runs them (docs/compat.md).
        // MD0003 (the CRD schema's rejections, which istioctl does not check) is proven against
        // the API server in tests/it/e2e_dry_run.rs.
        let ours: Found = findings(&String::from_utf8_lossy(&ours.stdout), "mesh-doctor")
            .into_iter()
            .filter(|(code, origin, _)| {
                !(origin.starts_with("AuthorizationPolicy ")
                    && (code == "IST0101" || code == "IST0127"))
                    && code != "MD0003"
            })
            .collect();
        assert!(!theirs.is_empty(), "{file}: istioctl found nothing");
        assert_eq!(ours, theirs, "{file}");
    }
}

/// A user who may read everything the shipped role names except Telemetries: the Telemetry
/// analyzers are skipped and said so, and the run is incomplete (exit 69), never green.
#[test]
#[ignore = "needs the test cluster with Istio's CRDs: scripts/test-all.sh"]
fn forbidden_telemetries_are_said_and_never_green() {
    let _serial = serial();
    let env = testenv();
    let ns = unique("sec");
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}, labels: {{istio-injection: enabled}}}}\n---\n\
         apiVersion: telemetry.istio.io/v1\nkind: Telemetry\nmetadata: {{name: logs, namespace: {ns}}}\n\
         spec:\n  accessLogging: [{{filter: {{expression: \"response.code >= 400\"}}}}]\n"
    ));
    // With the permission: IST0157, exit 79.
    let run = env.mesh_doctor(&["analyze", "-n", &ns, "--no-probe"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("[IST0157]"), "{}", run.stdout);

    // The shipped role without its telemetry.istio.io rule.
    let role = std::fs::read_to_string("docs/rbac.yaml")
        .unwrap()
        .replace("name: mesh-doctor-readonly", &format!("name: {ns}-role"))
        .replace(
            "- apiGroups: [telemetry.istio.io]\n  resources: [telemetries]\n  verbs: [get, list, watch]\n",
            "",
        );
    assert!(
        !role.contains("telemetries"),
        "the rule was not removed:\n{role}"
    );
    env.apply(&role);
    env.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {ns}-role}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {ns}-role}}\n\
         subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {ns}-user}}]\n"
    ));
    let user = format!("{ns}-user");
    // Other tests leave overlapping injector configurations on the shared cluster; their IST0139
    // (cluster-scoped, reported in every namespace) would reach the threshold.
    let run = env.mesh_doctor(&[
        "analyze",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &user,
        "--suppress",
        "IST0139=*",
    ]);
    assert_eq!(run.code, 69, "{}\n{}", run.stdout, run.stderr);
    for analyzer in [
        "telemetry.ProviderAnalyzer",
        "telemetry.SelectorAnalyzer",
        "telemetry.DefaultSelectorAnalyzer",
        "schema.ValidationAnalyzer.Telemetry",
    ] {
        assert!(
            run.stderr.contains(&format!(
                "skipped {analyzer}: it needs telemetries, which could not be listed"
            )),
            "{analyzer}: {}",
            run.stderr
        );
    }
    assert!(
        !run.stderr.contains("No validation issues"),
        "{}",
        run.stderr
    );
    // The shipped role reads them: the finding, and no denial.
    env.apply(&std::fs::read_to_string("docs/rbac.yaml").unwrap());
    env.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {ns}-reader}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: mesh-doctor-readonly}}\n\
         subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {ns}-reader}}]\n"
    ));
    let reader = format!("{ns}-reader");
    let run = env.mesh_doctor(&["analyze", "-n", &ns, "--no-probe", "--as", &reader]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("[IST0157]"), "{}", run.stdout);
    assert!(!run.stderr.contains("cannot list"), "{}", run.stderr);
}

/// Deletes the istiod Deployment a test created in `istio-system`, even when the test fails.
struct Cleanup<'e>(&'e TestEnv, String);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl_run(
            &[
                "delete",
                "deployment",
                "-n",
                "istio-system",
                &self.1,
                "--wait=false",
            ],
            None,
        );
    }
}

/// IST0175 is about istiod's Deployment: `-n istio-system` gives it in both tools, with the
/// same count and names of every RequestAuthentication of the cluster; configured, neither.
#[test]
#[ignore = "needs the test cluster with Istio's CRDs: scripts/test-all.sh"]
fn jwks_fetches_without_blocked_cidrs_live_equal_istioctl() {
    let _serial = serial();
    let env = testenv();
    let ns = unique("sec");
    let istiod = format!("{ns}-istiod");
    let deployment = |env_var: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {istiod}, namespace: istio-system, labels: {{app: istiod}}}}\n\
             spec:\n  replicas: 0\n  selector: {{matchLabels: {{app: {istiod}}}}}\n  template:\n    metadata: {{labels: {{app: {istiod}}}}}\n\
             \x20   spec: {{containers: [{{name: discovery, image: example/pilot:1, env: [{{name: {env_var}, value: \"10.0.0.0/8\"}}]}}]}}\n"
        )
    };
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
         apiVersion: security.istio.io/v1\nkind: RequestAuthentication\nmetadata: {{name: jwt, namespace: {ns}}}\n\
         spec:\n  jwtRules: [{{issuer: \"https://issuer.example.com\", jwksUri: \"https://issuer.example.com/jwks.json\"}}]\n"
    ));
    let _cleanup = Cleanup(&env, istiod.clone());
    // istioctl names the RequestAuthentications in an order that changes between runs (and
    // only five of them); mesh-doctor sorts them. Compare the names as a set, or not at all
    // when some are left out.
    let about_it = |f: Found| -> Found {
        f.into_iter()
            .filter(|(code, origin, _)| {
                code == "IST0175" && *origin == format!("Deployment istio-system/{istiod}")
            })
            .map(|(code, origin, message)| {
                let (head, rest) = message.split_once(" (").unwrap();
                let (names, tail) = rest.split_once("). ").unwrap();
                let names = if names.contains(", and ") {
                    "…".to_string()
                } else {
                    let mut list: Vec<&str> = names.split(", ").collect();
                    list.sort();
                    list.join(", ")
                };
                (code, origin, format!("{head} ({names}). {tail}"))
            })
            .collect()
    };
    let ours_of = |env: &TestEnv| {
        let run = env.mesh_doctor(&["analyze", "-n", "istio-system", "-o", "json"]);
        assert!(run.code == 0 || run.code == 79, "{}", run.stderr);
        about_it(findings(&run.stdout, "mesh-doctor"))
    };

    env.apply(&deployment("PILOT_ENABLE_ANALYSIS"));
    let theirs = about_it(istioctl(&env, "istio-system"));
    assert_eq!(theirs.len(), 1, "istioctl: {theirs:?}");
    assert_eq!(ours_of(&env), theirs);

    env.apply(&deployment("BLOCKED_CIDRS_IN_JWKS_URIS"));
    assert!(about_it(istioctl(&env, "istio-system")).is_empty());
    assert!(ours_of(&env).is_empty());
}
