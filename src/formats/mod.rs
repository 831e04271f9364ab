//! Formats, pure: YAML/JSON reading that keeps the line of every node, YAML writing, text, durations.

pub mod duration;
pub mod go_duration;
pub mod json_members;
pub mod text;
pub mod yaml;
pub mod yaml_subset;
pub mod yaml_tree;
pub mod yaml_write;
