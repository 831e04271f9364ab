//! MD0206: live, a cluster that serves none of Istio's `networking.istio.io` kinds. Without
//! Istio's CRDs there is nothing of Istio's to analyse, and "no issues" would hide that the
//! context points at a cluster without Istio.

use crate::findings::Finding;
use crate::findings::messages;
use crate::istio::config::networking_kinds;
use crate::kube::snapshot::Snapshot;

const FIX: &str = "Check the kubeconfig context (--context); to install Istio, run `istioctl install` (or apply the istio/base chart for the CRDs).";

/// One finding per cluster without Istio's CRDs.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for cluster in &snapshot.istio_absent {
        let mut finding = Finding::new(
            messages::MD0206::message(
                format!("{cluster:?}"),
                networking_kinds().collect::<Vec<_>>().join(", "),
                FIX,
            ),
            None,
        );
        finding.cluster = Some(cluster.as_str().into());
        out.push(finding);
    }
}
