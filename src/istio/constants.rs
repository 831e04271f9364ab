//! Istio's fixed names and numbers, in one place.

/// The namespace istiod runs in.
pub const ISTIO_NAMESPACE: &str = "istio-system";
/// istiod's xDS and CA port.
pub const XDS_PORT: i32 = 15012;
/// The ConfigMap istiod writes into every namespace with the mesh's root certificate.
pub const ROOT_CERT_CONFIG_MAP: &str = "istio-ca-root-cert";
/// The audience istiod expects on the proxy's token (Istio's default `TOKEN_AUDIENCES`).
pub const TOKEN_AUDIENCE: &str = "istio-ca";

/// The label of Istio's remote secrets (their keys name the remote clusters).
pub const MULTI_CLUSTER_SECRET_LABEL: &str = "istio/multiCluster";
