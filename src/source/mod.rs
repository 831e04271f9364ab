//! Where snapshots come from: files, or a live cluster.

pub mod files;
pub mod live;
pub mod live_config;
