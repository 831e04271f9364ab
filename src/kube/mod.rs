//! Kubernetes knowledge, pure: the kinds read and their names (`kind`), the snapshot of typed objects with their origin, label selectors, NetworkPolicy evaluation, the API server's rules for an object's identity and metadata (`object_rules`), the CRDs' OpenAPI schemas and their validation (`openapi`, on schema nodes compiled once in `openapi_node`), their CEL rules (`openapi_cel`, evaluated by `cel` and `cel_eval` with Kubernetes' library functions in `cel_library`), the init phase of a pod, its stage of life (`lifecycle`), X.509 certificates in PEM reduced to their subject and validity (`certificate`).

pub mod cel;
pub mod cel_eval;
pub mod cel_library;
pub mod certificate;
pub mod field_path;
pub mod init;
pub mod kind;
pub mod label_index;
pub mod lifecycle;
pub mod netpol;
pub mod object_rules;
pub mod openapi;
pub mod openapi_cel;
pub mod openapi_node;
pub mod openapi_rules;
pub mod patterns;
pub mod selector;
pub mod snapshot;
