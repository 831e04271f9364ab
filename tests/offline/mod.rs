//! The offline CLI tests' one way to run the binary: no kubeconfig, no colour; returns stdout,
//! stderr and the exit code.

use assert_cmd::Command;

pub fn run(args: &[&str]) -> (String, String, i32) {
    let out = Command::cargo_bin("kubectl-mesh_doctor")
        .unwrap()
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap_or(-1),
    )
}
