//! What the live differential tests (istioctl analyze against mesh-doctor analyze on the same
//! cluster) share: the findings of a JSON answer as comparable triples, and istioctl's run.

use std::collections::BTreeSet;

use super::{TestEnv, cached_binary};

/// (code, origin, message) of every finding.
pub type Found = BTreeSet<(String, String, String)>;

/// The findings of an `-o json` answer (istioctl's or ours); `what` names it in a panic.
pub fn findings(json: &str, what: &str) -> Found {
    let items: Vec<serde_json::Value> =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {json}"));
    items
        .iter()
        .filter(|i| i.get("code").is_some())
        .map(|i| {
            (
                i["code"].as_str().unwrap_or_default().to_string(),
                i["origin"].as_str().unwrap_or_default().to_string(),
                i["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// `istioctl analyze ARGS -o json` on the test cluster (exit 0 or 79), as findings.
pub fn istioctl_analyze(env: &TestEnv, args: &[&str]) -> Found {
    let binary = cached_binary("istioctl-").expect("no istioctl: run testenv/build.sh --istio");
    let out = std::process::Command::new(binary)
        .arg("analyze")
        .args(args)
        .args(["-o", "json"])
        .env("KUBECONFIG", &env.kubeconfig)
        .output()
        .expect("istioctl runs");
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 79),
        "istioctl analyze failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    findings(&String::from_utf8_lossy(&out.stdout), "istioctl")
}
