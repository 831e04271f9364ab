//! Istio knowledge, pure: no I/O.

pub mod bootstrap;
pub mod bootstrap_inputs;
pub mod injection;
pub mod istiod;
pub mod protocol;
pub mod selector;
pub mod sidecar;
pub mod syncz;
