//! Formats, pure: YAML/JSON reading that keeps the line of every node, YAML writing, text, durations, Kubernetes' protobuf.

pub mod duration;
pub mod go_duration;
pub mod json_members;
pub mod kube_protobuf;
pub mod kube_protobuf_items;
#[rustfmt::skip]
pub mod kube_protobuf_schema;
pub mod text;
pub mod yaml;
pub mod yaml_subset;
pub mod yaml_tree;
pub mod yaml_write;
