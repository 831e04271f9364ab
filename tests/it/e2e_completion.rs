//! `kubectl mesh-doctor <TAB>` in bash, against the real test cluster: kubectl's own bash
//! completion (`kubectl completion bash`, kubectl 1.26+) runs `kubectl_complete-mesh_doctor` from
//! PATH, which asks `kubectl-mesh_doctor __complete`; commands, flags, namespaces and pod names
//! come back through bash's `complete -p kubectl` function into COMPREPLY. kubectl's script needs
//! the bash-completion package (scripts/test-all.sh installs it).

const BASH_COMPLETION: &str = "/usr/share/bash-completion/bash_completion";

use crate::common;

use std::path::Path;
use std::process::Command;

/// A PATH holding kubectl, the plugin and its completion script; then bash completes `line`
/// (its last word is the one completed) through kubectl's completion function.
fn complete(env: &common::TestEnv, dir: &Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source {BASH_COMPLETION}\n\
         source <(kubectl completion bash)\n\
         spec=$(complete -p kubectl) || exit 3\n\
         fn=$(sed -E 's/.*-F ([^ ]+).*/\\1/' <<<\"$spec\")\n\
         COMP_WORDS=(kubectl mesh-doctor {words})\n\
         COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         \"$fn\" kubectl \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = words.join(" ")
    );
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(program)
        .env("PATH", path)
        .env("KUBECONFIG", &env.kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn kubectl_mesh_doctor_tab_completes_commands_flags_and_pods() {
    let env = common::testenv();
    assert!(
        Path::new(BASH_COMPLETION).exists(),
        "{BASH_COMPLETION} is missing: apt-get install bash-completion (scripts/test-all.sh does)"
    );
    let ns = format!("e2e-completion-{}", std::process::id());
    env.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: web-7d4b9, namespace: {ns}}}\n\
         spec:\n  nodeName: kwok-node-0\n  containers: [{{name: app, image: app}}]\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {{name: worker-1, namespace: {ns}}}\n\
         spec:\n  nodeName: kwok-node-0\n  containers: [{{name: app, image: app}}]\n"
    ));

    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&env.kubectl, dir.path().join("kubectl")).unwrap();
    std::os::unix::fs::symlink(common::binary(), dir.path().join("kubectl-mesh_doctor")).unwrap();
    let script = Command::new(common::binary())
        .args(["completion", "kubectl"])
        .output()
        .unwrap();
    let script_path = dir.path().join("kubectl_complete-mesh_doctor");
    std::fs::write(&script_path, &script.stdout).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script_path, std::fs::Permissions::from_mode(0o755)).unwrap();

    let commands = complete(&env, dir.path(), &[""]);
    for c in ["analyze", "pod", "proxy-status", "bootstrap", "version"] {
        assert!(commands.contains(&c.to_string()), "{c}: {commands:?}");
    }
    let flags = complete(&env, dir.path(), &["pod", "--no"]);
    assert_eq!(flags, ["--no-probe"]);
    let namespaces = complete(&env, dir.path(), &["pod", "-n", "e2e-compl"]);
    assert!(namespaces.contains(&ns), "{namespaces:?}");
    assert!(
        namespaces.iter().all(|n| n.starts_with("e2e-compl")),
        "{namespaces:?}"
    );
    let pods = complete(&env, dir.path(), &["pod", "-n", &ns, ""]);
    assert_eq!(pods, ["web-7d4b9", "worker-1"]);
    let pods = complete(&env, dir.path(), &["-n", &ns, "bootstrap", "explain", "we"]);
    assert_eq!(pods, ["web-7d4b9"]);

    env.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
}
