//! The analyzers of Istio's config kinds, under Istio's names (as `istioctl analyze
//! --list-analyzers` prints them), with Istio's codes.

use super::{Analyzer, Run};
use super::{
    annotations, application_uid, deprecation, image_auto, mesh_networks, multicluster_service,
    service_association,
};
use super::{destinationrule, envoyfilter, gateway, schema, serviceentry, sidecar, virtualservice};

/// Every analyzer of Istio's config kinds, in the order they run.
pub const ANALYZERS: &[Analyzer] = &[
    Analyzer {
        name: "schema.ValidationAnalyzer.VirtualService",
        description: "Validates VirtualServices as Istio's webhook would, with unreachable rules and ineffective matches",
        codes: &["IST0106", "IST0130", "IST0131"],
        needs: &["virtualservices"],
        run: Run::Config(schema::virtual_services),
    },
    Analyzer {
        name: "schema.ValidationAnalyzer.DestinationRule",
        description: "Validates the TLS settings of DestinationRules as Istio's webhook would",
        codes: &["IST0106"],
        needs: &["destinationrules"],
        run: Run::Config(schema::destination_rules),
    },
    Analyzer {
        name: "schema.ValidationAnalyzer.EnvoyFilter",
        description: "Istio's warnings on EnvoyFilters (internal API, filters without typed_config)",
        codes: &["IST0133"],
        needs: &["envoyfilters"],
        run: Run::Config(schema::envoy_filters),
    },
    Analyzer {
        name: "schema.Decode",
        description: "Istio config whose spec does not fit Istio's schema (a string where a list belongs...)",
        codes: &["IST0106"],
        needs: &[],
        run: Run::Config(schema::invalid),
    },
    Analyzer {
        name: "virtualservice.DestinationHostAnalyzer",
        description: "Checks the destination hosts associated with each virtual service",
        codes: &["IST0101", "IST0112", "IST0140"],
        needs: &[
            "virtualservices",
            "serviceentries",
            "services",
            "services in other namespaces",
        ],
        run: Run::Config(virtualservice::destination_hosts),
    },
    Analyzer {
        name: "virtualservice.DestinationRuleAnalyzer",
        description: "Checks the destination rules associated with each virtual service",
        codes: &["IST0101"],
        needs: &["virtualservices", "destinationrules"],
        run: Run::Config(virtualservice::destination_rules),
    },
    Analyzer {
        name: "virtualservice.GatewayAnalyzer",
        description: "Checks the gateways associated with each virtual service",
        codes: &["IST0101", "IST0132", "IST0165"],
        needs: &["virtualservices", "gateways"],
        run: Run::Config(virtualservice::gateways),
    },
    Analyzer {
        name: "virtualservice.ConflictingMeshGatewayHostsAnalyzer",
        description: "Checks if multiple virtual services associated with the mesh gateway have conflicting hosts",
        codes: &["IST0109"],
        needs: &["virtualservices"],
        run: Run::Config(virtualservice::conflicting_mesh_gateway_hosts),
    },
    Analyzer {
        name: "virtualservice.JWTClaimRouteAnalyzer",
        description: "Checks the VirtualService using JWT claim based routing has corresponding RequestAuthentication",
        codes: &["IST0149"],
        needs: &[
            "virtualservices",
            "requestauthentications",
            "gateways",
            "pods",
            "pods in other namespaces",
        ],
        run: Run::Config(virtualservice::jwt_claim_route),
    },
    Analyzer {
        name: "destinationrule.CaCertificateAnalyzer",
        description: "Checks if caCertificates is set when TLS mode is SIMPLE/MUTUAL",
        codes: &["IST0128", "IST0129"],
        needs: &["destinationrules"],
        run: Run::Config(destinationrule::ca_certificates),
    },
    Analyzer {
        name: "destinationrule.SubsetSelectPodAnalyzer",
        description: "Checks if pods (and workload templates) are selected by subsets in destination rules",
        codes: &["IST0173", "IST0174"],
        needs: &[
            "destinationrules",
            "pods",
            "services",
            "serviceentries",
            "nodes",
            "pods in other namespaces",
            "services in other namespaces",
        ],
        run: Run::Config(destinationrule::subset_select_pods),
    },
    Analyzer {
        name: "gateway.IngressGatewayPortAnalyzer",
        description: "Checks a gateway's ports against the gateway's Kubernetes service ports",
        codes: &["IST0101", "IST0162"],
        needs: &[
            "gateways",
            "pods",
            "services",
            "pods in other namespaces",
            "services in other namespaces",
        ],
        run: Run::Config(gateway::ingress_gateway_ports),
    },
    Analyzer {
        name: "gateway.SecretAnalyzer",
        description: "Checks a gateway's referenced secrets for correctness",
        codes: &["IST0101", "IST0161"],
        needs: &["gateways", "pods", "secrets", "pods in other namespaces"],
        run: Run::Config(gateway::secrets),
    },
    Analyzer {
        name: "gateway.ConflictingGatewayAnalyzer",
        description: "Checks a gateway's selector, port number and hosts",
        codes: &["IST0101", "IST0145"],
        needs: &["gateways", "pods", "pods in other namespaces"],
        run: Run::Config(gateway::conflicting_gateways),
    },
    Analyzer {
        name: "gateway.CertificateAnalyzer",
        description: "Checks a gateway certificate",
        codes: &["IST0138"],
        needs: &["gateways"],
        run: Run::Config(gateway::certificates),
    },
    Analyzer {
        name: "serviceentry.Analyzer",
        description: "Checks the validity of ServiceEntry",
        codes: &["IST0134"],
        needs: &["serviceentries"],
        run: Run::Config(serviceentry::protocol_addresses),
    },
    Analyzer {
        name: "serviceentry.ConflictingServiceEntryProtocolAnalyzer",
        description: "Checks if multiple ServiceEntries define the same host and port with different protocols",
        codes: &["IST0177"],
        needs: &["serviceentries"],
        run: Run::Config(serviceentry::conflicting_protocols),
    },
    Analyzer {
        name: "sidecar.SelectorAnalyzer",
        description: "Validates that sidecars that define a workload selector match at least one pod (or workload template), and that there aren't multiple sidecar resources that select overlapping pods",
        codes: &["IST0101", "IST0110", "IST0111", "IST0167"],
        needs: &["sidecars", "pods", "namespaces"],
        run: Run::Config(sidecar::selectors),
    },
    Analyzer {
        name: "envoyfilter.EnvoyPatchAnalyzer",
        description: "Checks an envoyFilters",
        codes: &["IST0151", "IST0152", "IST0153", "IST0154", "IST0155"],
        needs: &["envoyfilters"],
        run: Run::Config(envoyfilter::patches),
    },
    // Security, telemetry and extensions analyzers.

    // Gateway API, webhook and external control plane analyzers.

    // Workload, annotation, deprecation and mesh networks analyzers.
    Analyzer {
        name: "annotations.K8sAnalyzer",
        description: "Checks for misplaced and invalid Istio annotations in Kubernetes resources",
        codes: &["IST0107", "IST0108", "IST0125", "IST0135"],
        needs: &["namespaces", "services", "pods", "deployments"],
        run: Run::Snapshot(annotations::k8s),
    },
    Analyzer {
        name: "annotations.AlphaAnalyzer",
        description: "Checks for alpha Istio annotations in Kubernetes resources (not run by default, as in Istio)",
        codes: &["IST0136"],
        needs: &["namespaces", "services", "pods", "deployments"],
        run: Run::Snapshot(annotations::alpha),
    },
    Analyzer {
        name: "applicationUID.Analyzer",
        description: "Checks invalid application UID (pods and workload templates)",
        codes: &["IST0144"],
        needs: &["pods", "deployments"],
        run: Run::Snapshot(application_uid::analyze),
    },
    Analyzer {
        name: "deployment.MultiServiceAnalyzer",
        description: "Checks association between services and pods (of workload templates)",
        codes: &["IST0116", "IST0137"],
        needs: &["services", "deployments", "namespaces"],
        run: Run::Snapshot(service_association::analyze),
    },
    Analyzer {
        name: "injection.ImageAutoAnalyzer",
        description: "Makes sure that Pods and Deployments with `image: auto` are going to be injected",
        codes: &["IST0146", "IST0147"],
        needs: &[
            "namespaces",
            "pods",
            "deployments",
            "mutatingwebhookconfigurations",
        ],
        run: Run::Snapshot(image_auto::analyze),
    },
    Analyzer {
        name: "deprecation.DeprecationAnalyzer",
        description: "Checks for deprecated Istio types and fields",
        codes: &["IST0002"],
        needs: &["virtualservices", "sidecars"],
        run: Run::Config(deprecation::analyze),
    },
    Analyzer {
        name: "meshnetworks.MeshNetworksAnalyzer",
        description: "Check the validity of MeshNetworks in the cluster",
        codes: &["IST0126"],
        needs: &["configmaps", "remote secrets"],
        run: Run::Snapshot(mesh_networks::analyze),
    },
    Analyzer {
        name: "services.MultiClusterServiceAnalyzer",
        description: "Check the validity of services in the multi-cluster environment (--context repeated)",
        codes: &["IST0170"],
        needs: &["services"],
        run: Run::Snapshot(multicluster_service::analyze),
    },
];
