//! Shared helpers for the end-to-end tests that run against the real test cluster
//! (etcd + kube-apiserver + kwok) that `scripts/test-all.sh` starts with `testenv/up.sh`.
//!
//! The tests are `#[ignore]`d, so `cargo test` runs only the offline tests; the full command
//! runs them with `--include-ignored`. They find the cluster through `MESH_DOCTOR_TESTENV`
//! (its state directory) and fail with a clear message when it is not set.
#![allow(dead_code)]

pub mod differential;
pub mod real;
pub mod suite;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The running test cluster.
pub struct TestEnv {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub kubectl: PathBuf,
}

/// The test cluster started by `testenv/up.sh`; panics with instructions when there is none.
pub fn testenv() -> TestEnv {
    suite::enter();
    let dir = std::env::var_os("MESH_DOCTOR_TESTENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "MESH_DOCTOR_TESTENV is not set: end-to-end tests need the test cluster. \
             Run scripts/test-all.sh, or `eval \"$(testenv/up.sh)\"` and \
             MESH_DOCTOR_TESTENV=$TESTENV_DIR cargo test -- --include-ignored"
            )
        });
    let kubeconfig = dir.join("kubeconfig");
    assert!(
        kubeconfig.exists(),
        "{} does not exist: is the test cluster up?",
        kubeconfig.display()
    );
    let kubectl = std::env::var_os("TESTENV_KUBECTL")
        .map(PathBuf::from)
        .or_else(|| find_cached("kubectl-"))
        .expect("no kubectl: run testenv/build.sh or set TESTENV_KUBECTL");
    TestEnv {
        dir,
        kubeconfig,
        kubectl,
    }
}

/// A binary the test environment built into ~/.cache/mesh-doctor/bin (`istioctl-`, ...).
pub fn cached_binary(prefix: &str) -> Option<PathBuf> {
    find_cached(prefix)
}

fn find_cached(prefix: &str) -> Option<PathBuf> {
    let cache = std::env::var_os("MESH_DOCTOR_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/mesh-doctor")
        });
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join("bin"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    found.sort();
    found.pop()
}

/// What a command printed and how it ended.
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }
}

impl TestEnv {
    /// Runs the real kubectl against the test cluster; panics if it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let run = self.kubectl_run(args, None);
        assert_eq!(run.code, 0, "kubectl {args:?} failed: {}", run.stderr);
        run.stdout
    }

    pub fn kubectl_run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        run(cmd, stdin)
    }

    /// `kubectl apply -f -` with a YAML text.
    pub fn apply(&self, yaml: &str) {
        let run = self.kubectl_run(&["apply", "-f", "-"], Some(yaml));
        assert_eq!(run.code, 0, "kubectl apply failed: {}\n{yaml}", run.stderr);
    }

    /// Runs mesh-doctor against the test cluster.
    pub fn mesh_doctor(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(binary());
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .env("NO_COLOR", "1")
            .args(args);
        run(cmd, None)
    }

    /// Waits until a pod reports the given phase (kwok sets statuses asynchronously).
    pub fn wait_for_phase(&self, namespace: &str, pod: &str, phase: &str) {
        for _ in 0..100 {
            let got = self.kubectl_run(
                &[
                    "get",
                    "pod",
                    pod,
                    "-n",
                    namespace,
                    "-o",
                    "jsonpath={.status.phase}",
                ],
                None,
            );
            if got.stdout == phase {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!("pod {namespace}/{pod} never reached phase {phase}");
    }
}

/// The mesh-doctor binary cargo built for these tests.
pub fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kubectl-mesh_doctor"))
}

fn run(mut cmd: Command, stdin: Option<&str>) -> Run {
    use std::io::Write;
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("command starts");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap().into()
}

/// A name unique to this test run, so tests never collide (the test cluster cannot delete
/// namespaces: it has no controller manager).
pub fn unique(prefix: &str) -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{:05x}", (nanos ^ std::process::id()) & 0xfffff)
}

/// server, CA file and token of a testenv kubeconfig.
pub fn credentials(kubeconfig: &Path) -> (String, String, String) {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let doc = &mesh_doctor::formats::yaml::parse_stream(&text).unwrap()[0].value;
    let cluster = &doc["clusters"][0]["cluster"];
    (
        cluster["server"].as_str().unwrap().to_string(),
        cluster["certificate-authority"]
            .as_str()
            .unwrap()
            .to_string(),
        doc["users"][0]["user"]["token"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// One kubeconfig with a context per (name, kubeconfig).
pub fn merged_kubeconfig(dir: &Path, contexts: &[(&str, &Path)]) -> PathBuf {
    let mut clusters = String::new();
    let mut users = String::new();
    let mut entries = String::new();
    for (name, kubeconfig) in contexts {
        let (server, ca, token) = credentials(kubeconfig);
        clusters.push_str(&format!(
            "- name: {name}\n  cluster: {{server: \"{server}\", certificate-authority: \"{ca}\"}}\n"
        ));
        users.push_str(&format!("- name: {name}\n  user: {{token: \"{token}\"}}\n"));
        entries.push_str(&format!(
            "- name: {name}\n  context: {{cluster: {name}, user: {name}, namespace: default}}\n"
        ));
    }
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n{clusters}users:\n{users}contexts:\n{entries}current-context: {}\n",
            contexts[0].0
        ),
    )
    .unwrap();
    path
}
