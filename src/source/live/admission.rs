//! The live source for the admission and API-extension objects the webhook, external control
//! plane and Gateway API CRD analyzers read: ValidatingWebhookConfigurations, the metadata of
//! CustomResourceDefinitions (never their schemas), and the Services the Istio injection
//! webhooks call when they are outside what was listed (got by name, never listed).
//!
//! A list that fails goes into `Snapshot::unavailable` with its reason, so the analyzers that
//! need it are skipped and the run says so.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};

use crate::source::cluster::{Cluster, ListError, mapped};
use crate::source::live::Found;
use std::sync::Arc;

use crate::kube::kind::Kind;
use crate::kube::snapshot::{CrdMeta, Located, Object, Origin, Snapshot};

/// The ValidatingWebhookConfigurations and the CRDs' metadata, as listed (see [`fetch`]).
pub struct Fetched {
    validating: Result<Vec<ValidatingWebhookConfiguration>, ListError>,
    crds: Result<Vec<CrdMeta>, ListError>,
}

/// Lists the ValidatingWebhookConfigurations and the CRDs' metadata: nothing of the snapshot is
/// needed, so this runs beside the other lists.
pub async fn fetch(cluster: &Cluster) -> Fetched {
    let (validating, crds) = tokio::join!(
        cluster.list_cluster::<ValidatingWebhookConfiguration>(),
        crd_metadata(cluster)
    );
    Fetched { validating, crds }
}

/// Puts what [`fetch`] listed into the snapshot.
pub fn put(cluster: &Cluster, multi: bool, fetched: Fetched, snapshot: &mut Snapshot) {
    let name: Arc<str> = Arc::from(cluster.name.as_str());
    match fetched.validating {
        Ok(items) => {
            snapshot.validating_webhooks = items
                .into_iter()
                .map(|o| located_with(&name, multi, o))
                .collect()
        }
        Err(e) => {
            snapshot.unavailable.insert(
                Kind::ValidatingWebhookConfigurations,
                e.reason().to_string(),
            );
        }
    }
    match fetched.crds {
        Ok(items) => {
            snapshot.crds = items
                .into_iter()
                .map(|o| located_with(&name, multi, o))
                .collect()
        }
        Err(e) => {
            snapshot
                .unavailable
                .insert(Kind::CustomResourceDefinitions, e.reason().to_string());
        }
    }
}

fn located_with<T>(name: &Arc<str>, multi: bool, object: T) -> Located<T> {
    Located {
        object,
        origin: Origin {
            cluster: multi.then(|| name.clone()),
            ..Origin::default()
        },
    }
}

/// Every CRD's name, labels and annotations (a metadata-only list: no schemas cross the wire).
async fn crd_metadata(cluster: &Cluster) -> Result<Vec<CrdMeta>, ListError> {
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    cluster
        .paginate(
            &ListParams::default(),
            |params, _early| {
                let api = api.clone();
                async move { api.list_metadata(&params).await }
            },
            mapped(
                |o: kube::core::PartialObjectMeta<CustomResourceDefinition>| {
                    Some(CrdMeta {
                        metadata: o.metadata,
                    })
                },
            ),
        )
        .await
}

/// The Services the MutatingWebhookConfigurations call that the snapshot does not hold (live
/// with `-n`, only the scope's and `istio-system`'s were listed): got by name, so that
/// `webhook.Analyzer` never calls a Service missing that merely was not read. Got all at once.
pub async fn webhook_services(cluster: &Cluster, snapshot: &Snapshot) -> Found {
    let mut wanted: Vec<(String, String)> = Vec::new();
    for wh in &snapshot.webhooks {
        for hook in wh.object.webhooks.iter().flatten() {
            let Some(svc) = &hook.client_config.service else {
                continue;
            };
            let known = snapshot.all_services().any(|s| {
                s.object.namespace() == Some(&svc.namespace) && s.object.name() == svc.name
            });
            let pair = (svc.namespace.clone(), svc.name.clone());
            if !known && !wanted.contains(&pair) {
                wanted.push(pair);
            }
        }
    }
    let (services, failed) = super::get_named::<Service>(cluster, &wanted).await;
    Found {
        services_beyond_scope: services.into_iter().map(Located::new).collect(),
        unavailable: failed
            .into_iter()
            .map(|reason| (Kind::ServicesBeyondScope, reason))
            .collect(),
        ..Found::default()
    }
}
