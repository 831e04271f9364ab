//! Kubernetes knowledge, pure: the snapshot of typed objects with their origin, label selectors, NetworkPolicy evaluation.

pub mod netpol;
pub mod selector;
pub mod snapshot;
