//! The live reads of the mesh networks analyzer: when the `istio` ConfigMap has a `meshNetworks`
//! key, the remote secrets (Secrets of `istio-system` labelled `istio/multiCluster=true`), whose
//! key names are the clusters a network may take endpoints from. Only the key names are kept.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};

use crate::istio::constants::{ISTIO_NAMESPACE, MULTI_CLUSTER_SECRET_LABEL};
use crate::kube::snapshot::{Located, Object, SecretKeys, Snapshot};
use crate::source::cluster::Cluster;
use crate::source::live::Found;

/// Lists the remote secrets when there are mesh networks to check them against.
pub async fn remote_secrets(cluster: &Cluster, snapshot: &Snapshot) -> Found {
    let mut found = Found::default();
    let has_networks = snapshot.config_maps.iter().any(|cm| {
        cm.object.name() == "istio"
            && cm
                .object
                .data
                .as_ref()
                .and_then(|d| d.get("meshNetworks"))
                .is_some_and(|t| !t.trim().is_empty())
    });
    if !has_networks {
        return found;
    }
    let api: Api<Secret> = Api::namespaced(cluster.client.clone(), ISTIO_NAMESPACE);
    let params = ListParams::default().labels(&format!("{MULTI_CLUSTER_SECRET_LABEL}=true"));
    match cluster.list_selected(api, &params).await {
        Ok(items) => {
            for secret in items {
                // Key names only: no value of a remote secret (a kubeconfig) is parsed.
                let data = secret.data.unwrap_or_default();
                found.secrets.push(Located::new(SecretKeys::reduce(
                    secret.metadata,
                    secret.type_.unwrap_or_default(),
                    data.into_iter().map(|(k, v)| (k, v.0)),
                    &[],
                )));
            }
        }
        Err(e) => {
            found.unavailable.push((
                crate::kube::kind::Kind::RemoteSecrets,
                e.reason().to_string(),
            ));
        }
    }
    found
}
