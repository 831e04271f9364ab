//! Kubernetes knowledge, pure: the snapshot of typed objects with their origin, label selectors, NetworkPolicy evaluation, the init phase of a pod, its stage of life (`lifecycle`).

pub mod init;
pub mod label_index;
pub mod lifecycle;
pub mod netpol;
pub mod selector;
pub mod snapshot;
