//! `bootstrap validate`'s static checks on any text, as JSON and as YAML.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mesh_doctor::mesh::bootstrap::{Format, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [Format::Json, Format::Yaml] {
        for problem in validate(text, format) {
            assert!(problem.code().starts_with("MD03"));
            assert!(!problem.message.is_empty());
        }
    }
});
