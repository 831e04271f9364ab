//! The command-line vocabulary as a user meets it (docs/cli.md), offline: help, deprecated
//! spellings, logs and --color, kubeconfig loading and its advice, `codes` output.

use std::path::Path;
use std::process::Command;

use crate::common::{Run, binary};

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(binary());
    cmd.args(args)
        .env_remove("KUBECONFIG")
        .env_remove("NO_COLOR")
        .env_remove("MESH_DOCTOR_LOG")
        .env("HOME", "/nonexistent");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::from(cmd.output().unwrap())
}

fn run(args: &[&str]) -> Run {
    run_env(args, &[])
}

/// A kubeconfig whose server refuses connections (port 1 on loopback).
fn unreachable_kubeconfig(dir: &Path) -> String {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\ncurrent-context: local\n\
         clusters:\n- name: local\n  cluster: {server: 'https://127.0.0.1:1'}\n\
         contexts:\n- name: local\n  context: {cluster: local, user: me, namespace: shop}\n\
         users:\n- name: me\n  user: {token: x}\n",
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn kubeconfig_flags_only_where_a_cluster_is_read() {
    for args in [
        &["codes", "--help"][..],
        &["bootstrap", "validate", "--help"],
    ] {
        let r = run(args);
        assert_eq!(r.code, 0);
        assert!(!r.stdout.contains("--kubeconfig"), "{args:?}");
        assert!(!r.stdout.contains("--as <USER>"), "{args:?}");
    }
    for args in [
        &["analyze", "--help"][..],
        &["pod", "--help"],
        &["proxy-status", "--help"],
        &["bootstrap", "explain", "--help"],
        &["version", "--help"],
    ] {
        let r = run(args);
        let heading = r.stdout.find("Kubeconfig options:").expect("heading");
        let flag = r.stdout.find("--kubeconfig <PATH>").expect("flag");
        assert!(
            flag > heading,
            "{args:?}: the kubeconfig flags are under their heading"
        );
        assert!(r.stdout.contains("Output options:"), "{args:?}");
    }
    let r = run(&["codes", "--kubeconfig", "x"]);
    assert_eq!(r.code, 64);
    // Given before the command name, as kubectl users type them, they still work.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = unreachable_kubeconfig(dir.path());
    let r = run(&["--kubeconfig", &kubeconfig, "version"]);
    assert_eq!(r.code, 69, "{}", r.stderr);
    assert!(r.stdout.starts_with("client version: "), "{}", r.stdout);
}

#[test]
fn help_lists_values_and_help_subcommand_works() {
    let r = run(&["help", "pod"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("[possible values: Info, Warning, Error]"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("--no-probe"), "{}", r.stdout);
    let r = run(&["help", "bootstrap", "validate"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("[default: Warning]"), "{}", r.stdout);
    for line in r.stdout.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    let r = run(&["help", "nope"]);
    assert_eq!(r.code, 64);
}

#[test]
fn deprecated_spellings_work_and_say_so() {
    let r = run(&["codes", "-o", "table"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("IST0103"));
    assert_eq!(
        r.stderr,
        "deprecated: -o table is deprecated and will be removed in the next release: use -o text\n"
    );
    let r = run(&["codes", "--output=table"]);
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("use -o text"));
}

#[test]
fn codes_lines_are_not_padded() {
    let r = run(&["codes"]);
    assert_eq!(r.code, 0);
    for line in r.stdout.lines() {
        assert_eq!(line, line.trim_end(), "trailing spaces");
    }
    let json = run(&["codes", "-o", "json"]);
    assert!(
        json.stdout.starts_with("[\n  {\n    \"code\""),
        "{}",
        json.stdout
    );
    let yaml = run(&["codes", "-o", "yaml"]);
    assert!(yaml.stdout.starts_with("- code: IST0"), "{}", yaml.stdout);
}

#[test]
fn logs_honour_color_and_print_values() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = unreachable_kubeconfig(dir.path());
    let args = [
        "analyze",
        "-v",
        "--kubeconfig",
        &kubeconfig,
        "-n",
        "ux-crash",
        "--color",
        "never",
    ];
    let r = run_env(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(r.stderr.contains("namespace=ux-crash"), "{}", r.stderr);
    assert!(!r.stderr.contains("Some("), "{}", r.stderr);
    assert!(
        !r.stderr.contains('\u{1b}'),
        "no ANSI escapes with --color never: {:?}",
        r.stderr
    );
    let mut always = args.to_vec();
    always[7] = "always";
    let r = run(&always);
    assert!(r.stderr.contains('\u{1b}'), "{:?}", r.stderr);
}

#[test]
fn kubeconfig_list_is_merged_as_kubectl_merges_it() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = unreachable_kubeconfig(dir.path());
    let list = format!("/nonexistent/kubeconfig:{kubeconfig}");
    // The missing file is skipped: the real one is used (and its server is unreachable: 69).
    let r = run_env(&["version"], &[("KUBECONFIG", &list)]);
    assert_eq!(r.code, 69, "{}", r.stderr);
    assert!(r.stderr.contains("127.0.0.1:1"), "{}", r.stderr);
    // An unknown context: the contexts there are, and advice that fits the command.
    let r = run_env(
        &["pod", "web", "--context", "nope"],
        &[("KUBECONFIG", &list)],
    );
    assert_eq!(r.code, 64);
    assert!(
        r.stderr
            .contains("context \"nope\" is not in the kubeconfig (its contexts: local)"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("--use-kube"), "{}", r.stderr);
    // No file at all.
    let r = run_env(
        &["pod", "web"],
        &[("KUBECONFIG", "/nonexistent/a:/nonexistent/b")],
    );
    assert_eq!(r.code, 64);
    assert!(
        r.stderr
            .contains("none of /nonexistent/a, /nonexistent/b exists"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("-f FILE"), "{}", r.stderr);
    // analyze can do without a cluster, and says how.
    let r = run_env(&["analyze"], &[("KUBECONFIG", "/nonexistent/a")]);
    assert_eq!(r.code, 64);
    assert!(r.stderr.contains("-f FILE"), "{}", r.stderr);
}
