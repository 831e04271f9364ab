//! The duration parser every duration flag uses: never a panic, never beyond the maximum, and
//! what it shows parses back to the same duration.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mesh_doctor::cli::{MAX_DURATION, parse_duration, parse_size, show_duration};

fuzz_target!(|data: &[u8]| {
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
});
