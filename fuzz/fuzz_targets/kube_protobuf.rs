//! The `kube_protobuf` fuzz target: the check in `fuzz/bodies.rs` on every input libFuzzer makes.
#![no_main]

#[path = "../bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::kube_protobuf(data));
