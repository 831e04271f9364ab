//! The kinds of object mesh-doctor reads, as one table: the name of each list (what a warning
//! says could not be listed, and what an analyzer declares it reads), the names a user types for
//! it on a command line (`po`, `deploy`, `vs`: kubectl's resource names and short names), and for
//! the kinds of a CRD group, the group, the versions read and the kind as a manifest spells it.
//!
//! Every name of a kind lives here once: the live readers insert into
//! [`crate::kube::snapshot::Snapshot::unavailable`] by [`Kind`], the analyzers declare their
//! inputs as `&[Kind]`, and the Istio and Gateway API groups list their kinds from
//! [`Kind::of_group`]. A misspelt kind does not compile.

use std::fmt;

/// The API group of Istio's traffic-management kinds.
pub const NETWORKING_ISTIO: &str = "networking.istio.io";
/// The API group of Istio's security kinds.
pub const SECURITY_ISTIO: &str = "security.istio.io";
/// The API group of Istio's Telemetry.
pub const TELEMETRY_ISTIO: &str = "telemetry.istio.io";
/// The API group of Istio's WasmPlugin.
pub const EXTENSIONS_ISTIO: &str = "extensions.istio.io";
/// The Gateway API's group.
pub const GATEWAY_API: &str = "gateway.networking.k8s.io";

/// One list mesh-doctor reads (or one read that is not a list, such as the `meshNetworks`
/// value of the `istio` ConfigMap), the key of `Snapshot::unavailable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    // Kubernetes' own kinds.
    Namespaces,
    Pods,
    Services,
    Deployments,
    StatefulSets,
    DaemonSets,
    CronJobs,
    ConfigMaps,
    Secrets,
    Events,
    EndpointSlices,
    PodDisruptionBudgets,
    NetworkPolicies,
    Nodes,
    MutatingWebhookConfigurations,
    ValidatingWebhookConfigurations,
    CustomResourceDefinitions,
    /// With `-n`, the pods of the other namespaces (what crosses namespaces: selectors, gateways).
    PodsBeyondScope,
    /// With `-n`, the Services of the other namespaces.
    ServicesBeyondScope,
    /// With `-n`, the other namespaces.
    NamespacesBeyondScope,
    /// The multicluster remote secrets in `istio-system` (listed by label).
    RemoteSecrets,
    /// The `meshNetworks` value of the `istio` ConfigMap (unavailable when it is not MeshNetworks).
    MeshNetworks,
    // Istio's kinds.
    VirtualServices,
    DestinationRules,
    Gateways,
    ServiceEntries,
    Sidecars,
    EnvoyFilters,
    WorkloadEntries,
    WorkloadGroups,
    ProxyConfigs,
    RequestAuthentications,
    AuthorizationPolicies,
    PeerAuthentications,
    Telemetries,
    WasmPlugins,
    // The Gateway API's kinds.
    GatewayClasses,
    KubernetesGateways,
    HttpRoutes,
    GrpcRoutes,
    TcpRoutes,
    TlsRoutes,
    ReferenceGrants,
}

/// What the table knows of one [`Kind`].
pub struct KindInfo {
    pub kind: Kind,
    /// The name of the list: what `warning: cannot list ...` and "it needs ..." say.
    pub list: &'static str,
    /// For a kind of a CRD group that is read from files and listed live: the group, the
    /// versions whose documents are read (the same schema in all), and the kind as a manifest
    /// spells it.
    pub crd: Option<(&'static str, &'static [&'static str], &'static str)>,
    /// What a user types for this kind, as kubectl takes it (`kubectl get po`, `deploy/web`): the
    /// resource's plural, singular and short names, lower case (for a CRD kind, its CRD's
    /// `spec.names`; a test compares them). Empty for a read that is not a kind of its own.
    pub typed: &'static [&'static str],
}

impl KindInfo {
    /// The same row with the names a user types.
    const fn typed(self, typed: &'static [&'static str]) -> KindInfo {
        KindInfo { typed, ..self }
    }
}

const NETWORKING_VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha3"];
const SECURITY_VERSIONS: &[&str] = &["v1", "v1beta1"];
const TELEMETRY_VERSIONS: &[&str] = &["v1", "v1alpha1"];
const EXTENSIONS_VERSIONS: &[&str] = &["v1alpha1"];
const GATEWAY_API_VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha2"];

const fn core(kind: Kind, list: &'static str) -> KindInfo {
    KindInfo {
        kind,
        list,
        crd: None,
        typed: &[],
    }
}

const fn crd(
    kind: Kind,
    list: &'static str,
    group: &'static str,
    versions: &'static [&'static str],
    manifest_kind: &'static str,
) -> KindInfo {
    KindInfo {
        kind,
        list,
        crd: Some((group, versions, manifest_kind)),
        typed: &[],
    }
}

/// The table, in [`Kind`]'s order (a test checks it).
pub const KINDS: &[KindInfo] = &[
    core(Kind::Namespaces, "namespaces").typed(&["namespaces", "namespace", "ns"]),
    core(Kind::Pods, "pods").typed(&["pods", "pod", "po"]),
    core(Kind::Services, "services").typed(&["services", "service", "svc"]),
    core(Kind::Deployments, "deployments").typed(&["deployments", "deployment", "deploy"]),
    core(Kind::StatefulSets, "statefulsets").typed(&["statefulsets", "statefulset", "sts"]),
    core(Kind::DaemonSets, "daemonsets").typed(&["daemonsets", "daemonset", "ds"]),
    core(Kind::CronJobs, "cronjobs").typed(&["cronjobs", "cronjob", "cj"]),
    core(Kind::ConfigMaps, "configmaps").typed(&["configmaps", "configmap", "cm"]),
    core(Kind::Secrets, "secrets").typed(&["secrets", "secret"]),
    core(Kind::Events, "events").typed(&["events", "event", "ev"]),
    core(Kind::EndpointSlices, "endpointslices").typed(&["endpointslices", "endpointslice"]),
    core(Kind::PodDisruptionBudgets, "poddisruptionbudgets").typed(&[
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "pdb",
    ]),
    core(Kind::NetworkPolicies, "networkpolicies").typed(&[
        "networkpolicies",
        "networkpolicy",
        "netpol",
    ]),
    core(Kind::Nodes, "nodes").typed(&["nodes", "node", "no"]),
    core(
        Kind::MutatingWebhookConfigurations,
        "mutatingwebhookconfigurations",
    )
    .typed(&[
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
    ]),
    core(
        Kind::ValidatingWebhookConfigurations,
        "validatingwebhookconfigurations",
    )
    .typed(&[
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
    ]),
    core(Kind::CustomResourceDefinitions, "customresourcedefinitions").typed(&[
        "customresourcedefinitions",
        "customresourcedefinition",
        "crd",
        "crds",
    ]),
    core(Kind::PodsBeyondScope, "pods in other namespaces"),
    core(Kind::ServicesBeyondScope, "services in other namespaces"),
    core(Kind::NamespacesBeyondScope, "other namespaces"),
    core(Kind::RemoteSecrets, "remote secrets"),
    core(Kind::MeshNetworks, "meshNetworks"),
    crd(
        Kind::VirtualServices,
        "virtualservices",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "VirtualService",
    )
    .typed(&["virtualservices", "virtualservice", "vs"]),
    crd(
        Kind::DestinationRules,
        "destinationrules",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "DestinationRule",
    )
    .typed(&["destinationrules", "destinationrule", "dr"]),
    crd(
        Kind::Gateways,
        "gateways",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "Gateway",
    )
    .typed(&["gateways", "gateway", "gw"]),
    crd(
        Kind::ServiceEntries,
        "serviceentries",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "ServiceEntry",
    )
    .typed(&["serviceentries", "serviceentry", "se"]),
    crd(
        Kind::Sidecars,
        "sidecars",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "Sidecar",
    )
    .typed(&["sidecars", "sidecar"]),
    crd(
        Kind::EnvoyFilters,
        "envoyfilters",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "EnvoyFilter",
    )
    .typed(&["envoyfilters", "envoyfilter"]),
    crd(
        Kind::WorkloadEntries,
        "workloadentries",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "WorkloadEntry",
    )
    .typed(&["workloadentries", "workloadentry", "we"]),
    crd(
        Kind::WorkloadGroups,
        "workloadgroups",
        NETWORKING_ISTIO,
        NETWORKING_VERSIONS,
        "WorkloadGroup",
    )
    .typed(&["workloadgroups", "workloadgroup", "wg"]),
    // ProxyConfig is read apart (v1beta1 only, kept as JSON): no CRD entry here.
    core(Kind::ProxyConfigs, "proxyconfigs").typed(&["proxyconfigs", "proxyconfig"]),
    crd(
        Kind::RequestAuthentications,
        "requestauthentications",
        SECURITY_ISTIO,
        SECURITY_VERSIONS,
        "RequestAuthentication",
    )
    .typed(&["requestauthentications", "requestauthentication", "ra"]),
    crd(
        Kind::AuthorizationPolicies,
        "authorizationpolicies",
        SECURITY_ISTIO,
        SECURITY_VERSIONS,
        "AuthorizationPolicy",
    )
    .typed(&["authorizationpolicies", "authorizationpolicy", "ap"]),
    crd(
        Kind::PeerAuthentications,
        "peerauthentications",
        SECURITY_ISTIO,
        SECURITY_VERSIONS,
        "PeerAuthentication",
    )
    .typed(&["peerauthentications", "peerauthentication", "pa"]),
    crd(
        Kind::Telemetries,
        "telemetries",
        TELEMETRY_ISTIO,
        TELEMETRY_VERSIONS,
        "Telemetry",
    )
    .typed(&["telemetries", "telemetry", "telemetry"]),
    crd(
        Kind::WasmPlugins,
        "wasmplugins",
        EXTENSIONS_ISTIO,
        EXTENSIONS_VERSIONS,
        "WasmPlugin",
    )
    .typed(&["wasmplugins", "wasmplugin"]),
    crd(
        Kind::GatewayClasses,
        "gatewayclasses.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "GatewayClass",
    )
    .typed(&["gatewayclasses", "gatewayclass", "gc"]),
    crd(
        Kind::KubernetesGateways,
        "gateways.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "Gateway",
    )
    .typed(&["gateways", "gateway", "gtw"]),
    crd(
        Kind::HttpRoutes,
        "httproutes.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "HTTPRoute",
    )
    .typed(&["httproutes", "httproute"]),
    crd(
        Kind::GrpcRoutes,
        "grpcroutes.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "GRPCRoute",
    )
    .typed(&["grpcroutes", "grpcroute"]),
    crd(
        Kind::TcpRoutes,
        "tcproutes.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "TCPRoute",
    )
    .typed(&["tcproutes", "tcproute"]),
    crd(
        Kind::TlsRoutes,
        "tlsroutes.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "TLSRoute",
    )
    .typed(&["tlsroutes", "tlsroute"]),
    crd(
        Kind::ReferenceGrants,
        "referencegrants.gateway.networking.k8s.io",
        GATEWAY_API,
        GATEWAY_API_VERSIONS,
        "ReferenceGrant",
    )
    .typed(&["referencegrants", "referencegrant", "refgrant"]),
];

/// The kinds of the CRD groups that files hold and the API server validates against their
/// schemas (every row with a group; ProxyConfig is read apart).
pub const CRD_KINDS: &[Kind] = &[
    Kind::VirtualServices,
    Kind::DestinationRules,
    Kind::Gateways,
    Kind::ServiceEntries,
    Kind::Sidecars,
    Kind::EnvoyFilters,
    Kind::WorkloadEntries,
    Kind::WorkloadGroups,
    Kind::RequestAuthentications,
    Kind::AuthorizationPolicies,
    Kind::PeerAuthentications,
    Kind::Telemetries,
    Kind::WasmPlugins,
    Kind::GatewayClasses,
    Kind::KubernetesGateways,
    Kind::HttpRoutes,
    Kind::GrpcRoutes,
    Kind::TcpRoutes,
    Kind::TlsRoutes,
    Kind::ReferenceGrants,
];

impl Kind {
    /// This kind's row of [`KINDS`].
    pub fn info(self) -> &'static KindInfo {
        // The table is in the enum's order (tested), so the discriminant is the index.
        &KINDS[self as usize]
    }

    /// The name of the list, as warnings and skipped analyzers say it.
    pub fn list_name(self) -> &'static str {
        self.info().list
    }

    /// The kind of a CRD group that a manifest `kind` of `group` names.
    pub fn of_manifest(group: &str, kind: &str) -> Option<Kind> {
        KINDS
            .iter()
            .find(|i| i.crd.is_some_and(|(g, _, k)| g == group && k == kind))
            .map(|i| i.kind)
    }

    /// The kinds of one CRD group that are read from files and listed live.
    pub fn of_group(group: &str) -> impl Iterator<Item = &'static KindInfo> + '_ {
        KINDS
            .iter()
            .filter(move |i| i.crd.is_some_and(|(g, _, _)| g == group))
    }

    /// The versions of this kind's group that are read (empty for a kind of no CRD group).
    pub fn versions(self) -> &'static [&'static str] {
        self.info().crd.map_or(&[], |(_, v, _)| v)
    }

    /// The kind a user typed (`po`, `deploy`, `vs`, `virtualservices.networking.istio.io`), case
    /// aside, among the kinds of the table; a name two kinds share (`gateway`) is the first
    /// row's (Istio's Gateway), and `NAME.GROUP` picks the kind of that group.
    pub fn from_typed(text: &str) -> Option<Kind> {
        let text = text.to_ascii_lowercase();
        let (name, group) = match text.split_once('.') {
            Some((name, group)) => (name, Some(group)),
            None => (text.as_str(), None),
        };
        KINDS
            .iter()
            .filter(|i| match (group, i.crd) {
                (None, _) => true,
                (Some(g), Some((own, _, _))) => g == own,
                (Some(_), None) => false,
            })
            .find(|i| i.typed.contains(&name))
            .map(|i| i.kind)
    }

    /// The kind as a manifest spells it (`VirtualService`), for a kind of a CRD group.
    pub fn manifest_kind(self) -> Option<&'static str> {
        self.info().crd.map(|(_, _, k)| k)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.list_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_enum_and_names_are_unique() {
        for (i, info) in KINDS.iter().enumerate() {
            assert_eq!(info.kind as usize, i, "{} is out of order", info.list);
        }
        let mut lists: Vec<&str> = KINDS.iter().map(|i| i.list).collect();
        lists.sort_unstable();
        let before = lists.len();
        lists.dedup();
        assert_eq!(lists.len(), before, "two kinds share a list name");
        assert_eq!(KINDS.last().unwrap().kind, Kind::ReferenceGrants);
        let with_group: Vec<Kind> = KINDS
            .iter()
            .filter(|i| i.crd.is_some())
            .map(|i| i.kind)
            .collect();
        assert_eq!(with_group, CRD_KINDS);
    }

    #[test]
    fn manifests_find_their_kind_by_group() {
        assert_eq!(
            Kind::of_manifest(NETWORKING_ISTIO, "Gateway"),
            Some(Kind::Gateways)
        );
        assert_eq!(
            Kind::of_manifest(GATEWAY_API, "Gateway"),
            Some(Kind::KubernetesGateways)
        );
        assert_eq!(Kind::of_manifest(NETWORKING_ISTIO, "ProxyConfig"), None);
        assert_eq!(Kind::of_group(SECURITY_ISTIO).count(), 3);
        assert_eq!(Kind::Pods.to_string(), "pods");
    }

    #[test]
    fn typed_names_resolve_as_kubectl_resolves_them() {
        for (typed, kind) in [
            ("po", Kind::Pods),
            ("Pods", Kind::Pods),
            ("deploy", Kind::Deployments),
            ("sts", Kind::StatefulSets),
            ("vs", Kind::VirtualServices),
            ("virtualservices.networking.istio.io", Kind::VirtualServices),
            ("gw", Kind::Gateways),
            ("gateway", Kind::Gateways),
            (
                "gateways.gateway.networking.k8s.io",
                Kind::KubernetesGateways,
            ),
            ("gtw", Kind::KubernetesGateways),
            ("pa", Kind::PeerAuthentications),
        ] {
            assert_eq!(Kind::from_typed(typed), Some(kind), "{typed}");
        }
        for unknown in [
            "rs",
            "pods.networking.istio.io",
            "",
            "remote secrets",
            "meshNetworks",
        ] {
            assert_eq!(Kind::from_typed(unknown), None, "{unknown}");
        }
    }

    /// The CRD kinds' typed names are their CRDs' `spec.names` (plural, singular, short names),
    /// from the CRDs the test cluster installs (tests/fixtures/kinds/crd-names.json, with its
    /// source).
    #[test]
    fn crd_kinds_are_typed_as_their_crds_name_them() {
        let names: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/kinds/crd-names.json"))
                .unwrap();
        let spec_names = |key: &str| -> Vec<&str> {
            let crd = &names["names"][key];
            let mut all = vec![
                crd["plural"].as_str().unwrap(),
                crd["singular"].as_str().unwrap(),
            ];
            all.extend(
                crd["shortNames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap()),
            );
            all
        };
        for info in KINDS {
            if let Some((group, _, kind)) = info.crd {
                assert_eq!(
                    info.typed,
                    spec_names(&format!("{group}/{kind}")),
                    "{group}/{kind}"
                );
            }
        }
        assert_eq!(
            Kind::ProxyConfigs.info().typed,
            spec_names("networking.istio.io/ProxyConfig")
        );
    }
}
