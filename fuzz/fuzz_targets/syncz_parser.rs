//! istiod's /debug/syncz (and istioctl's JSON) parser, and the version answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mesh_doctor::mesh::syncz;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = syncz::parse(text);
    let _ = syncz::parse_version_answer(text);
    let _ = syncz::parse_time(text);
    let _ = syncz::short_type(text);
});
