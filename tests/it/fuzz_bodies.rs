//! The fuzz targets' checks (fuzz/bodies.rs, which the cargo-fuzz targets wrap) run on the seeds
//! scripts/fuzz.sh gives them, as an ordinary test: a target that no longer compiles against
//! the crate, or a seed that breaks one of its assertions, fails `cargo test`, not only a fuzz
//! run on the nightly toolchain.

#[path = "../../fuzz/bodies.rs"]
mod bodies;

use std::path::{Path, PathBuf};

fn files(dir: &str, depth: usize, keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, keep: &dyn Fn(&str) -> bool, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if depth > 1 {
                    walk(&path, depth - 1, keep, out);
                }
            } else if keep(&path.file_name().unwrap().to_string_lossy()) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new(dir), depth, keep, &mut out);
    out.sort();
    assert!(!out.is_empty(), "no seeds in {dir}");
    out
}

fn run_on(seeds: &[PathBuf], check: fn(&[u8])) {
    for seed in seeds {
        let data = std::fs::read(seed).unwrap();
        check(&data);
        // A few mutations a fuzzer tries first: truncated, and cut at every line.
        check(&data[..data.len() / 2]);
        for (i, _) in data
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .take(50)
        {
            check(&data[..i]);
        }
    }
}

#[test]
fn manifest_loader_on_its_seeds() {
    let yaml = |n: &str| n.ends_with(".yaml") || n.ends_with(".yml");
    let mut seeds = files("tests/fixtures", 2, &yaml);
    seeds.extend(files("examples", 8, &|n| n.ends_with(".yaml")));
    run_on(&seeds, bodies::manifest_loader);
}

#[test]
fn bootstrap_validator_on_its_seeds() {
    run_on(
        &files("tests/fixtures/envoy/bootstraps", 8, &|_| true),
        bodies::bootstrap_validator,
    );
}

#[test]
fn admin_parsers_on_their_seeds() {
    let admin = |n: &str| {
        n.ends_with(".json")
            || (n.ends_with(".txt") && (n.contains("ready") || n.contains("stats")))
    };
    run_on(
        &files("tests/fixtures/envoy", 1, &admin),
        bodies::admin_parsers,
    );
}

#[test]
fn syncz_parser_on_its_seeds() {
    run_on(
        &files("tests/fixtures/syncz", 8, &|_| true),
        bodies::syncz_parser,
    );
}

#[test]
fn kube_protobuf_on_its_seeds() {
    run_on(
        &files("tests/fixtures/kube-protobuf", 1, &|n| n.ends_with(".pb")),
        bodies::kube_protobuf,
    );
}

/// What the fuzzer found on 2026-12-07: a list whose envelope gives `raw` twice (the streaming
/// scanner reads the first, the whole-list reader the last). Kept so the check stays right.
#[test]
fn kube_protobuf_on_an_envelope_with_two_raw_fields() {
    bodies::kube_protobuf(include_bytes!(
        "../fixtures/fuzz-found/kube_protobuf-two-raw-fields.bin"
    ));
}

#[test]
fn log_matcher_on_its_seeds() {
    let stderr = |n: &str| n.contains("stderr") && n.ends_with(".txt");
    run_on(
        &files("tests/fixtures/envoy", 1, &stderr),
        bodies::log_matcher,
    );
}

#[test]
fn duration_parser_on_its_seeds() {
    for d in [
        "0",
        "5",
        "1.5",
        "500ms",
        "30s",
        "1m30s",
        "2h",
        "24h",
        "1h2m3.5s",
        "250us",
        "10ns",
        "25h",
        "-1s",
        "",
        "1e9h",
        "9223372036854775807s",
    ] {
        bodies::duration_parser(d.as_bytes());
    }
}
