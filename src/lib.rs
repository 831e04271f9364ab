//! mesh-doctor: why an Istio mesh is not doing what you expect.
//!
//! Data flows one way: a source (live cluster or files) builds a [`snapshot::Snapshot`];
//! pure analyzers turn it into findings; renderers print them; `exit` maps the result to a code.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod diagnose;
pub mod error;
pub mod exit;
pub mod mesh;
pub mod probe;
pub mod render;
pub mod snapshot;
pub mod source;
pub mod status;
