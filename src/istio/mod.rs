//! Istio knowledge, pure: no I/O.

pub mod ambient;
pub mod annotations;
pub mod authorization;
pub mod config;
pub mod constants;
pub mod credentials;
pub mod dataplane;
pub mod destination_rules;
pub mod go_values;
pub mod injection;
pub mod istiod;
pub mod mesh_networks;
pub mod mtls;
pub mod protocol;
pub mod re2;
pub mod revisions;
pub mod routing;
pub mod sidecar;
pub mod syncz;
pub mod waypoint;
