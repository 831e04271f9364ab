//! Hostile input, offline: a small generator of files made to hurt a parser (deep nesting, alias
//! bombs, huge and endless inputs, symlink loops, duplicate keys, bad UTF-8, absurd durations),
//! each run through the real binary under an address-space cap and a time limit. Every case must
//! end with its documented exit code and a one-line message naming the file and the problem —
//! never a crash, a hang or an out-of-memory. docs/reliability.md lists the cases.
//!
//! The budgets are parameters of the cases, not performance assertions: a case that needs more
//! than its budget is a bug (unbounded work), however fast the machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Run;

/// The address space each run may use (`ulimit -v`): far below the 8 GiB the inputs
/// reached, well above what a bounded run needs (threads reserve stacks and malloc arenas).
const MEMORY_BUDGET_MIB: u64 = 1024;
/// The time each run may take before it counts as a hang.
const TIME_BUDGET: Duration = Duration::from_secs(60);

/// Runs the binary under the memory budget (`ulimit -v` in a shell that then execs it) and the
/// time budget; a run past the time budget is killed and fails the test.
fn run_bounded(dir: &Path, args: &[&str], memory_mib: u64, time: Duration) -> Run {
    let binary = env!("CARGO_BIN_EXE_kubectl-mesh_doctor");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {} && exec \"$0\" \"$@\"",
            memory_mib * 1024
        ))
        .arg(binary)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > time {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} did not finish within {time:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = out.status.signal() {
        panic!(
            "{args:?} was killed by signal {signal} (a crash); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Run::from(out)
}

fn run(dir: &Path, args: &[&str]) -> Run {
    run_bounded(dir, args, MEMORY_BUDGET_MIB, TIME_BUDGET)
}

/// The hostile files.
mod generate {
    use std::fmt::Write;

    /// `depth` nested block sequences on one line: `- - - ... x`.
    pub fn deep_block_sequences(depth: usize) -> String {
        format!("{}x\n", "- ".repeat(depth))
    }

    /// `depth` nested block mappings, one per line.
    pub fn deep_block_mappings(depth: usize) -> String {
        let mut out = String::new();
        for i in 0..depth {
            let _ = writeln!(out, "{}k:", "  ".repeat(i));
        }
        out
    }

    /// `depth` `kind: List`s in block style, each the only item of the one around it.
    pub fn nested_lists(depth: usize) -> String {
        let mut out = String::new();
        for i in 0..depth {
            let pad = "  ".repeat(i);
            let dash = if i == 0 { "" } else { "- " };
            let inner = if i == 0 {
                String::new()
            } else {
                "  ".repeat(i - 1)
            };
            let _ = writeln!(out, "{inner}{dash}apiVersion: v1");
            let _ = writeln!(out, "{pad}kind: List");
            let _ = writeln!(out, "{pad}items:");
        }
        let pad = "  ".repeat(depth.saturating_sub(1));
        let _ = writeln!(
            out,
            "{pad}- {{apiVersion: v1, kind: Namespace, metadata: {{name: x}}}}"
        );
        out
    }

    /// The same as JSON.
    pub fn nested_lists_json(depth: usize) -> String {
        let mut out = String::new();
        for _ in 0..depth {
            out.push_str("{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [");
        }
        out.push_str(
            "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"x\"}}",
        );
        for _ in 0..depth {
            out.push_str("]}");
        }
        out.push('\n');
        out
    }

    /// `depth` nested flow sequences: `[[[...]]]`.
    pub fn deep_flow(depth: usize) -> String {
        format!("{}{}\n", "[".repeat(depth), "]".repeat(depth))
    }

    /// The "billion laughs": `levels` anchors, each a list of 9 aliases of the one before.
    pub fn alias_bomb(levels: usize) -> String {
        let mut out = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..=levels {
            let items = vec![format!("*a{}", i - 1); 9].join(", ");
            let _ = writeln!(out, "a{i}: &a{i} [{items}]");
        }
        out
    }

    /// A Service with two `ports:` keys.
    pub fn duplicate_ports() -> String {
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  ports:\n  - name: http\n    port: 80\n  selector:\n    app: web\n  ports:\n  - name: oops\n    port: 8080\n".into()
    }

    pub fn namespace() -> String {
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    istio-injection: enabled\n".into()
    }
}

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn assert_one_line_error(run: &Run, wants: &[&str]) {
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 1, "one error line expected:\n{}", run.stderr);
    for want in wants {
        assert!(
            errors[0].contains(want),
            "{want:?} missing from: {}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("No validation issues"),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------- item 1: deep nesting

#[test]
fn deep_block_sequences_are_65_not_a_stack_overflow() {
    let d = dir();
    write(d.path(), "d.yaml", &generate::deep_block_sequences(40_000));
    let run = run(d.path(), &["analyze", "-f", "d.yaml"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(&run, &["d.yaml:1:", "nests deeper than 128 levels"]);
}

#[test]
fn deep_block_mappings_are_65() {
    let d = dir();
    write(d.path(), "m.yaml", &generate::deep_block_mappings(5_000));
    let run = run(d.path(), &["analyze", "-f", "m.yaml"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(&run, &["m.yaml:129:", "nests deeper than 128 levels"]);
}

#[test]
fn nested_lists_are_65() {
    let d = dir();
    write(d.path(), "lists.yaml", &generate::nested_lists(200));
    let run = run(d.path(), &["analyze", "-f", "lists.yaml"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(&run, &["lists.yaml:", "nests deeper than 128 levels"]);
    // 20 levels load (the items of the innermost List).
    write(d.path(), "some.yaml", &generate::nested_lists(20));
    let run = self::run(d.path(), &["analyze", "-f", "some.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // As a .json file serde_json's own limit answers.
    write(d.path(), "lists.json", &generate::nested_lists_json(200));
    let run = self::run(d.path(), &["analyze", "-f", "lists.json"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(&run, &["lists.json:", "recursion limit exceeded"]);
}

#[test]
fn a_deep_bootstrap_is_a_syntax_finding() {
    let d = dir();
    write(
        d.path(),
        "deep.yaml",
        &generate::deep_block_sequences(200_000),
    );
    write(d.path(), "flow.yaml", &generate::deep_flow(200_000));
    write(d.path(), "deep.json", &generate::deep_flow(200_000));
    for (file, want) in [
        ("deep.yaml", "nests deeper than 128 levels"),
        ("flow.yaml", "recursion limit exceeded"),
        ("deep.json", "recursion limit exceeded"),
    ] {
        let run = run(d.path(), &["bootstrap", "validate", file, "--no-envoy"]);
        assert_eq!(run.code, 79, "{file}: {}", run.stderr);
        assert!(run.stdout.contains("MD0307"), "{file}: {}", run.stdout);
        assert!(run.stdout.contains(want), "{file}: {}", run.stdout);
    }
}

// ---------------------------------------------------------------- item 3: alias bombs

#[test]
fn alias_bombs_are_65_within_the_budget() {
    let d = dir();
    for levels in [7, 8, 12] {
        let name = format!("bomb{levels}.yaml");
        write(d.path(), &name, &generate::alias_bomb(levels));
        let run = run(d.path(), &["analyze", "-f", &name]);
        assert_eq!(run.code, 65, "{name}: {}", run.stderr);
        assert_one_line_error(&run, &[&name, "aliases expand to more than 100000 nodes"]);
        let run = self::run(d.path(), &["bootstrap", "validate", &name, "--no-envoy"]);
        assert_eq!(run.code, 79, "{name}: {}", run.stderr);
        assert!(
            run.stdout.contains("MD0307") && run.stdout.contains("alias"),
            "{}",
            run.stdout
        );
    }
}

// ---------------------------------------------------------------- item 4: directory walks

#[test]
fn symlink_loops_read_each_file_once() {
    let d = dir();
    let m = d.path().join("manifests");
    std::fs::create_dir(&m).unwrap();
    write(&m, "ns.yaml", &generate::namespace());
    std::os::unix::fs::symlink(".", m.join("self")).unwrap();
    std::os::unix::fs::symlink(".", m.join("again")).unwrap();
    std::fs::create_dir(m.join("sub")).unwrap();
    std::os::unix::fs::symlink("..", m.join("sub/up")).unwrap();
    std::os::unix::fs::symlink("../manifests", m.join("sub/cousin")).unwrap();
    let run = run(
        d.path(),
        &["analyze", "-f", "manifests", "-R", "-o", "json", "-v"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("files=1"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("No validation issues found when analyzing manifests/ns.yaml."),
        "{}",
        run.stderr
    );
}

// ---------------------------------------------------------------- item 5: unbounded reads

#[test]
fn endless_and_huge_inputs_stop_at_the_size_cap() {
    let d = dir();
    let run = run(d.path(), &["analyze", "-f", "/dev/zero"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(
        &run,
        &[
            "/dev/zero",
            "larger than the input size limit of 64Mi (--max-input-size)",
        ],
    );
    let run = self::run(d.path(), &["bootstrap", "validate", "/dev/zero"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(&run, &["/dev/zero", "64Mi"]);
    // A (sparse) file one byte over a lowered cap; the cap is the flag's.
    let big = d.path().join("big.yaml");
    std::fs::File::create(&big).unwrap().set_len(1025).unwrap();
    let run = self::run(
        d.path(),
        &["analyze", "-f", "big.yaml", "--max-input-size", "1Ki"],
    );
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(&run, &["big.yaml", "1Ki"]);
    let run = self::run(
        d.path(),
        &["analyze", "-f", "big.yaml", "--max-input-size", "lots"],
    );
    assert_eq!(run.code, 64, "{}", run.stderr);
}

/// Many objects under the default cap: memory follows what the analyzers keep.
#[test]
fn a_large_manifest_set_fits_the_budget() {
    let d = dir();
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s{i}\n  namespace: shop\n  labels: {{app: s{i}, tier: web}}\n  annotations: {{a: b, c: d, e: f}}\nspec:\n  selector: {{app: s{i}}}\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n"
        ));
    }
    write(d.path(), "many.yaml", &text);
    let run = run_bounded(
        d.path(),
        &["analyze", "-f", "many.yaml", "-o", "json"],
        1024,
        TIME_BUDGET,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with('['),
        "{}",
        &run.stdout[..run.stdout.len().min(200)]
    );
}

// ---------------------------------------------------------------- item 8: invalid UTF-8

#[test]
fn invalid_utf8_names_line_and_byte_offset() {
    let d = dir();
    std::fs::write(
        d.path().join("bad.yaml"),
        b"apiVersion: v1\nkind: Namespace\nmetadata: {name: \xff}\n",
    )
    .unwrap();
    let run = run(d.path(), &["analyze", "-f", "bad.yaml"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(
        &run,
        &[
            "bad.yaml:3:18:",
            "not UTF-8 text (invalid byte 0xff at byte offset 48)",
        ],
    );
}

// ---------------------------------------------------------------- item 12: duplicate keys

#[test]
fn duplicate_keys_are_65_naming_both_lines() {
    let d = dir();
    write(d.path(), "svc.yaml", &generate::duplicate_ports());
    let run = run(d.path(), &["analyze", "-f", "svc.yaml"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(
        &run,
        &[
            "svc.yaml:12:",
            "duplicate key \"ports\": first at line 7, again at line 12",
        ],
    );
}

/// The same in a `.json` manifest (serde_json alone would keep the last key silently).
#[test]
fn duplicate_json_keys_are_65_naming_both_lines() {
    let d = dir();
    write(
        d.path(),
        "svc.json",
        "{\"apiVersion\": \"v1\", \"kind\": \"Service\",\n \"metadata\": {\"name\": \"a\", \"namespace\": \"shop\"},\n \"spec\": {\"ports\": [{\"name\": \"http\", \"port\": 80}],\n  \"ports\": [{\"port\": 81}]}}\n",
    );
    let run = run(d.path(), &["analyze", "-f", "svc.json"]);
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert_one_line_error(
        &run,
        &[
            "svc.json:4:",
            "duplicate key \"ports\": first at line 3, again at line 4",
        ],
    );
}

// ---------------------------------------------------------------- item 2: durations

#[test]
fn absurd_durations_are_usage_errors() {
    let d = dir();
    for args in [
        &["version", "--request-timeout", "6000000000000000h"][..],
        &["version", "--request-timeout", "9223372036854775807s"],
        &["version", "--timeout", "25h"],
        &["pod", "web", "--probe-timeout", "6000000000000000h"],
        &["analyze", "--probe-timeout", "9223372036854775807s"],
        &["proxy-status", "--istiod-timeout", "1e9h"],
        &[
            "bootstrap",
            "validate",
            "x.json",
            "--envoy-timeout",
            "6000000000000000h",
        ],
        &["bootstrap", "explain", "web", "--probe-timeout=-1s"],
    ] {
        let run = run(d.path(), args);
        assert_eq!(run.code, 64, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("invalid value"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn kubectl_durations_are_accepted() {
    let d = dir();
    let run = run(
        d.path(),
        &[
            "version",
            "--client",
            "--request-timeout",
            "1m30s",
            "--timeout",
            "1h2m3.5s",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}
