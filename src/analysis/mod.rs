//! Analyzers: pure functions from a [`Snapshot`] to findings. No I/O, no clock, no printing.

pub mod control_plane;
pub mod finding;
pub mod injection;
pub mod messages;
pub mod multicluster;
pub mod port_names;
pub mod proxy_image;
pub mod report;
pub mod runtime;

use crate::snapshot::Snapshot;
pub use finding::{Finding, ResourceRef};
pub use report::Report;

/// One analyzer: a name (for `-v` and `--analyzer`), the codes it emits, and the function.
pub struct Analyzer {
    pub name: &'static str,
    pub description: &'static str,
    pub codes: &'static [&'static str],
    /// Snapshot kinds it needs; when one is unavailable (RBAC), the analyzer is skipped.
    pub needs: &'static [&'static str],
    pub run: fn(&Snapshot, &mut Vec<Finding>),
}

/// Every analyzer, in the order they run.
pub const ANALYZERS: &[Analyzer] = &[
    Analyzer {
        name: "injection",
        description: "Namespaces and pods that are (not) enabled for sidecar injection",
        codes: &[
            "IST0102", "IST0103", "IST0123", "IST0148", "MD0103", "MD0204",
        ],
        needs: &["namespaces", "pods"],
        run: injection::analyze,
    },
    Analyzer {
        name: "proxy-image",
        description: "Proxy images that differ from the injector's current image",
        codes: &["IST0158"],
        needs: &["namespaces", "pods", "configmaps"],
        run: proxy_image::analyze,
    },
    Analyzer {
        name: "port-names",
        description: "Service ports whose protocol Istio cannot tell",
        codes: &["IST0118", "IST0150"],
        needs: &["services"],
        run: port_names::analyze,
    },
    Analyzer {
        name: "istiod-availability",
        description: "istiod with one replica or no PodDisruptionBudget behind an injection webhook that fails closed",
        codes: &["MD0201"],
        needs: &[
            "mutatingwebhookconfigurations",
            "deployments",
            "poddisruptionbudgets",
            "namespaces",
        ],
        run: control_plane::availability,
    },
    Analyzer {
        name: "webhook-endpoints",
        description: "Injection webhooks whose Service has no ready endpoint",
        codes: &["MD0202"],
        needs: &[
            "mutatingwebhookconfigurations",
            "endpointslices",
            "namespaces",
        ],
        run: control_plane::endpoints,
    },
    Analyzer {
        name: "webhook-failures",
        description: "FailedCreate events caused by an injection webhook",
        codes: &["MD0203"],
        needs: &["events"],
        run: control_plane::failed_creates,
    },
    Analyzer {
        name: "cluster-id",
        description: "Clusters analysed together (--context repeated) that share a CLUSTER_ID",
        codes: &["MD0205"],
        needs: &["deployments", "pods"],
        run: multicluster::analyze,
    },
];

/// Runs the analyzers (all, or those named in `only`) over a snapshot.
pub fn run(snapshot: &Snapshot, only: &[String]) -> Report {
    let mut report = Report::default();
    for analyzer in ANALYZERS {
        if !only.is_empty() && !only.iter().any(|n| n == analyzer.name) {
            continue;
        }
        if let Some(kind) = analyzer
            .needs
            .iter()
            .find(|k| snapshot.unavailable.contains_key(**k))
        {
            // The denial itself is said once, where the list failed (`warning: cannot list`).
            report.skipped.push(report::Skipped {
                check: analyzer.name.to_string(),
                reason: format!("it needs {kind}, which could not be listed"),
            });
            continue;
        }
        (analyzer.run)(snapshot, &mut report.findings);
    }
    report.sort_and_dedup();
    report
}
