//! The manifest loader (`analyze -f`): YAML and JSON streams into a snapshot. Any input gives
//! a snapshot or errors with a location, never a panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use mesh_doctor::snapshot::Snapshot;
use mesh_doctor::source::files::{FileOptions, LoadStats, load_text};

fuzz_target!(|data: &[u8]| {
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
});
