//! Envoy knowledge, pure: the admin API's answers, the bootstrap (schema, checks, node.id),
//! known log signatures, and what a probe found.

pub mod admin;
pub mod bootstrap;
pub mod facts;
pub mod inbound;
pub mod logs;
pub mod upstream_tls;
