//! Where snapshots come from: files, or a live cluster; one pod and its surroundings.

pub mod dns;
pub mod files;
pub mod live;
pub mod live_config;
mod live_errors;
pub mod live_mesh;
pub mod pod;
mod retry_after;
