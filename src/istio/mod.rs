//! Istio knowledge, pure: no I/O.

pub mod injection;
pub mod istiod;
pub mod protocol;
pub mod sidecar;
pub mod syncz;
