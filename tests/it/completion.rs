//! Shell completion and man pages, offline: clap_complete's bash script through bash's own
//! `complete -p` and the completion function, the kubectl plugin protocol (`__complete`), the
//! kubectl_complete-mesh_doctor script, and the man pages. Pod names from a cluster are in
//! e2e_completion.rs.

use std::process::Command;

use crate::offline::{mesh_doctor, output};

/// The binary with no home directory either (so no kubeconfig is found there).
fn run(args: &[&str]) -> (String, String, i32) {
    output(mesh_doctor().args(args).env("HOME", "/nonexistent"))
}

/// Sources `completion bash`, checks `complete -p`, then asks the completion function for the
/// candidates of a command line (its last word is the one completed) as bash would on TAB.
fn bash_complete(line: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let (script, _, code) = run(&["completion", "bash"]);
    assert_eq!(code, 0);
    let path = dir.path().join("completion.bash");
    std::fs::write(&path, script).unwrap();
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source {}\n\
         spec=$(complete -p kubectl-mesh_doctor) || exit 3\n\
         fn=$(sed -E 's/.*-F ([^ ]+).*/\\1/' <<<\"$spec\")\n\
         COMP_WORDS=(kubectl-mesh_doctor {words})\n\
         COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         \"$fn\" kubectl-mesh_doctor \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        path.display(),
        words = words.join(" ")
    );
    let out = Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(program)
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
fn bash_completes_commands_and_flags() {
    let commands = bash_complete(&[""]);
    for c in [
        "analyze",
        "pod",
        "proxy-status",
        "bootstrap",
        "completion",
        "codes",
    ] {
        assert!(commands.contains(&c.to_string()), "{c}: {commands:?}");
    }
    let flags = bash_complete(&["pod", "--"]);
    for f in [
        "--no-probe",
        "--failure-threshold",
        "--namespace",
        "--output",
    ] {
        assert!(flags.contains(&f.to_string()), "{f}: {flags:?}");
    }
    // codes reads no cluster: no kubeconfig flags to complete.
    let flags = bash_complete(&["codes", "--"]);
    assert!(!flags.contains(&"--kubeconfig".to_string()), "{flags:?}");
    let values = bash_complete(&["analyze", "-o", ""]);
    assert_eq!(values, ["text", "log", "json", "yaml", "sarif", "junit"]);
}

#[test]
fn every_shell_has_a_script() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let (stdout, stderr, code) = run(&["completion", shell]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        assert!(stdout.contains("kubectl-mesh_doctor"), "{shell}");
        assert!(stdout.contains("proxy-status"), "{shell}");
    }
    let (stdout, _, code) = run(&["completion", "kubectl"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("#!/bin/sh\n"));
    assert!(
        stdout.contains("exec kubectl-mesh_doctor __complete \"$@\""),
        "{stdout}"
    );
    let (_, stderr, code) = run(&["completion", "tcsh"]);
    assert_eq!(code, 64);
    assert!(
        stderr.contains("[possible values: bash, zsh, fish, powershell, kubectl]"),
        "{stderr}"
    );
}

#[test]
fn kubectl_plugin_protocol() {
    // What kubectl runs: kubectl_complete-mesh_doctor WORDS... (the script execs __complete).
    let (stdout, _, code) = run(&["__complete", ""]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.last(), Some(&":4"), "{stdout}");
    assert!(
        lines.contains(&"analyze") && lines.contains(&"pod"),
        "{stdout}"
    );
    assert!(!lines.iter().any(|l| l.starts_with("__")), "{stdout}");
    let (stdout, _, _) = run(&["__complete", "pro"]);
    assert_eq!(stdout, "proxy-status\n:4\n");
    let (stdout, _, _) = run(&["__complete", "pod", "--no"]);
    assert_eq!(stdout, "--no-probe\n:4\n");
    let (stdout, _, _) = run(&["__complete", "analyze", "--failure-threshold", ""]);
    assert_eq!(stdout, "Info\nWarning\nError\n:4\n");
    // A file argument: the shell completes file names (directive 0).
    let (stdout, _, _) = run(&["__complete", "bootstrap", "validate", ""]);
    assert_eq!(stdout, ":0\n");
    // Pod names need a cluster: without a kubeconfig, none, and no error.
    let (stdout, stderr, code) = run(&["__complete", "pod", ""]);
    assert_eq!((stdout.as_str(), code), (":4\n", 0), "{stderr}");
}

#[test]
fn help_subcommand_and_man_pages() {
    let (help, _, code) = run(&["help", "analyze"]);
    assert_eq!(code, 0);
    let (direct, _, _) = run(&["analyze", "--help"]);
    assert_eq!(help, direct);
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr, code) = run(&["__man", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    for page in [
        "kubectl-mesh_doctor.1",
        "kubectl-mesh_doctor-analyze.1",
        "kubectl-mesh_doctor-bootstrap-validate.1",
        "kubectl-mesh_doctor-proxy-status.1",
        "kubectl-mesh_doctor-completion.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_default();
        assert!(
            text.starts_with(".ie") || text.contains(".TH"),
            "{page}: {text:.200}"
        );
    }
    let root = std::fs::read_to_string(dir.path().join("kubectl-mesh_doctor-pod.1")).unwrap();
    assert!(root.contains("no\\-probe"), "{root:.400}");
}
