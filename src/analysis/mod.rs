//! Analyzers: pure functions from a [`Snapshot`] to findings. No I/O, no clock, no printing.

pub mod ambient;
pub mod ambient_l7;
pub mod ambient_wide;
pub mod annotations;
pub mod application_uid;
pub mod authn;
pub mod authz;
pub mod certificates;
pub mod conditions;
pub mod control_plane;
pub mod deprecation;
pub mod destinationrule;
pub mod dr_merge;
pub mod dr_selector;
pub mod envoyfilter;
pub mod external_control_plane;
pub mod gateway;
pub mod gateway_api_certificates;
pub mod gateway_api_client_ca;
pub mod gateway_targets;
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
pub mod principals;
pub mod proxy_image;
pub mod revisions;
pub mod runtime;
pub mod schema;
pub mod schema_authz;
pub mod schema_common;
pub mod schema_destinationrule;
pub mod schema_gateway;
pub mod schema_http_headers;
pub mod schema_http_route;
pub mod schema_security;
pub mod schema_serviceentry;
pub mod schema_sidecar;
pub mod schema_traffic_policy;
pub mod schema_virtualservice;
pub mod service_association;
pub mod serviceentry;
pub mod sidecar;
pub mod telemetry;
pub mod virtualservice;
pub mod webhook;

use crate::findings::messages::{self, MessageType};
use crate::findings::report;
use crate::findings::{Finding, Report};
use crate::istio::config::host::ServiceHosts;
use crate::istio::config::{Config, TypedSpecs};
use crate::istio::dataplane::BackendIndex;
use crate::kube::kind::{CRD_KINDS, Kind};
use crate::kube::snapshot::{NamespacesByName, Snapshot};

/// What the analyzers of Istio's config kinds read: the snapshot and its config resources,
/// typed once for all of them.
pub struct Input<'a> {
    pub snapshot: &'a Snapshot,
    pub config: Config<'a>,
    /// Every backend of the snapshot, made by the first check that asks ([`Input::backends`]).
    backends: std::sync::OnceLock<BackendIndex<'a>>,
    /// The Namespaces by name, made by the first check that asks ([`Input::namespaces`]).
    namespaces: std::sync::OnceLock<NamespacesByName<'a>>,
    /// Istio's service host map, made by the first check that asks ([`Input::service_hosts`]).
    service_hosts: std::sync::OnceLock<ServiceHosts>,
}

impl<'a> Input<'a> {
    /// The snapshot and its config, typed.
    pub fn of(snapshot: &'a Snapshot) -> Self {
        Input::new(snapshot, Config::of(snapshot))
    }

    pub fn new(snapshot: &'a Snapshot, config: Config<'a>) -> Self {
        Input {
            snapshot,
            config,
            backends: std::sync::OnceLock::new(),
            namespaces: std::sync::OnceLock::new(),
            service_hosts: std::sync::OnceLock::new(),
        }
    }

    /// Every backend of the snapshot, by namespace: made once, by the first check that asks,
    /// for all of them.
    pub fn backends(&self) -> &BackendIndex<'a> {
        self.backends
            .get_or_init(|| BackendIndex::of(self.snapshot))
    }

    /// Istio's service host map of the snapshot's Services and ServiceEntries: made once, by the
    /// first check that asks.
    pub fn service_hosts(&self) -> &ServiceHosts {
        self.service_hosts
            .get_or_init(|| ServiceHosts::new(self.snapshot, &self.config))
    }

    /// The snapshot's Namespaces by name: made once, by the first check that asks.
    pub fn namespaces(&self) -> &NamespacesByName<'a> {
        self.namespaces
            .get_or_init(|| NamespacesByName::new(self.snapshot))
    }
}

/// An analyzer's function: over the snapshot alone, or over the snapshot and its typed config;
/// or none, for the analyzer whose findings come from probing proxies (the command runs it, as
/// it needs I/O: [`runtime`] holds its pure half).
#[derive(Clone, Copy)]
pub enum Run {
    Snapshot(fn(&Snapshot, &mut Vec<Finding>)),
    Config(fn(&Input, &mut Vec<Finding>)),
    Probe,
}

/// One analyzer: its entry in the one registry ([`all`]).
pub struct Analyzer {
    /// The name `-v`, `--analyzer` and `--list-analyzers` use: Istio's for the analyzers of
    /// Istio's config kinds, ours for the others.
    pub name: &'static str,
    /// Istio's name, when an analyzer of ours does the job of one of Istio's (`--analyzer`
    /// takes either).
    pub istio_name: Option<&'static str>,
    pub description: &'static str,
    /// Every code it may emit (a test runs the grid and fails on any other).
    pub codes: &'static [&'static MessageType],
    /// The kinds it reads; when one could not be read (RBAC), the analyzer is skipped and the
    /// report says so.
    pub needs: &'static [Kind],
    /// False for the analyzers that run only when named with `--analyzer`, as Istio leaves them
    /// out of its default set (`annotations.AlphaAnalyzer`: too noisy with annotations set by
    /// default).
    pub on_by_default: bool,
    pub run: Run,
}

impl Analyzer {
    /// True when it probes proxies (live clusters only, off with `--no-probe`).
    pub fn probes(&self) -> bool {
        matches!(self.run, Run::Probe)
    }
}

/// Every analyzer of mesh-doctor's own, in the order they run (then [`istio_table::ANALYZERS`]).
pub const OWN_ANALYZERS: &[Analyzer] = &[
    Analyzer {
        name: "object-rules",
        istio_name: None,
        on_by_default: true,
        description: "Files: objects kubectl apply would refuse for Kubernetes' own rules (apiVersion, kind, name, namespace, labels, annotation keys), every kind",
        codes: &[messages::MD0003],
        needs: &[],
        run: Run::Snapshot(object_rules::analyze),
    },
    Analyzer {
        name: "crd-schemas",
        istio_name: None,
        on_by_default: true,
        description: "Files: Istio and Gateway API objects whose spec the CRD's OpenAPI schema refuses (unknown fields, types, enums, required, patterns, formats, bounds, lengths, item counts, oneOf, anyOf, not, list-type duplicates, null list items) and CEL rules (x-kubernetes-validations)",
        codes: &[messages::MD0003],
        needs: CRD_KINDS,
        run: Run::Snapshot(object_rules::crd_schemas),
    },
    Analyzer {
        name: "injection",
        istio_name: Some("injection.Analyzer"),
        on_by_default: true,
        description: "Namespaces and pods that are (not) enabled for sidecar injection",
        codes: &[
            messages::IST0102,
            messages::IST0103,
            messages::IST0123,
            messages::IST0148,
            messages::MD0103,
            messages::MD0204,
        ],
        needs: &[
            Kind::Namespaces,
            Kind::Pods,
            Kind::ConfigMaps,
            Kind::MutatingWebhookConfigurations,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Snapshot(injection::analyze),
    },
    Analyzer {
        name: "proxy-image",
        istio_name: Some("injection.ImageAnalyzer"),
        on_by_default: true,
        description: "Proxy images that differ from the injector's current image",
        codes: &[messages::IST0158],
        needs: &[
            Kind::Namespaces,
            Kind::Pods,
            Kind::ConfigMaps,
            Kind::ProxyConfigs,
        ],
        run: Run::Snapshot(proxy_image::analyze),
    },
    Analyzer {
        name: "port-names",
        istio_name: Some("service.PortNameAnalyzer"),
        on_by_default: true,
        description: "Service ports whose protocol Istio cannot tell",
        codes: &[messages::IST0118, messages::IST0150],
        needs: &[Kind::Services],
        run: Run::Snapshot(port_names::analyze),
    },
    Analyzer {
        name: "istiod-availability",
        istio_name: None,
        on_by_default: true,
        description: "istiod with one replica or no PodDisruptionBudget behind an injection webhook that fails closed",
        codes: &[messages::MD0201],
        needs: &[
            Kind::MutatingWebhookConfigurations,
            Kind::Deployments,
            Kind::PodDisruptionBudgets,
            Kind::Namespaces,
        ],
        run: Run::Snapshot(control_plane::availability),
    },
    Analyzer {
        name: "webhook-endpoints",
        istio_name: None,
        on_by_default: true,
        description: "Injection webhooks whose Service has no ready endpoint",
        codes: &[messages::MD0202],
        needs: &[
            Kind::MutatingWebhookConfigurations,
            Kind::EndpointSlices,
            Kind::Namespaces,
        ],
        run: Run::Snapshot(control_plane::endpoints),
    },
    Analyzer {
        name: "webhook-failures",
        istio_name: None,
        on_by_default: true,
        description: "FailedCreate events caused by an injection webhook",
        codes: &[messages::MD0203],
        needs: &[
            Kind::Events,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Snapshot(control_plane::failed_creates),
    },
    Analyzer {
        name: "istio-installed",
        istio_name: None,
        on_by_default: true,
        description: "Live: clusters that serve none of Istio's networking.istio.io kinds (Istio not installed)",
        codes: &[messages::MD0206],
        needs: &[],
        run: Run::Snapshot(istio_installed::analyze),
    },
    Analyzer {
        name: "mtls-coherence",
        istio_name: None,
        on_by_default: true,
        description: "DestinationRule TLS modes that the server's PeerAuthentication (or its lack of a sidecar) refuses, per Service port",
        codes: &[messages::MD0401, messages::MD0402],
        needs: &[
            Kind::Services,
            Kind::Pods,
            Kind::Namespaces,
            Kind::DestinationRules,
            Kind::PeerAuthentications,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(mtls::analyze),
    },
    Analyzer {
        name: "destinationrule-merge",
        istio_name: None,
        on_by_default: true,
        description: "DestinationRules for one host that Istio merges (one namespace, same exportTo): a later rule's trafficPolicy or subset that the merge drops, and subsets without labels",
        codes: dr_merge::CODES,
        needs: &[Kind::DestinationRules],
        run: Run::Config(dr_merge::analyze),
    },
    Analyzer {
        name: "destinationrule-selector",
        istio_name: None,
        on_by_default: true,
        description: "DestinationRules with a workloadSelector that leave the other clients of their namespace without any DestinationRule for the host: the rule of the host's namespace hidden from them, or a namespace-wide rule merged into the selector rule",
        codes: dr_selector::CODES,
        needs: &[
            Kind::DestinationRules,
            Kind::Services,
            Kind::Pods,
            Kind::Namespaces,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(dr_selector::analyze),
    },
    Analyzer {
        name: "mtls-port-level",
        istio_name: None,
        on_by_default: true,
        description: "PeerAuthentication portLevelMtls entries for a port none of the selected workloads listens on (the Service port instead of the targetPort)",
        codes: &[messages::MD0405],
        needs: &[
            Kind::Services,
            Kind::Pods,
            Kind::Namespaces,
            Kind::PeerAuthentications,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(policy::port_levels),
    },
    Analyzer {
        name: "authz-unknown-identity",
        istio_name: None,
        on_by_default: true,
        description: "AuthorizationPolicies whose principals or service accounts no workload carries (another trust domain, a namespace that does not exist, a service account no pod or workload runs as)",
        codes: principals::CODES,
        needs: &[
            Kind::Pods,
            Kind::Namespaces,
            Kind::NamespacesBeyondScope,
            Kind::AuthorizationPolicies,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(principals::unknown_identities),
    },
    Analyzer {
        name: "authz-identity",
        istio_name: None,
        on_by_default: true,
        description: "AuthorizationPolicies that match callers by peer identity on workload ports that accept plaintext: ALLOW refuses plaintext callers (403), DENY lets them through",
        codes: &[messages::MD0406, messages::MD0407],
        needs: &[
            Kind::Services,
            Kind::Pods,
            Kind::Namespaces,
            Kind::PeerAuthentications,
            Kind::AuthorizationPolicies,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(policy::identity_policies),
    },
    Analyzer {
        name: "authz-allow-nothing",
        istio_name: None,
        on_by_default: true,
        description: "ALLOW AuthorizationPolicies without rules that are a workload's only ALLOW policy (deny-all), Warning when a route sends traffic to it",
        codes: &[messages::MD0408, messages::MD0409],
        needs: &[
            Kind::Services,
            Kind::Pods,
            Kind::Namespaces,
            Kind::AuthorizationPolicies,
            Kind::VirtualServices,
            Kind::HttpRoutes,
            Kind::GrpcRoutes,
            Kind::TcpRoutes,
            Kind::TlsRoutes,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(policy::allow_nothing),
    },
    Analyzer {
        name: "ambient",
        istio_name: None,
        on_by_default: true,
        description: "Ambient mode: waypoints that carry no traffic or are named outside ambient, AuthorizationPolicies ztunnel does not enforce as written, sidecar pods asked into ambient, captured pods that ask for a sidecar, and (live) pods ambient does not capture",
        codes: ambient::CODES,
        needs: &[
            Kind::Namespaces,
            Kind::Pods,
            Kind::Services,
            Kind::AuthorizationPolicies,
            Kind::ServiceEntries,
            Kind::KubernetesGateways,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(ambient::analyze),
    },
    Analyzer {
        name: "ambient-l7",
        istio_name: None,
        on_by_default: true,
        description: "Ambient mode: RequestAuthentications, Telemetries and WasmPlugins that select ambient workloads or cover an ambient namespace without sidecars (nothing applies them), routes and targetRefs for a Service of an ambient namespace without a usable waypoint, and policies attached to a Gateway that applies nothing",
        codes: ambient_l7::CODES,
        needs: &[
            Kind::Namespaces,
            Kind::Pods,
            Kind::Services,
            Kind::AuthorizationPolicies,
            Kind::RequestAuthentications,
            Kind::Telemetries,
            Kind::WasmPlugins,
            Kind::VirtualServices,
            Kind::HttpRoutes,
            Kind::GrpcRoutes,
            Kind::KubernetesGateways,
            Kind::Deployments,
            Kind::StatefulSets,
            Kind::DaemonSets,
            Kind::CronJobs,
        ],
        run: Run::Config(ambient_l7::analyze),
    },
    Analyzer {
        name: "gateway-certificates",
        istio_name: None,
        on_by_default: true,
        description: "Gateway certificates (the chain of the Secret a credentialName names and, for MUTUAL and OPTIONAL_MUTUAL, the CA certificate of <credentialName>-cacert, else of that Secret) that expire within 30 days or have expired, and a MUTUAL or OPTIONAL_MUTUAL server whose CA Secret holds no CA certificate (the gateway resets its handshakes)",
        codes: certificates::CODES,
        needs: &[
            Kind::Gateways,
            Kind::Pods,
            Kind::Secrets,
            Kind::PodsBeyondScope,
        ],
        run: Run::Config(certificates::gateways),
    },
    Analyzer {
        name: "gateway-api-certificates",
        istio_name: None,
        on_by_default: true,
        description: "Gateway API Gateways of Istio's classes: certificateRefs Istio refuses (not a Secret, not found, no key pair, a certificate that is not PEM, another namespace without ReferenceGrant), spec.tls.frontend caCertificateRefs it refuses, the certificates it serves and the client CA certificate (of caCertificateRefs, else for the MUTUAL option of <first ref>-cacert, else of that Secret) that expire within 30 days or have expired, and listeners that verify clients with no CA certificate istiod sends (the gateway resets their handshakes)",
        codes: gateway_api_certificates::CODES,
        needs: &[
            Kind::KubernetesGateways,
            Kind::GatewayClasses,
            Kind::ReferenceGrants,
            Kind::Secrets,
        ],
        run: Run::Config(gateway_api_certificates::analyze),
    },
    Analyzer {
        name: "mesh-root-certificate",
        istio_name: None,
        on_by_default: true,
        description: "The mesh's root certificate (ConfigMap istio-ca-root-cert, root-cert.pem) when it expires within 30 days or has expired",
        codes: certificates::ROOT_CODES,
        needs: &[Kind::ConfigMaps],
        run: Run::Snapshot(certificates::mesh_root),
    },
    Analyzer {
        name: "cluster-id",
        istio_name: None,
        on_by_default: true,
        description: "Clusters analysed together (--context repeated) that share a CLUSTER_ID",
        codes: &[messages::MD0205],
        needs: &[Kind::Deployments, Kind::Pods],
        run: Run::Snapshot(multicluster::analyze),
    },
];

/// The analyzer that probes the sidecars the snapshot flags (run by the command).
pub const RUNTIME: Analyzer = Analyzer {
    name: runtime::NAME,
    istio_name: None,
    description: runtime::DESCRIPTION,
    codes: runtime::CODES,
    needs: &[Kind::Pods],
    on_by_default: true,
    run: Run::Probe,
};

/// Every analyzer, in the order they run: ours, those of Istio's config kinds, then the one
/// that probes.
pub fn all() -> impl Iterator<Item = &'static Analyzer> {
    OWN_ANALYZERS
        .iter()
        .chain(istio_table::ANALYZERS.iter())
        .chain(std::iter::once(&RUNTIME))
}

/// The analyzer a name given to `--analyzer` means: ours, or Istio's name for it.
pub fn find(name: &str) -> Option<&'static Analyzer> {
    all().find(|a| a.name == name || a.istio_name == Some(name))
}

/// True when `analyzer` runs for a request that names `only` (all on by default when empty).
pub fn selected(analyzer: &Analyzer, only: &[String]) -> bool {
    if only.is_empty() {
        analyzer.on_by_default
    } else {
        only.iter()
            .any(|n| find(n).is_some_and(|a| a.name == analyzer.name))
    }
}

/// Runs the analyzers (all, or those named in `only`, by our name or Istio's) over a snapshot,
/// on all cores (each analyzer on one thread; the findings in the registry's order, so the
/// report is the same as one thread's). `-vv` logs each analyzer's time.
/// The analyzers started before the others: the longest of those that read only the snapshot
/// (`crd-schemas`: a third of the analysis of `bench/gen_manifests.py`'s files, measured).
const STARTS_FIRST: &[&str] = &["crd-schemas"];

pub fn run(snapshot: &Snapshot, only: &[String]) -> Report {
    run_typed(snapshot, TypedSpecs::default(), only, Afterwards::Free)
}

/// What becomes of the typed config when the analysis is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Afterwards {
    /// Freed, as anything else.
    Free,
    /// Left for the process's exit to take back with the rest: the command ends right after
    /// the report is printed (freeing 8,000 typed specs piece by piece cost a live
    /// `analyze -A` of the benchmark cluster 3-5 ms on its critical path).
    Exit,
}

/// [`run`], with the specs of the snapshot's first config objects typed already (by the live
/// read, while its other lists arrived): the analysis types only the others.
pub fn run_typed(
    snapshot: &Snapshot,
    typed: TypedSpecs,
    only: &[String],
    afterwards: Afterwards,
) -> Report {
    let typed = std::sync::Mutex::new(Some(typed));
    let mut report = Report::default();
    let mut chosen: Vec<&Analyzer> = Vec::new();
    for analyzer in all() {
        if analyzer.probes() || !selected(analyzer, only) {
            continue;
        }
        if let Some(kind) = analyzer
            .needs
            .iter()
            .find(|k| snapshot.unavailable.contains_key(*k))
        {
            // The denial itself is said once, where the list failed (`warning: cannot list`).
            report.skipped.push(report::Skipped {
                check: analyzer.name.to_string(),
                reason: format!("it needs {kind}, which could not be listed"),
            });
            continue;
        }
        chosen.push(analyzer);
    }
    // The typed config, made once by the first analyzer that needs it (the others wait for it).
    let input: std::sync::OnceLock<Input> = std::sync::OnceLock::new();
    // The longest analyzer that needs no typed config starts first, so that the config is typed
    // on another core meanwhile; the findings are gathered in the registry's order all the same.
    let mut order: Vec<usize> = (0..chosen.len()).collect();
    order.sort_by_key(|&i| !STARTS_FIRST.contains(&chosen[i].name));
    let ran = crate::parallel::map(&order, |_, &i| {
        let analyzer = chosen[i];
        let started = std::time::Instant::now();
        let mut out = Vec::new();
        match analyzer.run {
            Run::Snapshot(run) => run(snapshot, &mut out),
            Run::Config(run) => {
                let input = input.get_or_init(|| {
                    let started = std::time::Instant::now();
                    let typed = typed
                        .lock()
                        .map(|mut t| t.take())
                        .ok()
                        .flatten()
                        .unwrap_or_default();
                    let config = Config::of_typed(snapshot, typed);
                    tracing::debug!(
                        objects = snapshot.config.len(),
                        us = started.elapsed().as_micros() as u64,
                        "typed the config"
                    );
                    Input::new(snapshot, config)
                });
                run(input, &mut out)
            }
            Run::Probe => {}
        }
        tracing::debug!(
            analyzer = analyzer.name,
            findings = out.len(),
            us = started.elapsed().as_micros() as u64,
            "ran an analyzer"
        );
        // Each finding's line (what the report is sorted and de-duplicated by) made here, on
        // all cores, not after the last analyzer.
        out.into_iter()
            .map(|f| (f.plain_line(), f))
            .collect::<Vec<_>>()
    });
    let mut found: Vec<(usize, Vec<(String, Finding)>)> = order.into_iter().zip(ran).collect();
    found.sort_by_key(|(i, _)| *i);
    let lined: Vec<(String, Finding)> = found.into_iter().flat_map(|(_, out)| out).collect();
    match afterwards {
        // The typed config is freed on another core while the findings are sorted.
        Afterwards::Free => {
            crate::parallel::join(move || drop(input), || report.set_sorted(lined));
        }
        Afterwards::Exit => {
            std::mem::forget(input);
            report.set_sorted(lined);
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_analyzer_has_a_unique_name_and_a_description() {
        let mut names = std::collections::BTreeSet::new();
        for a in all() {
            assert!(names.insert(a.name), "two analyzers are called {}", a.name);
            if let Some(istio) = a.istio_name {
                assert!(names.insert(istio), "{istio} names two analyzers");
            }
            assert!(!a.description.is_empty(), "{} has no description", a.name);
            assert!(!a.codes.is_empty(), "{} declares no code", a.name);
        }
    }

    #[test]
    fn no_analyzer_declares_a_code_twice() {
        for a in all() {
            let mut codes: Vec<&str> = a.codes.iter().map(|m| m.code).collect();
            codes.sort_unstable();
            let before = codes.len();
            codes.dedup();
            assert_eq!(codes.len(), before, "{} declares a code twice", a.name);
        }
    }

    #[test]
    fn names_find_analyzers_and_the_selection_follows_the_defaults() {
        assert_eq!(
            find("injection.Analyzer").map(|a| a.name),
            Some("injection")
        );
        assert_eq!(find("sidecar-runtime").map(|a| a.probes()), Some(true));
        assert!(find("no-such-analyzer").is_none());
        let alpha = find("annotations.AlphaAnalyzer").unwrap();
        assert!(!selected(alpha, &[]));
        assert!(selected(alpha, &["annotations.AlphaAnalyzer".to_string()]));
        assert!(selected(&RUNTIME, &[]));
        assert!(!selected(&RUNTIME, &["injection".to_string()]));
    }
}
