//! What each fuzz target checks, one function per target, shared by the cargo-fuzz targets
//! (`fuzz_targets/*.rs`, which only wrap them) and by `tests/it/fuzz_bodies.rs`, which runs them on
//! the seed corpora in every `cargo test`, so a target that no longer compiles against the crate,
//! or a seed that breaks an assertion, fails the ordinary tests and not only a fuzz run.

use std::sync::Arc;

use mesh_doctor::envoy::admin;
use mesh_doctor::envoy::bootstrap::{Format, validate};
use mesh_doctor::envoy::logs::{self, LogSource};
use mesh_doctor::formats::duration::{MAX_DURATION, parse_duration, parse_size, show_duration};
use mesh_doctor::formats::kube_protobuf;
use mesh_doctor::formats::kube_protobuf_schema as protobuf_schema;
use mesh_doctor::istio::syncz;
use mesh_doctor::kube::snapshot::Snapshot;
use mesh_doctor::source::files::{FileOptions, LoadStats, load_text};

/// The manifest loader (`analyze -f`): YAML and JSON streams into a snapshot. Any input gives
/// a snapshot or errors with a location, never a panic.
pub fn manifest_loader(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = FileOptions {
        default_namespace: Some("default".into()),
        ..FileOptions::default()
    };
    for is_json in [false, true] {
        let mut snapshot = Snapshot::default();
        let mut stats = LoadStats::default();
        if let Err(errors) = load_text(
            text,
            Arc::from("fuzz.yaml"),
            is_json,
            &options,
            &mut snapshot,
            &mut stats,
        ) {
            assert!(!errors.is_empty());
            for e in errors {
                let message = e.to_string();
                assert!(message.starts_with("fuzz.yaml"), "{message}");
            }
        }
    }
}

/// `bootstrap validate`'s static checks, as JSON and as YAML: every problem is an MD03xx code
/// with a message.
pub fn bootstrap_validator(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [Format::Json, Format::Yaml] {
        for problem in validate(text, format) {
            assert!(problem.code().starts_with("MD03"));
            assert!(!problem.message.is_empty());
        }
    }
}

/// Envoy's admin answers: `/server_info`, `/stats`, `/config_dump`, `/clusters`, `/certs` and
/// the readiness body.
pub fn admin_parsers(data: &[u8]) {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let _ = admin::parse_server_info(body);
    let _ = admin::parse_stats_map(body);
    let _ = admin::parse_stats(body);
    let _ = admin::parse_bootstrap(body);
    let _ = admin::parse_clusters(body);
    let _ = admin::parse_certs(body);
    for status in [200, 503] {
        let _ = admin::parse_readiness(status, body);
    }
}

/// istiod's `/debug/syncz` (and istioctl's JSON), the version answer, syncz times and type URLs.
pub fn syncz_parser(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = syncz::parse(text);
    let _ = syncz::parse_version_answer(text);
    let _ = syncz::parse_time(text);
    let _ = syncz::short_type(text);
}

/// The API server's protobuf answers (live lists of the built-in kinds, and error Statuses): any bytes decode or give an error, never a panic.
pub fn kube_protobuf(data: &[u8]) {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, Service};
    if let Ok(list) = kube_protobuf::list(data) {
        for item in list.items.iter().take(64) {
            let _ = kube_protobuf::decode::<Pod>(item, protobuf_schema::POD);
            let _ = kube_protobuf::decode::<Service>(item, protobuf_schema::SERVICE);
            let _ = kube_protobuf::decode::<Namespace>(item, protobuf_schema::NAMESPACE);
            let _ = kube_protobuf::decode::<Node>(item, protobuf_schema::NODE);
            let _ = kube_protobuf::decode::<Event>(item, protobuf_schema::EVENT);
            let _ = kube_protobuf::decode::<Deployment>(item, protobuf_schema::DEPLOYMENT);
        }
    }
    if let Ok(raw) = kube_protobuf::object(data) {
        let _ = kube_protobuf::decode::<kube::core::Status>(raw, protobuf_schema::STATUS);
    }
    // The bytes as one object too, without the envelope.
    let _ = kube_protobuf::decode::<Pod>(data, protobuf_schema::POD);
    streamed_items(data);
}

/// The scanner that finds a protobuf list's items while the answer arrives, fed the bytes in
/// pieces (their sizes taken from the bytes themselves, so that libFuzzer varies them too): each
/// item it says is complete lies within what has arrived (the live read decodes those bytes at
/// once), and, for an answer the whole-list reader accepts, its items are the first of that
/// reader's, at the same places (else the early decoding is wasted, not wrong). An envelope with
/// two `raw` fields is the exception: the scanner reads the first, the reader the last
/// (protobuf's rule for a field given twice), and the live read then drops the early items.
fn streamed_items(data: &[u8]) {
    use mesh_doctor::formats::kube_protobuf_items::ItemScanner;
    let mut scanner = ItemScanner::default();
    let mut found: Vec<std::ops::Range<usize>> = Vec::new();
    let mut arrived = 0;
    let mut step = 0;
    while arrived < data.len() {
        let piece = 1 + usize::from(data[step % data.len()]) * 7;
        step += 1;
        arrived = (arrived + piece).min(data.len());
        for item in scanner.complete_items(&data[..arrived]) {
            assert!(
                item.start <= item.end && item.end <= arrived,
                "item {item:?} beyond the {arrived} bytes arrived"
            );
            found.push(item);
        }
    }
    if let (Ok(list), Ok(raw)) = (kube_protobuf::list(data), kube_protobuf::object(data)) {
        let base = data.as_ptr() as usize;
        let raw_start = raw.as_ptr() as usize - base;
        let in_raw = raw_start..raw_start + raw.len();
        if !found
            .iter()
            .all(|item| in_raw.contains(&item.start) && item.end <= in_raw.end)
        {
            return;
        }
        let whole: Vec<std::ops::Range<usize>> = list
            .items
            .iter()
            .map(|item| {
                let start = item.as_ptr() as usize - base;
                start..start + item.len()
            })
            .collect();
        assert!(
            whole.starts_with(&found),
            "the scanner's items {found:?} are not the first of the list's {whole:?}"
        );
    }
}

/// The Envoy / pilot-agent log signature matcher and its line helpers.
pub fn log_matcher(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = logs::scan(text, LogSource::Current);
    for line in text.lines().take(4) {
        let _ = logs::collapse(line);
        let _ = logs::excerpt(line);
    }
}

/// The duration flags (never beyond 24h; what is shown parses back) and the size flags.
pub fn duration_parser(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(d) = parse_duration(text) {
        assert!(d <= MAX_DURATION);
        let shown = show_duration(d);
        if d.subsec_nanos() % 1_000_000 == 0 {
            assert_eq!(parse_duration(&shown), Ok(d), "{text:?} shown as {shown:?}");
        }
    }
    let _ = parse_size(text);
}
