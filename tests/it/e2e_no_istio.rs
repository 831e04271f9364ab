//! Live, on a cluster without Istio's CRDs: `analyze` says that Istio is not installed (MD0206,
//! an Error, exit 79) instead of "no issues", while `istioctl analyze` exits 0 there.
//!
//! The cluster is `MESH_DOCTOR_TESTENV_NO_ISTIO`, else `MESH_DOCTOR_TESTENV_SECOND` (the second
//! cluster scripts/test-all.sh starts with `testenv/up.sh` alone, which applies no Istio CRDs).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{binary, cached_binary};

fn cluster() -> PathBuf {
    common::suite::enter();
    let dir = std::env::var_os("MESH_DOCTOR_TESTENV_NO_ISTIO")
        .or_else(|| std::env::var_os("MESH_DOCTOR_TESTENV_SECOND"))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "needs a test cluster without Istio's CRDs: set MESH_DOCTOR_TESTENV_NO_ISTIO to the \
                 state directory of `TESTENV_NAME=<name> testenv/up.sh` (no istiod-up.sh), or run \
                 scripts/test-all.sh"
            )
        });
    let kubeconfig = dir.join("kubeconfig");
    assert!(
        kubeconfig.exists(),
        "{} does not exist",
        kubeconfig.display()
    );
    kubeconfig
}

fn kubectl() -> PathBuf {
    std::env::var_os("TESTENV_KUBECTL")
        .map(PathBuf::from)
        .or_else(|| cached_binary("kubectl-"))
        .expect("no kubectl: run testenv/build.sh")
}

#[test]
#[ignore = "needs a test cluster without Istio's CRDs"]
fn a_cluster_without_istio_crds_is_a_finding_not_a_green_run() {
    let kubeconfig = cluster();
    let crds = Command::new(kubectl())
        .args(["get", "crd", "-o", "name"])
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .expect("kubectl runs");
    let crds = String::from_utf8_lossy(&crds.stdout);
    assert!(
        !crds.contains("networking.istio.io"),
        "this cluster has Istio's CRDs, so it cannot show the case: {crds}"
    );

    let out = Command::new(binary())
        .args([
            "analyze",
            "-A",
            "-o",
            "json",
            "--failure-threshold",
            "Error",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("NO_COLOR", "1")
        .output()
        .expect("mesh-doctor runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(79), "{stdout}\n{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("JSON");
    let md0206: Vec<&serde_json::Value> = items.iter().filter(|i| i["code"] == "MD0206").collect();
    assert_eq!(md0206.len(), 1, "{stdout}");
    assert_eq!(md0206[0]["level"], "Error");
    let message = md0206[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Istio is not installed in cluster ")
            && message
                .contains("serves none of Istio's networking.istio.io kinds (VirtualService,"),
        "{message}"
    );

    // The text output says it too, and the run fails.
    let out = Command::new(binary())
        .args(["analyze", "-A"])
        .env("KUBECONFIG", &kubeconfig)
        .env("NO_COLOR", "1")
        .output()
        .expect("mesh-doctor runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(79));
    // (Other tests' objects on the shared cluster may give Errors that sort before it.)
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Error [MD0206] Istio is not installed")),
        "{stdout}"
    );
    assert!(!stdout.contains("No validation issues found"), "{stdout}");

    // istioctl, on the same cluster, exits 0 (the difference docs/codes/MD0206.md describes).
    if let Some(istioctl) = cached_binary("istioctl-") {
        let out = Command::new(istioctl)
            .args(["analyze", "-A", "-o", "json"])
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .expect("istioctl runs");
        assert_eq!(out.status.code(), Some(0));
    }
}
