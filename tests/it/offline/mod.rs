//! The offline CLI tests' one way to run the binary: no kubeconfig, no colour; what it printed
//! (as UTF-8, invalid bytes replaced) and its exit code (-1 when a signal ended it).

use assert_cmd::Command;

/// The binary with no kubeconfig (`KUBECONFIG` unset) and no colour; add args and env to it.
pub fn mesh_doctor() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-mesh_doctor").unwrap();
    cmd.env_remove("KUBECONFIG").env("NO_COLOR", "1");
    cmd
}

/// Runs `cmd` to its end: stdout, stderr and the exit code.
pub fn output(cmd: &mut Command) -> (String, String, i32) {
    let out = cmd.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `kubectl-mesh_doctor ARGS`, as [`mesh_doctor`] sets it up.
pub fn run(args: &[&str]) -> (String, String, i32) {
    output(mesh_doctor().args(args))
}

/// `kubectl-mesh_doctor ARGS` reading `stdin`.
pub fn run_with_stdin(args: &[&str], stdin: &str) -> (String, String, i32) {
    output(mesh_doctor().args(args).write_stdin(stdin))
}
