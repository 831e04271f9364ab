//! The Envoy and pilot-agent log signature matcher.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mesh_doctor::probe::logs::{self, LogSource};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = logs::scan(text, LogSource::Current);
    for line in text.lines().take(4) {
        let _ = logs::collapse(line);
        let _ = logs::excerpt(line);
    }
});
