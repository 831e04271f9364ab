//! Runtime findings in `analyze`: the I/O half. Probes the sidecars of the injected pods the
//! snapshot already flags ([`crate::analysis::runtime::select`]), at most [`CONCURRENCY`] at a
//! time, each request under the probe timeout, and diagnoses each pod as `pod NAME` would.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::Api;

use crate::analysis::runtime::{self, Fetched};
use crate::diagnosis;
use crate::error::Result;
use crate::findings::Finding;
use crate::findings::report::Skipped;
use crate::istio::constants::{ISTIO_NAMESPACE, ROOT_CERT_CONFIG_MAP};
use crate::kube::snapshot::{Located, Object, Snapshot};
use crate::probe::{self, ProbeOptions, Probed};
use crate::request::Global;
use crate::source::cluster::{self, Cluster};
use crate::source::pod::lookup;

/// Sidecars probed at once: each probe holds a few port-forward streams and log requests.
pub const CONCURRENCY: usize = 16;

/// What the runtime checks add to the report.
#[derive(Default)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    /// Pods whose sidecar could not be probed because access was denied.
    pub skipped: Vec<Skipped>,
}

/// `probing the sidecars of flagged pods: 3/12` on stderr, rewritten in place; only when stderr is a terminal.
struct Progress {
    total: usize,
    done: AtomicUsize,
    shown: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        let progress = Progress {
            total,
            done: AtomicUsize::new(0),
            shown: std::io::stderr().is_terminal(),
        };
        progress.draw(0);
        progress
    }

    fn draw(&self, done: usize) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\rprobing the sidecars of flagged pods: {done}/{}",
                self.total
            );
            let _ = err.flush();
        }
    }

    fn tick(&self) {
        self.draw(self.done.fetch_add(1, Ordering::SeqCst) + 1);
    }

    fn finish(&self) {
        if self.shown {
            // Back to the line start and clear it: the report follows on a clean line.
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// Probes and diagnoses the flagged pods of the snapshot, cluster by cluster.
pub async fn check(
    global: &Global,
    snapshot: &Snapshot,
    options: &ProbeOptions,
) -> Result<Outcome> {
    let selected = runtime::select(snapshot);
    let mut outcome = Outcome::default();
    if selected.is_empty() {
        return Ok(outcome);
    }
    tracing::info!(pods = selected.len(), "probing flagged sidecars");
    // Pods carry their cluster only when several contexts are read; otherwise there is one.
    let mut by_cluster: BTreeMap<Option<Arc<str>>, Vec<&Located<Pod>>> = BTreeMap::new();
    for pod in selected {
        by_cluster
            .entry(pod.origin.cluster.clone())
            .or_default()
            .push(pod);
    }
    let progress = Progress::new(by_cluster.values().map(Vec::len).sum());
    for (cluster_name, pods) in by_cluster {
        let context = match &cluster_name {
            Some(name) => Some(name.as_ref()),
            None => global.context.first().map(String::as_str),
        };
        let cluster = cluster::connect(global, context).await?;
        let found = probe_cluster(
            &cluster,
            cluster_name.as_ref(),
            snapshot,
            &pods,
            options,
            &progress,
        )
        .await;
        outcome.findings.extend(found.findings);
        outcome.skipped.extend(found.skipped);
    }
    progress.finish();
    Ok(outcome)
}

async fn probe_cluster(
    cluster: &Cluster,
    cluster_name: Option<&Arc<str>>,
    snapshot: &Snapshot,
    pods: &[&Located<Pod>],
    options: &ProbeOptions,
    progress: &Progress,
) -> Outcome {
    let namespaces: BTreeSet<&str> = pods.iter().filter_map(|p| p.object.namespace()).collect();
    let istio_namespace = cluster
        .get_opt(
            Api::<Namespace>::all(cluster.client.clone()),
            ISTIO_NAMESPACE,
        )
        .await;
    let istio_namespace = lookup(istio_namespace);
    let root_certs = probe::bounded(namespaces.iter().copied(), CONCURRENCY, |ns| async move {
        let api = Api::<ConfigMap>::namespaced(cluster.client.clone(), ns);
        (ns, lookup(cluster.get_opt(api, ROOT_CERT_CONFIG_MAP).await))
    })
    .await;
    let now = Some(jiff::Timestamp::now());
    let contexts: BTreeMap<&str, diagnosis::PodContext> = root_certs
        .into_iter()
        .map(|(ns, root_cert)| {
            let fetched = Fetched {
                istio_namespace: istio_namespace.clone(),
                root_cert,
            };
            (
                ns,
                runtime::pod_context(snapshot, cluster_name, ns, fetched, now),
            )
        })
        .collect();
    let probes = probe::bounded(pods.iter().copied(), CONCURRENCY, |pod| async move {
        let result = probe::probe_pod(cluster, &pod.object, options).await;
        progress.tick();
        result
    })
    .await;
    let mut outcome = Outcome::default();
    for (pod, probe) in pods.iter().zip(probes) {
        let pod = &pod.object;
        let Some(context) = pod.namespace().and_then(|ns| contexts.get(ns)) else {
            continue;
        };
        let diagnosis = diagnosis::diagnose(pod, context, Some(&probe));
        let mut found = runtime::findings(diagnosis, cluster_name);
        // Port-forward denied: the proxy was not checked, which is not a finding about it.
        if let Probed::Error(e) = &probe.admin.server_info
            && e.is("denied")
        {
            found.retain(|f| f.code() != "MD0107");
            outcome.skipped.push(Skipped {
                check: format!(
                    "{} for Pod {}/{}",
                    runtime::NAME,
                    pod.namespace().unwrap_or_default(),
                    pod.name()
                ),
                reason: e.message.clone(),
            });
        }
        outcome.findings.extend(found);
    }
    outcome
}
