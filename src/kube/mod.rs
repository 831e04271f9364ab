//! Kubernetes knowledge, pure: the snapshot of typed objects with their origin, label selectors.

pub mod selector;
pub mod snapshot;
