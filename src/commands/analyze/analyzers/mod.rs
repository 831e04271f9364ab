//! Analyzers: pure functions from a [`Snapshot`] to findings. No I/O, no clock, no printing.

pub mod ambient;
pub mod annotations;
pub mod application_uid;
pub mod authn;
pub mod authz;
pub mod conditions;
pub mod control_plane;
pub mod deprecation;
pub mod destinationrule;
pub mod envoyfilter;
pub mod external_control_plane;
pub mod gateway;
pub mod image_auto;
pub mod injection;
pub mod istio_installed;
pub mod istio_table;
pub mod k8sgateway;
pub mod mesh_networks;
pub mod mtls;
pub mod multicluster;
pub mod multicluster_service;
pub mod object_rules;
pub mod policy;
pub mod port_names;
pub mod proxy_image;
pub mod revisions;
pub mod runtime;
pub mod schema;
pub mod schema_authz;
pub mod schema_common;
pub mod schema_gateway;
pub mod schema_security;
pub mod schema_serviceentry;
pub mod schema_sidecar;
pub mod schema_virtualservice;
pub mod service_association;
pub mod serviceentry;
pub mod sidecar;
pub mod telemetry;
pub mod virtualservice;
pub mod webhook;

use crate::findings::report;
use crate::findings::{Finding, Report};
use crate::istio::config::Config;
use crate::kube::snapshot::Snapshot;

/// What the analyzers of Istio's config kinds read: the snapshot and its config resources,
/// typed once for all of them.
pub struct Input<'a> {
    pub snapshot: &'a Snapshot,
    pub config: Config<'a>,
}

/// An analyzer's function: over the snapshot alone, or over the snapshot and its typed config.
#[derive(Clone, Copy)]
pub enum Run {
    Snapshot(fn(&Snapshot, &mut Vec<Finding>)),
    Config(fn(&Input, &mut Vec<Finding>)),
}

/// One analyzer: a name (for `-v` and `--analyzer`), the codes it emits, and the function.
pub struct Analyzer {
    pub name: &'static str,
    pub description: &'static str,
    pub codes: &'static [&'static str],
    /// Snapshot kinds it needs; when one is unavailable (RBAC), the analyzer is skipped.
    pub needs: &'static [&'static str],
    pub run: Run,
}

/// Every analyzer of mesh-doctor's own, in the order they run (then [`istio_table::ANALYZERS`]).
pub const OWN_ANALYZERS: &[Analyzer] = &[
    Analyzer {
        name: "object-rules",
        description: "Files: objects kubectl apply would refuse for Kubernetes' own rules (apiVersion, kind, name, namespace, labels, annotation keys), every kind",
        codes: &["MD0003"],
        needs: &[],
        run: Run::Snapshot(object_rules::analyze),
    },
    Analyzer {
        name: "crd-schemas",
        description: "Files: Istio and Gateway API objects whose spec the CRD's OpenAPI schema refuses (unknown fields, types, enums, required, patterns, bounds, lengths, item counts, oneOf)",
        codes: &["MD0003"],
        needs: &[],
        run: Run::Snapshot(object_rules::crd_schemas),
    },
    Analyzer {
        name: "injection",
        description: "Namespaces and pods that are (not) enabled for sidecar injection",
        codes: &[
            "IST0102", "IST0103", "IST0123", "IST0148", "MD0103", "MD0204",
        ],
        needs: &["namespaces", "pods"],
        run: Run::Snapshot(injection::analyze),
    },
    Analyzer {
        name: "proxy-image",
        description: "Proxy images that differ from the injector's current image",
        codes: &["IST0158"],
        needs: &["namespaces", "pods", "configmaps"],
        run: Run::Snapshot(proxy_image::analyze),
    },
    Analyzer {
        name: "port-names",
        description: "Service ports whose protocol Istio cannot tell",
        codes: &["IST0118", "IST0150"],
        needs: &["services"],
        run: Run::Snapshot(port_names::analyze),
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
        run: Run::Snapshot(control_plane::availability),
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
        run: Run::Snapshot(control_plane::endpoints),
    },
    Analyzer {
        name: "webhook-failures",
        description: "FailedCreate events caused by an injection webhook",
        codes: &["MD0203"],
        needs: &["events"],
        run: Run::Snapshot(control_plane::failed_creates),
    },
    Analyzer {
        name: "istio-installed",
        description: "Live: clusters that serve none of Istio's networking.istio.io kinds (Istio not installed)",
        codes: &["MD0206"],
        needs: &[],
        run: Run::Snapshot(istio_installed::analyze),
    },
    Analyzer {
        name: "mtls-coherence",
        description: "DestinationRule TLS modes that the server's PeerAuthentication (or its lack of a sidecar) refuses, per Service port",
        codes: &["MD0401", "MD0402"],
        needs: &[
            "services",
            "pods",
            "namespaces",
            "destinationrules",
            "peerauthentications",
        ],
        run: Run::Config(mtls::analyze),
    },
    Analyzer {
        name: "mtls-port-level",
        description: "PeerAuthentication portLevelMtls entries for a port none of the selected workloads listens on (the Service port instead of the targetPort)",
        codes: &["MD0405"],
        needs: &["services", "pods", "peerauthentications"],
        run: Run::Config(policy::port_levels),
    },
    Analyzer {
        name: "authz-identity",
        description: "AuthorizationPolicies that match callers by peer identity on workload ports that accept plaintext: ALLOW refuses plaintext callers (403), DENY lets them through",
        codes: &["MD0406", "MD0407"],
        needs: &[
            "services",
            "pods",
            "namespaces",
            "peerauthentications",
            "authorizationpolicies",
        ],
        run: Run::Config(policy::identity_policies),
    },
    Analyzer {
        name: "authz-allow-nothing",
        description: "ALLOW AuthorizationPolicies without rules that are a workload's only ALLOW policy (deny-all), Warning when a route sends traffic to it",
        codes: &["MD0408", "MD0409"],
        needs: &["services", "pods", "namespaces", "authorizationpolicies"],
        run: Run::Config(policy::allow_nothing),
    },
    Analyzer {
        name: "ambient",
        description: "Ambient mode: waypoints that carry no traffic or are named outside ambient, AuthorizationPolicies ztunnel does not enforce as written, sidecar pods asked into ambient, and (live) pods ambient does not capture",
        codes: ambient::CODES,
        needs: &["namespaces", "pods", "services"],
        run: Run::Config(ambient::analyze),
    },
    Analyzer {
        name: "cluster-id",
        description: "Clusters analysed together (--context repeated) that share a CLUSTER_ID",
        codes: &["MD0205"],
        needs: &["deployments", "pods"],
        run: Run::Snapshot(multicluster::analyze),
    },
];

/// Every analyzer: ours, then those of Istio's config kinds.
pub fn all() -> impl Iterator<Item = &'static Analyzer> {
    OWN_ANALYZERS.iter().chain(istio_table::ANALYZERS.iter())
}

/// Istio's names of the analyzers that have a name of ours (`istioctl analyze --list-analyzers`).
pub const ISTIO_NAMES: &[(&str, &str)] = &[
    ("injection.Analyzer", "injection"),
    ("injection.ImageAnalyzer", "proxy-image"),
    ("service.PortNameAnalyzer", "port-names"),
];

/// Analyzers that run only when named with `--analyzer`, as Istio leaves them out of its
/// default set (`annotations.AlphaAnalyzer`: too noisy with annotations set by default).
pub const OFF_BY_DEFAULT: &[&str] = &["annotations.AlphaAnalyzer"];

/// True when the analyzer runs without `--analyzer` naming it.
pub fn on_by_default(analyzer: &Analyzer) -> bool {
    !OFF_BY_DEFAULT.contains(&analyzer.name)
}

/// The analyzer a name given to `--analyzer` means: ours, or Istio's name for it.
pub fn find(name: &str) -> Option<&'static Analyzer> {
    let name = ISTIO_NAMES
        .iter()
        .find(|(istio, _)| *istio == name)
        .map_or(name, |(_, ours)| ours);
    all().find(|a| a.name == name)
}

/// Runs the analyzers (all, or those named in `only`, by our name or Istio's) over a snapshot.
pub fn run(snapshot: &Snapshot, only: &[String]) -> Report {
    let mut report = Report::default();
    let selected: Vec<&str> = only
        .iter()
        .filter_map(|n| find(n).map(|a| a.name))
        .collect();
    let mut input: Option<Input> = None;
    for analyzer in all() {
        if !only.is_empty() && !selected.contains(&analyzer.name) {
            continue;
        }
        if only.is_empty() && !on_by_default(analyzer) {
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
        match analyzer.run {
            Run::Snapshot(run) => run(snapshot, &mut report.findings),
            Run::Config(run) => {
                let input = input.get_or_insert_with(|| Input {
                    snapshot,
                    config: Config::of(snapshot),
                });
                run(input, &mut report.findings)
            }
        }
    }
    report.sort_and_dedup();
    report
}
