//! Envoy knowledge, pure: the bootstrap (schema, checks, node.id), known log signatures.

pub mod bootstrap;
pub mod logs;
