//! Istio knowledge, pure: no I/O.

pub mod ambient;
pub mod annotations;
pub mod config;
pub mod constants;
pub mod injection;
pub mod istiod;
pub mod mesh_networks;
pub mod mtls;
pub mod protocol;
pub mod re2;
pub mod revisions;
pub mod sidecar;
pub mod syncz;
