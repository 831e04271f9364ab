//! Where snapshots come from: files, or a live cluster.

pub mod dns;
pub mod files;
pub mod live;
pub mod yaml;
