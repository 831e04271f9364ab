//! Kubernetes knowledge, pure: the kinds read and their names (`kind`), the snapshot of typed objects with their origin, label selectors, NetworkPolicy evaluation, the API server's rules for an object's identity and metadata (`object_rules`), the CRDs' OpenAPI schemas and their validation (`openapi`), the init phase of a pod, its stage of life (`lifecycle`), X.509 certificates in PEM reduced to their subject and validity (`certificate`).

pub mod certificate;
pub mod init;
pub mod kind;
pub mod label_index;
pub mod lifecycle;
pub mod netpol;
pub mod object_rules;
pub mod openapi;
pub mod openapi_rules;
pub mod selector;
pub mod snapshot;
