//! The table of every finding code mesh-doctor can emit.
//!
//! Istio's codes keep Istio's number, name, level and message template exactly, so a person who
//! knows `istioctl analyze` recognises them. Our own codes use the `MD` prefix, numbered in families:
//! 00xx what an analysis did not cover, 01xx sidecar runtime, 02xx control plane, 03xx bootstrap.
//! A number is never reused.
//!
//! Templates use Go's verbs (`%s`, `%v`, `%d`, `%q`) because Istio's do. Each row names its
//! template's arguments, and the row's code is also a type whose one function, `message`, takes
//! exactly those arguments, by name and in order, as Istio's generated
//! `msg.NewReferencedResourceNotFound(r, reftype, refval)` does:
//!
//! ```
//! use mesh_doctor::findings::messages::IST0101;
//! let message = IST0101::message("host", "reviews.default.svc.cluster.local");
//! assert_eq!(message.message_type(), IST0101);
//! assert_eq!(message.text(), "Referenced host not found: \"reviews.default.svc.cluster.local\"");
//! ```
//!
//! A wrong number of arguments does not compile:
//!
//! ```compile_fail,E0061
//! use mesh_doctor::findings::messages::IST0101;
//! let message = IST0101::message("reviews.default.svc.cluster.local");
//! ```
//!
//! and neither does a row whose template has another number of verbs than the row has names
//! (the build evaluates `assert!(count_verbs(template) == args.len())` for every row):
//!
//! ```compile_fail,E0080
//! use mesh_doctor::findings::messages::count_verbs;
//! const _: () = assert!(count_verbs("Referenced %s not found: %q") == 1);
//! ```
//!
//! `IST0101` is both things: the constant `&MessageType` (what findings, the analyzers' `codes`,
//! the baseline and the docs store) and an empty enum that only carries `message`. Rust keeps
//! types and values apart, so the two share the code's name.

use std::fmt;

/// Severity. The order is the order findings are sorted in: errors first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Error,
    Warning,
    Info,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "Error",
            Level::Warning => "Warning",
            Level::Info => "Info",
        }
    }

    /// True when `self` is at least as severe as `threshold`.
    pub fn reaches(self, threshold: Level) -> bool {
        self <= threshold
    }

    /// Parses a level as istioctl does: case-insensitively.
    pub fn parse(text: &str) -> Option<Level> {
        match text.to_ascii_lowercase().as_str() {
            "error" => Some(Level::Error),
            "warning" => Some(Level::Warning),
            "info" => Some(Level::Info),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kind of finding.
#[derive(Debug, PartialEq, Eq)]
pub struct MessageType {
    pub code: &'static str,
    pub name: &'static str,
    pub level: Level,
    pub template: &'static str,
    pub description: &'static str,
    /// The names of the template's arguments, in order: the parameters of the code's `message`
    /// (Istio's `args` of `messages.yaml`, in snake case, for an IST code).
    pub args: &'static [&'static str],
}

/// Where the explanation of every code lives (docs/codes/<CODE>.md in this repository).
pub const DOCS_BASE: &str = "https://github.com/mesh-doctor/mesh-doctor/blob/main/docs/codes";

impl MessageType {
    pub fn documentation_url(&self) -> String {
        format!("{DOCS_BASE}/{}.md", self.code)
    }
}

/// A message: a code and its template filled with its arguments (Istio's `diag.Message`). Only
/// the code's `message` (`IST0101::message(reftype, refval)`), which checks the count, makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    message_type: &'static MessageType,
    text: String,
}

impl Message {
    /// Only the generated `message` functions call this, with as many arguments as verbs.
    fn fill(message_type: &'static MessageType, args: &[Arg]) -> Self {
        Message {
            message_type,
            text: format(message_type.template, args),
        }
    }

    pub fn message_type(&self) -> &'static MessageType {
        self.message_type
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

/// An argument to a message template.
#[derive(Clone, Debug)]
pub enum Arg {
    Str(String),
    Int(i64),
    List(Vec<String>),
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Arg::Str(value.to_string())
    }
}
impl From<String> for Arg {
    fn from(value: String) -> Self {
        Arg::Str(value)
    }
}
impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Arg::Str(value.clone())
    }
}
impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Arg::Int(value)
    }
}
impl From<i32> for Arg {
    fn from(value: i32) -> Self {
        Arg::Int(value.into())
    }
}
impl From<u32> for Arg {
    fn from(value: u32) -> Self {
        Arg::Int(value.into())
    }
}

impl From<usize> for Arg {
    fn from(value: usize) -> Self {
        Arg::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}
impl From<Vec<String>> for Arg {
    fn from(value: Vec<String>) -> Self {
        Arg::List(value)
    }
}

/// How many arguments a template takes: its verbs as [`format`] reads them (`%%` is none).
pub const fn count_verbs(template: &str) -> usize {
    let bytes = template.as_bytes();
    let (mut i, mut verbs) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 1 < bytes.len() {
            if matches!(bytes[i + 1], b's' | b'v' | b'd' | b'q') {
                verbs += 1;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    verbs
}

/// Fills a Go-style template: `%s`/`%v` print the value (a list as `[a b]`), `%d` a number,
/// `%q` a double-quoted string, `%%` a percent sign.
fn format(template: &str, args: &[Arg]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut args = args.iter();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(verb @ ('s' | 'v' | 'd' | 'q')) => match args.next() {
                Some(arg) => write_arg(&mut out, verb, arg),
                None => out.push_str("%!"),
            },
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

fn write_arg(out: &mut String, verb: char, arg: &Arg) {
    match (verb, arg) {
        ('q', Arg::Str(s)) => out.push_str(&quote(s)),
        ('q', Arg::List(items)) => {
            out.push('[');
            out.push_str(&items.iter().map(|s| quote(s)).collect::<Vec<_>>().join(" "));
            out.push(']');
        }
        (_, Arg::Str(s)) => out.push_str(s),
        (_, Arg::Int(n)) => out.push_str(&n.to_string()),
        (_, Arg::List(items)) => {
            out.push('[');
            out.push_str(&items.join(" "));
            out.push(']');
        }
    }
}

/// A Go `%q` rendering: JSON string escaping is the same for the characters that matter here.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// One row per code: `IDENT = "CODE", "Name", Level, (argument, names), "template", "description";`
/// makes the constant `IDENT: &MessageType`, the type `IDENT` with `IDENT::message(argument,
/// names) -> Message`, and a build-time check that the template has one verb per name.
macro_rules! messages {
    ($( $ident:ident = $code:literal, $name:literal, $level:ident, ($($arg:ident),*),
        $template:literal, $description:literal; )*) => {
        $(
            #[doc = concat!($name, ": `` ", $template, " ``")]
            pub const $ident: &MessageType = &MessageType {
                code: $code,
                name: $name,
                level: Level::$level,
                template: $template,
                description: $description,
                args: &[$(stringify!($arg)),*],
            };

            #[doc = concat!("The constructor of ", $code, "'s message (", $name,
                "); the table row is the constant of the same name.")]
            pub enum $ident {}

            impl $ident {
                #[doc = concat!("`` ", $template, " `` with its arguments.")]
                #[allow(clippy::too_many_arguments)]
                pub fn message($($arg: impl Into<Arg>),*) -> Message {
                    Message::fill($ident, &[$($arg.into()),*])
                }
            }

            const _: () = assert!(
                count_verbs($template) == $ident.args.len(),
                concat!($code, ": the template's verbs and the row's argument names differ in number")
            );
        )*
        /// Every code mesh-doctor can emit, in code order.
        pub const ALL: &[&MessageType] = &[$($ident),*];
    };
}

messages! {
    IST0002 = "IST0002", "Deprecated", Warning,
        (detail),
        "Deprecated: %s",
        "A feature that the configuration is depending on is now deprecated.";
    IST0101 = "IST0101", "ReferencedResourceNotFound", Error,
        (reftype, refval),
        "Referenced %s not found: %q",
        "A resource being referenced does not exist.";
    IST0102 = "IST0102", "NamespaceNotInjected", Info,
        (namespace, namespace2),
        "The namespace is not enabled for Istio injection. Run 'kubectl label namespace %s istio-injection=enabled' to enable it, or 'kubectl label namespace %s istio-injection=disabled' to explicitly mark it as not needing injection.",
        "A namespace is not enabled for Istio injection.";
    IST0103 = "IST0103", "PodMissingProxy", Warning,
        (pod_name),
        "The pod %s is missing the Istio proxy. This can often be resolved by restarting or redeploying the workload.",
        "A pod is missing the Istio proxy.";
    IST0106 = "IST0106", "SchemaValidationError", Error,
        (err),
        "Schema validation error: %v",
        "The resource has a schema validation error.";
    IST0107 = "IST0107", "MisplacedAnnotation", Warning,
        (annotation, kind),
        "Misplaced annotation: %s can only be applied to %s",
        "An Istio annotation is applied to the wrong kind of resource.";
    IST0108 = "IST0108", "UnknownAnnotation", Warning,
        (annotation),
        "Unknown annotation: %s",
        "An Istio annotation is not recognized for any kind of resource";
    IST0109 = "IST0109", "ConflictingMeshGatewayVirtualServiceHosts", Error,
        (virtual_services, host),
        "The VirtualServices %s associated with mesh gateway define the same host %s which can lead to undefined behavior. This can be fixed by merging the conflicting VirtualServices into a single resource.",
        "Conflicting hosts on VirtualServices associated with mesh gateway";
    IST0110 = "IST0110", "ConflictingSidecarWorkloadSelectors", Error,
        (conflicting_sidecars, namespace, workload_pod),
        "The Sidecars %v in namespace %q select the same workload pod %q, which can lead to undefined behavior.",
        "A Sidecar resource selects the same workloads as another Sidecar resource";
    IST0111 = "IST0111", "MultipleSidecarsWithoutWorkloadSelectors", Error,
        (conflicting_sidecars, namespace),
        "The Sidecars %v in namespace %q have no workload selector, which can lead to undefined behavior.",
        "More than one sidecar resource in a namespace has no workload selector";
    IST0112 = "IST0112", "VirtualServiceDestinationPortSelectorRequired", Error,
        (dest_host, dest_ports),
        "This VirtualService routes to a service %q that exposes multiple ports %v. Specifying a port in the destination is required to disambiguate.",
        "A VirtualService routes to a service with more than one port exposed, but does not specify which to use.";
    IST0116 = "IST0116", "DeploymentAssociatedToMultipleServices", Warning,
        (deployment, port, services),
        "This deployment %s is associated with multiple services using port %d but different protocols: %v",
        "The resulting pods of a service mesh deployment can't be associated with multiple services using the same port but different protocols.";
    IST0118 = "IST0118", "PortNameIsNotUnderNamingConvention", Info,
        (port_name, port, target_port),
        "Port name %s (port: %d, targetPort: %s) doesn't follow the naming convention of Istio port.",
        "Port name is not under naming convention. Protocol detection is applied to the port.";
    IST0123 = "IST0123", "NamespaceMultipleInjectionLabels", Warning,
        (labels),
        "The namespace has more than one type of injection labels %v, which may lead to undefined behavior. Make sure only one injection label exists.",
        "A namespace has more than one type of injection labels";
    IST0125 = "IST0125", "InvalidAnnotation", Warning,
        (annotation, problem),
        "Invalid annotation %s: %s",
        "An Istio annotation that is not valid";
    IST0126 = "IST0126", "UnknownMeshNetworksServiceRegistry", Error,
        (serviceregistry, network),
        "Unknown service registry %s in network %s",
        "A service registry in Mesh Networks is unknown";
    IST0127 = "IST0127", "NoMatchingWorkloadsFound", Warning,
        (labels),
        "No matching workloads for this resource with the following labels: %s",
        "There aren't workloads matching the resource labels";
    IST0128 = "IST0128", "NoServerCertificateVerificationDestinationLevel", Warning,
        (destinationrule, namespace, mode, host),
        "DestinationRule %s in namespace %s has TLS mode set to %s but no caCertificates are set to validate server identity for host: %s",
        "No caCertificates are set in DestinationRule, this results in no verification of presented server certificate.";
    IST0129 = "IST0129", "NoServerCertificateVerificationPortLevel", Warning,
        (destinationrule, namespace, mode, host, port),
        "DestinationRule %s in namespace %s has TLS mode set to %s but no caCertificates are set to validate server identity for host: %s at port %s",
        "No caCertificates are set in DestinationRule, this results in no verification of presented server certificate for traffic to a given port.";
    IST0130 = "IST0130", "VirtualServiceUnreachableRule", Warning,
        (ruleno, reason),
        "VirtualService rule %v not used (%s).",
        "A VirtualService rule will never be used because a previous rule uses the same match.";
    IST0131 = "IST0131", "VirtualServiceIneffectiveMatch", Info,
        (ruleno, matchno, dupno),
        "VirtualService rule %v match %v is not used (duplicate/overlapping match in rule %v).",
        "A VirtualService rule match duplicates a match in a previous rule.";
    IST0132 = "IST0132", "VirtualServiceHostNotFoundInGateway", Warning,
        (host, virtualservice, gateway),
        "one or more host %v defined in VirtualService %s not found in Gateway %s.",
        "Host defined in VirtualService not found in Gateway.";
    IST0133 = "IST0133", "SchemaWarning", Warning,
        (err),
        "Schema validation warning: %v",
        "The resource has a schema validation warning.";
    IST0134 = "IST0134", "ServiceEntryAddressesRequired", Warning,
        (),
        "ServiceEntry addresses are required for this protocol.",
        "Virtual IP addresses are required for ports serving TCP (or unset) protocol when PILOT_ENABLE_IP_AUTOALLOCATE is not set on a proxy";
    IST0135 = "IST0135", "DeprecatedAnnotation", Info,
        (annotation, extra),
        "Annotation %q has been deprecated%s and may not work in future Istio versions.",
        "A resource is using a deprecated Istio annotation.";
    IST0136 = "IST0136", "AlphaAnnotation", Info,
        (annotation),
        "Annotation %q is part of an alpha-phase feature and may be incompletely supported.",
        "An Istio annotation may not be suitable for production.";
    IST0137 = "IST0137", "DeploymentConflictingPorts", Warning,
        (deployment, services, target_port, ports),
        "This deployment %s is associated with multiple services %v using targetPort %q but different ports: %v.",
        "Two services selecting the same workload with the same targetPort MUST refer to the same port.";
    IST0138 = "IST0138", "GatewayDuplicateCertificate", Warning,
        (gateways),
        "Duplicate certificate in multiple gateways %v may cause 404s if clients re-use HTTP2 connections.",
        "Duplicate certificate in multiple gateways may cause 404s if clients re-use HTTP2 connections.";
    IST0139 = "IST0139", "InvalidWebhook", Error,
        (error),
        "%v",
        "Webhook is invalid or references a control plane service that does not exist.";
    IST0140 = "IST0140", "IngressRouteRulesNotAffected", Warning,
        (virtualservicesubset, virtualservice),
        "Subset in virtual service %s has no effect on ingress gateway %s requests",
        "Route rules have no effect on ingress gateway requests";
    IST0144 = "IST0144", "InvalidApplicationUID", Warning,
        (),
        "User ID (UID) 1337 is reserved for the sidecar proxy.",
        "Application pods should not run as user ID (UID) 1337";
    IST0145 = "IST0145", "ConflictingGateways", Error,
        (gateway, selector, portnumber, hosts),
        "Conflict with gateways %s (workload selector %s, port %s, hosts %v).",
        "Gateway should not have the same selector, port and matched hosts of server";
    IST0146 = "IST0146", "ImageAutoWithoutInjectionWarning", Warning,
        (resource_type, resource_name),
        "%s %s contains `image: auto` but does not match any Istio injection webhook selectors.",
        "Deployments with `image: auto` should be targeted for injection.";
    IST0147 = "IST0147", "ImageAutoWithoutInjectionError", Error,
        (resource_type, resource_name),
        "%s %s contains `image: auto` but does not match any Istio injection webhook selectors.",
        "Pods with `image: auto` should be targeted for injection.";
    IST0148 = "IST0148", "NamespaceInjectionEnabledByDefault", Info,
        (),
        "is enabled for Istio injection, as Istio is installed with enableNamespacesByDefault as true.",
        "user namespace should be injectable if Istio is installed with enableNamespacesByDefault enabled and neither injection label is set.";
    IST0149 = "IST0149", "JwtClaimBasedRoutingWithoutRequestAuthN", Error,
        (key, gateway, pod),
        "The virtual service uses the JWT claim based routing (key: %s) but found no request authentication for the gateway (%s) pod (%s). The request authentication must first be applied for the gateway pods to validate the JWT token and make the claims available for routing.",
        "Virtual service using JWT claim based routing without request authentication.";
    IST0150 = "IST0150", "ExternalNameServiceTypeInvalidPortName", Warning,
        (),
        "Port name for ExternalName service is invalid. Proxy may prevent tcp named ports and unmatched traffic for ports serving TCP protocol from being forwarded correctly",
        "Proxy may prevent tcp named ports and unmatched traffic for ports serving TCP protocol from being forwarded correctly for ExternalName services.";
    IST0151 = "IST0151", "EnvoyFilterUsesRelativeOperation", Warning,
        (),
        "This EnvoyFilter does not have a priority and has a relative patch operation set which can cause the EnvoyFilter not to be applied. Using the INSERT_FIRST of ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.",
        "This EnvoyFilter does not have a priority and has a relative patch operation set which can cause the EnvoyFilter not to be applied. Using the INSERT_FIRST or ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.";
    IST0152 = "IST0152", "EnvoyFilterUsesReplaceOperationIncorrectly", Error,
        (),
        "The REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER.",
        "The REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER.";
    IST0153 = "IST0153", "EnvoyFilterUsesAddOperationIncorrectly", Error,
        (),
        "The ADD operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.",
        "The ADD operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.";
    IST0154 = "IST0154", "EnvoyFilterUsesRemoveOperationIncorrectly", Error,
        (),
        "The REMOVE operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.",
        "The REMOVE operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.";
    IST0155 = "IST0155", "EnvoyFilterUsesRelativeOperationWithProxyVersion", Warning,
        (),
        "This EnvoyFilter does not have a priority and has a relative patch operation (NSTERT_BEFORE/AFTER, REPLACE, MERGE, DELETE) and proxyVersion set which can cause the EnvoyFilter not to be applied during an upgrade. Using the INSERT_FIRST or ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.",
        "This EnvoyFilter does not have a priority and has a relative patch operation (NSTERT_BEFORE/AFTER, REPLACE, MERGE, DELETE) and proxyVersion set which can cause the EnvoyFilter not to be applied during an upgrade. Using the INSERT_FIRST or ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.";
    IST0157 = "IST0157", "InvalidTelemetryProvider", Warning,
        (name, namespace),
        "The Telemetry %v in namespace %q with empty providers will be ignored.",
        "The Telemetry with empty providers will be ignored";
    IST0158 = "IST0158", "PodsIstioProxyImageMismatchInNamespace", Warning,
        (pod_names),
        "The Istio proxy images of the pods running in the namespace do not match the image defined in the injection configuration (pod names: %v). This often happens after upgrading the Istio control-plane and can be fixed by redeploying the pods.",
        "The Istio proxy image of the pods running in the namespace do not match the image defined in the injection configuration.";
    IST0159 = "IST0159", "ConflictingTelemetryWorkloadSelectors", Error,
        (conflicting_telemetries, namespace, workload_pod),
        "The Telemetries %v in namespace %q select the same workload pod %q, which can lead to undefined behavior.",
        "A Telemetry resource selects the same workloads as another Telemetry resource";
    IST0160 = "IST0160", "MultipleTelemetriesWithoutWorkloadSelectors", Error,
        (conflicting_telemetries, namespace),
        "The Telemetries %v in namespace %q have no workload selector, which can lead to undefined behavior.",
        "More than one telemetry resource in a namespace has no workload selector";
    IST0161 = "IST0161", "InvalidGatewayCredential", Error,
        (gateway_name, gateway_namespace),
        "The credential referenced by the Gateway %s in namespace %s is invalid, which can cause the traffic not to work as expected.",
        "The credential provided for the Gateway resource is invalid";
    IST0162 = "IST0162", "GatewayPortNotDefinedOnService", Warning,
        (port, selector),
        "The gateway is listening on a target port (port %d) that is not defined in the Service associated with its workload instances (Pod selector %s). If you need to access the gateway port through the gateway Service, it will not be available.",
        "Gateway port not exposed by service";
    IST0163 = "IST0163", "InvalidExternalControlPlaneConfig", Warning,
        (hostname, webhook, msg),
        "The hostname (%s) that was provided for the webhook (%s) to reach the ingress gateway on the external control plane cluster %s. Traffic may not flow properly.",
        "Address for the ingress gateway on the external control plane is not valid";
    IST0164 = "IST0164", "ExternalControlPlaneAddressIsNotAHostname", Info,
        (hostname, webhook),
        "The address (%s) that was provided for the webhook (%s) to reach the ingress gateway on the external control plane cluster is an IP address. This is not recommended for a production environment.",
        "Address for the ingress gateway on the external control plane is an IP address and not a hostname";
    IST0165 = "IST0165", "ReferencedInternalGateway", Warning,
        (virtualservice, gateway),
        "Gateway reference in VirtualService %s is to an implementation-generated internal Gateway: %s.",
        "VirtualServices should not reference internal Gateways.";
    IST0166 = "IST0166", "IneffectiveSelector", Warning,
        (gateway),
        "Ineffective selector on Kubernetes Gateway %s. Use the TargetRef field instead.",
        "Selector has no effect when applied to Kubernetes Gateways.";
    IST0167 = "IST0167", "IneffectivePolicy", Warning,
        (reason),
        "The policy has no impact: %s.",
        "The policy applied has no impact.";
    IST0170 = "IST0170", "MultiClusterInconsistentService", Warning,
        (service_name, namespace, clusters, error),
        "The service %v in namespace %q is inconsistent across clusters %q, which can lead to undefined behaviors. The inconsistent behaviors are: %v.",
        "The services live in different clusters under multi-cluster deployment model are inconsistent";
    IST0171 = "IST0171", "NegativeConditionStatus", Warning,
        (condition_type, reason, message),
        "A condition with a negative status is present: type=%s, reason=%s, message=%s.",
        "A condition with a negative status is present";
    IST0173 = "IST0173", "DestinationRuleSubsetNotSelectPods", Error,
        (subset),
        "The Subset %s defined in the DestinationRule does not select any pods. Which may lead to 503 UH (NoHealthyUpstream).",
        "Subsets defined in destination does not select any pods.";
    IST0174 = "IST0174", "UnknownDestinationRuleHost", Warning,
        (host),
        "The host %s defined in the DestinationRule does not match any services in the mesh.",
        "Host defined in destination rule does not match any services in the mesh.";
    IST0175 = "IST0175", "JwksUriFetchUnrestricted", Warning,
        (count, names),
        "BLOCKED_CIDRS_IN_JWKS_URIS is not configured but %d RequestAuthentication resource(s) exist (%s). Consider configuring it to restrict JWKS URI fetches to trusted networks.",
        "RequestAuthentication resources exist but BLOCKED_CIDRS_IN_JWKS_URIS is not configured on istiod.";
    IST0176 = "IST0176", "GatewayAPICRDVersionBelowMinimum", Warning,
        (crd, installed_version, minimum_version),
        "Gateway API CRD %q is at version %q but Istio requires at least %q; resources of this kind will not be processed. Upgrade the Gateway API CRDs to satisfy the minimum version.",
        "A Gateway API CRD is installed at a version below the minimum required by this Istio version. Resources of this kind will not be processed.";
    IST0177 = "IST0177", "ConflictingServiceEntryProtocol", Warning,
        (service_entry_names, host, port, protocols),
        "Multiple ServiceEntries (%s) define the same host %q and port %d with conflicting protocols (%s).",
        "Multiple ServiceEntries define the same host and port with conflicting protocols.";
    MD0001 = "MD0001", "AnalysisSkipped", Warning,
        (check, reason),
        "skipped %s: %s",
        "A read or a check did not run (RBAC denied a list, the server failed, a probe was refused), so the analysis is incomplete.";
    MD0002 = "MD0002", "KindNotAnalysed", Warning,
        (documents, kind),
        "%d document(s) of kind %s not analysed: no analyzer reads this kind",
        "The input holds Istio or Gateway API documents of a kind (or a version) that no analyzer reads, so the analysis is incomplete.";
    MD0003 = "MD0003", "ObjectRejected", Error,
        (violation),
        "The API server will reject this object: %s",
        "kubectl apply would fail on this object before any webhook runs: a field Kubernetes requires of every object (apiVersion, kind, metadata.name) is missing, the name, namespace, a label or an annotation key breaks Kubernetes' syntax for it, or its spec breaks its CRD's OpenAPI schema.";
    MD0101 = "MD0101", "SidecarBootstrapCrash", Error,
        (pod, reason),
        "The istio-proxy container of pod %s cannot start: %s",
        "Envoy rejects the bootstrap pilot-agent wrote, so the sidecar crashes at start (CrashLoopBackOff).";
    MD0102 = "MD0102", "SidecarWaitingForControlPlane", Error,
        (pod, detail),
        "The sidecar of pod %s is running but has no configuration from istiod: %s",
        "Envoy started but never received its configuration over xDS, so the pod never becomes ready.";
    MD0103 = "MD0103", "WorkloadWillNotBeInjected", Warning,
        (kind, name, asked_by),
        "%s %s asks for sidecar injection (%s) but no injection webhook matches it: its pods will start without the Istio proxy.",
        "A workload or pod template in an injected namespace matches no MutatingWebhookConfiguration, so the proxy will be missing.";
    MD0104 = "MD0104", "ProxyConfigRejected", Warning,
        (pod, rejected),
        "The proxy of pod %s rejected configuration from istiod (%s).",
        "Envoy refused an xDS update; it keeps running on the last configuration it accepted.";
    MD0105 = "MD0105", "ProxyCertificateExpiring", Warning,
        (pod, state),
        "The workload certificate of pod %s %s.",
        "The proxy's mTLS certificate has expired or expires soon, which usually means it cannot reach the CA on istiod.";
    MD0106 = "MD0106", "ApplicationNotReady", Warning,
        (pod, containers),
        "The proxy of pod %s is LIVE but container(s) %v are not ready: the problem is in the application, not the mesh.",
        "The sidecar works; an application container is failing its own readiness probe.";
    MD0107 = "MD0107", "ProxyUnreachable", Warning,
        (pod, reason),
        "The proxy of pod %s could not be probed: %s",
        "mesh-doctor could not reach the Envoy admin port (timeout, refused, or port-forward denied).";
    MD0108 = "MD0108", "SidecarContainerFailing", Error,
        (pod, detail),
        "The istio-proxy container of pod %s cannot run: %s",
        "The istio-proxy container is killed for memory (OOMKilled) or its image cannot be pulled, so the pod has no working proxy.";
    MD0109 = "MD0109", "ProxyDiscoveryAddressNotIstiod", Error,
        (pod, address, istiod),
        "The sidecar of pod %s sends its xDS requests to %s, which is not istiod (%s).",
        "The discovery address of the proxy's bootstrap (its ADS cluster) points somewhere istiod does not listen.";
    MD0110 = "MD0110", "JobHeldBySidecar", Error,
        (pod, containers),
        "Pod %s never completes: its application container(s) %s exited, but istio-proxy, a classic sidecar, keeps running.",
        "A pod that does not restart its containers (a Job's or CronJob's) keeps running after its application exited, because its classic istio-proxy container does not stop: the Job never completes.";
    MD0111 = "MD0111", "AmbientPodNotCaptured", Error,
        (pod, reasons),
        "Pod %s asks for ambient mode, but ztunnel does not carry its traffic: %s",
        "A pod that asks for ambient mode (istio.io/dataplane-mode=ambient) is not captured: no ready ztunnel on its node, no Istio CNI agent, the redirection annotation missing or disabled, or hostNetwork. Its traffic has no mTLS, identity or policy.";
    MD0112 = "MD0112", "AmbientPodWithSidecar", Warning,
        (pod, asked_by),
        "Pod %s has an istio-proxy sidecar and is also asked into ambient mode by the %s: ztunnel does not capture a pod with a sidecar, its sidecar carries its traffic.",
        "A pod asked into ambient mode also has a sidecar; Istio's CNI agent skips such pods, so the ambient label has no effect on it.";
    MD0113 = "MD0113", "WaypointUnavailable", Warning,
        (object, waypoint, named_by, problem),
        "%s uses waypoint %s (%s), but %s: traffic to it does not go through a waypoint, so no L7 policy, routing or telemetry of the waypoint applies to it.",
        "An object names a waypoint (istio.io/use-waypoint) that does not exist, is not a waypoint, is not Programmed or has no ready pod.";
    MD0114 = "MD0114", "WaypointOutsideAmbient", Info,
        (object, label, why_not),
        "%s has the label %s, but %s: the label has no effect.",
        "An object names a waypoint, but its workloads are not in ambient mode (sidecars and pods outside the mesh never use waypoints).";
    MD0115 = "MD0115", "PolicyTargetsUnusableGateway", Warning,
        (kind, policy, gateway, problem, effect, fix),
        "%s %s targets Gateway %s, which %s: nothing applies the policy, so %s. %s",
        "An AuthorizationPolicy, RequestAuthentication, Telemetry or WasmPlugin attaches with targetRefs to a Gateway API Gateway that does not exist, or (live) has no ready pod, or is a waypoint that is not Accepted or not Programmed: no proxy applies it.";
    MD0116 = "MD0116", "AmbientPodAsksForSidecar", Warning,
        (pod, asked_by, consequence),
        "Pod %s is captured by ambient (ambient.istio.io/redirection: enabled, no sidecar: ztunnel carries its traffic), but its %s asks for a sidecar: %s. Remove the sidecar request from the pod and its workload's template to keep it in ambient mode, or remove istio.io/dataplane-mode=ambient if it should run with a sidecar.",
        "A pod that ambient captured and that has no sidecar carries a label or annotation of its own that asks for one (sidecar.istio.io/inject=true, istio.io/rev).";
    MD0201 = "MD0201", "ControlPlaneNotHighlyAvailable", Warning,
        (revision, problem, webhooks, when, namespaces, fix),
        "istiod revision %q %s, and the injection webhook configuration(s) %v call it with failurePolicy Fail: %s, no pod can be created in %s. %s",
        "An injection webhook with failurePolicy Fail depends on an istiod with fewer than 2 replicas or no PodDisruptionBudget.";
    MD0202 = "MD0202", "InjectionWebhookServiceUnavailable", Error,
        (webhooks, service, state, effects, fix),
        "The injection webhook configuration(s) %v call Service %s, which %s: %s. %s",
        "The Service an injection webhook calls has no ready endpoints, so pods in injected namespaces cannot be created.";
    MD0203 = "MD0203", "PodCreationBlockedByInjectionWebhook", Error,
        (subject, webhook, outcome, count, first, last, workload, advice),
        "%s cannot create pods: the Istio injection webhook %q %s (%d time(s), first at %s, last at %s). The cause is the control plane, not %s: %s",
        "FailedCreate events show that the injection webhook is rejecting pod creation.";
    MD0204 = "MD0204", "RevisionNotServed", Warning,
        (subject, revision, asked_by, served, effect, fix),
        "%s asks for Istio revision %q (%s), which no injection webhook serves (served: %s): %s. %s",
        "A namespace or pod asks for an Istio revision that no injection webhook serves.";
    MD0205 = "MD0205", "ClusterIdCollision", Error,
        (cluster_id, clusters, detail, fix),
        "CLUSTER_ID %q is used by %s (%s). istiod tells clusters apart by this ID, so it mixes up their endpoints and workloads: traffic can go to the other cluster's pods, or to none. %s",
        "Two clusters share a CLUSTER_ID, so istiod mixes their endpoints up.";
    MD0206 = "MD0206", "IstioNotInstalled", Error,
        (cluster, kinds, fix),
        "Istio is not installed in cluster %s: its API server serves none of Istio's networking.istio.io kinds (%s), so there is no Istio configuration to analyse and no control plane for sidecars to join. %s",
        "The cluster has no Istio CRDs: Istio is not installed there (or the context is not the mesh's cluster).";
    MD0301 = "MD0301", "BootstrapUnknownGrpcCluster", Error,
        (config_source, cluster, why, hint),
        "%s sends its xDS requests to gRPC cluster %q, but %s, so Envoy refuses to start (\"Unknown gRPC client cluster\").%s",
        "An ADS, CDS or LDS config source names a gRPC cluster that is not a static (non-EDS) cluster of the bootstrap.";
    MD0302 = "MD0302", "BootstrapDuplicateCluster", Error,
        (cluster, first),
        "Static cluster %q is defined more than once (first at %s); Envoy rejects the bootstrap (\"duplicate cluster\").",
        "Two static clusters of the bootstrap have the same name.";
    MD0303 = "MD0303", "BootstrapRouteUnknownCluster", Error,
        (listener, verb, cluster, clusters, hint),
        "Listener %q %s cluster %q, but no static cluster has that name (static clusters: %s); Envoy rejects a static route table that names an unknown cluster.%s",
        "A route of a static listener sends traffic to a cluster the bootstrap does not define.";
    MD0304 = "MD0304", "BootstrapNodeIdMalformed", Error,
        (state, problem),
        "node.id %s: %s.",
        "node.id is missing although the bootstrap uses xDS, or it is not a proxy ID istiod accepts (<type>~<ip>~<pod>.<namespace>~<domain>).";
    MD0305 = "MD0305", "BootstrapNodeClusterMissing", Error,
        (state),
        "node.cluster %s: Envoy refuses to start a bootstrap that has xDS config sources without node.id and node.cluster (pilot-agent sets it to <app>.<namespace>, or istio-proxy).",
        "node.cluster is missing or empty in a bootstrap that gets its configuration over xDS.";
    MD0306 = "MD0306", "BootstrapReservedPort", Error,
        (binder, port, owner),
        "%s binds port %d, which belongs to %s in a meshed pod; the two collide.",
        "The admin interface or a static listener uses a port the Istio sidecar or pilot-agent already uses (15001, 15006, 15020, 15021, 15090).";
    MD0307 = "MD0307", "BootstrapSyntaxError", Error,
        (line, column, error),
        "The bootstrap cannot be parsed at line %d, column %d: %s.",
        "The bootstrap is not valid JSON or YAML, or is not a single mapping.";
    MD0308 = "MD0308", "BootstrapUnknownField", Error,
        (object, field, hint),
        "%s has no field %q; Envoy rejects a bootstrap with unknown fields.%s",
        "The bootstrap has a field Envoy does not know (top level, node, admin, static_resources, dynamic_resources and their xDS config sources are checked).";
    MD0309 = "MD0309", "EnvoyRejectedBootstrap", Error,
        (reason, note),
        "envoy --mode validate rejected the bootstrap: %s%s",
        "A real Envoy, run with --mode validate on the bootstrap, refused it.";
    MD0310 = "MD0310", "BootstrapNodeIdUnexpected", Warning,
        (node_id, oddities),
        "node.id %q does not look like one pilot-agent writes: %s. istiod takes the proxy's name and DNS domain from it, and its namespace when node.metadata.NAMESPACE is not set (expected <type>~<ip>~<pod>.<namespace>~<namespace>.svc.<cluster domain>).",
        "The node ID of an Istio proxy bootstrap is accepted by istiod, but its name, namespace or DNS domain part is not what pilot-agent writes.";
    MD0311 = "MD0311", "BootstrapListenerAddressConflict", Error,
        (first, second, endpoint, consequence),
        "%s and %s both bind %s; %s.",
        "Two static listeners, or the admin interface and a static listener, bind the same address and port.";
    MD0312 = "MD0312", "BootstrapWrongType", Error,
        (field, object, expected, found),
        "%s (in %s) must be %s, not %s; Envoy cannot read the bootstrap and exits (\"Unable to parse JSON as proto\").",
        "A field of a checked bootstrap message has a value of the wrong JSON type (a string where a message is expected, a list of lists, a number for a string).";
    MD0401 = "MD0401", "ClientTlsRejectedByServer", Error,
        (rule, mode, host, service_port, port_note, sent, server, target_port, policy),
        "DestinationRule %s sets tls.mode %s for %s port %d%s, so sidecars send %s, but %s requires mutual TLS on its port %d (%s): every request from a sidecar that uses this rule fails with 503 (Envoy response flag UF: \"upstream connect error or disconnect/reset before headers\"). Remove the rule's tls setting (auto-mTLS) or set mode ISTIO_MUTUAL.",
        "A DestinationRule sends plaintext (or TLS with other certificates) to a workload port whose PeerAuthentication is STRICT.";
    MD0402 = "MD0402", "IstioMutualToPlaintextServer", Error,
        (rule, host, service_port, port_note, reason),
        "DestinationRule %s sets tls.mode ISTIO_MUTUAL for %s port %d%s, but %s: nothing there terminates Istio's mTLS, so every request from a sidecar that uses this rule fails (503, Envoy response flag UF, or a connection reset). Remove the rule's tls setting (auto-mTLS sends plaintext where there is no sidecar) or give the pods a sidecar.",
        "A DestinationRule sends Istio's mTLS to pods without a sidecar, or to a port whose PeerAuthentication is DISABLE.";
    MD0403 = "MD0403", "AmbientPolicyNotEnforcedAsWritten", Warning,
        (policy, workloads, gap),
        "AuthorizationPolicy %s applies to ambient workload(s) %s, where ztunnel enforces it at L4: %s. Enforce HTTP rules at a waypoint: give the workloads one (istio.io/use-waypoint) and attach the policy to it with targetRefs (kind Service or Gateway) instead of a selector.",
        "An AuthorizationPolicy that selects ambient workloads uses HTTP attributes, or the CUSTOM or AUDIT action, that ztunnel does not enforce.";
    MD0404 = "MD0404", "TargetedPolicyWithoutWaypoint", Warning,
        (policy, target, why),
        "AuthorizationPolicy %s targets %s, which %s: only a waypoint enforces a policy attached to a Service or ServiceEntry, so nothing enforces this one.",
        "An AuthorizationPolicy with targetRefs to a Service or ServiceEntry in ambient mode whose traffic goes through no usable waypoint.";
    MD0405 = "MD0405", "PortLevelMtlsOnUnusedPort", Warning,
        (policy, mode, port, port2, listening, hint, kept),
        "PeerAuthentication %s sets portLevelMtls mode %s for port %d, but no workload it selects listens on port %d (%s)%s, so the setting has no effect: the workload keeps %s. portLevelMtls is keyed by the workload's port (the container port a Service's targetPort names), not the Service port.",
        "A PeerAuthentication's portLevelMtls names a port that none of the workloads it selects listens on (often the Service port instead of the targetPort).";
    MD0406 = "MD0406", "IdentityAllowOnPlaintextPort", Warning,
        (policy, fields, workload, accepts, ports, mode, caller),
        "AuthorizationPolicy %s allows only callers with an Istio identity (%s), but %s accepts %s on %s (%s): %s carries no peer identity, no ALLOW rule there matches it, and it gets 403 \"RBAC: access denied\". Make the port STRICT so callers bring their identity, or allow the plaintext callers by a rule that does not need one.",
        "An ALLOW AuthorizationPolicy matches only callers with a peer identity (principals, namespaces, or a when on source.principal, source.namespace or connection.sni) on a workload port whose PeerAuthentication accepts plaintext.";
    MD0407 = "MD0407", "IdentityDenyBypassedByPlaintext", Error,
        (policy, fields, workload, accepts, ports, mode, caller),
        "AuthorizationPolicy %s denies callers by their Istio identity (%s), but %s accepts %s on %s (%s): %s carries no peer identity, so the rule never matches it and the request is let through (200): the DENY is bypassed by any caller without a sidecar. Make the port STRICT, or deny by what a plaintext caller lacks (notPrincipals or notNamespaces in a DENY rule).",
        "A DENY AuthorizationPolicy matches callers by their peer identity on a workload port whose PeerAuthentication accepts plaintext: plaintext callers are never denied.";
    MD0408 = "MD0408", "AllowPolicyWithoutRules", Info,
        (policy, workload),
        "AuthorizationPolicy %s is an ALLOW policy without rules and the only ALLOW policy for %s: it denies every request to it (403 \"RBAC: access denied\"). If a deny-all is meant, there is nothing to do; otherwise add rules, or an ALLOW policy for the callers that should get through.",
        "An ALLOW AuthorizationPolicy without rules is the only ALLOW policy of a workload, which then refuses every request (a deny-all).";
    MD0409 = "MD0409", "AllowNothingOnRoutedService", Warning,
        (policy, workload, route, service),
        "AuthorizationPolicy %s is an ALLOW policy without rules and the only ALLOW policy for %s, yet %s routes to %s: every request routed there gets 403 \"RBAC: access denied\". Add an ALLOW policy (or rules) for the callers that should get through.",
        "An ALLOW AuthorizationPolicy without rules is the only ALLOW policy of a workload whose Service a VirtualService routes to: the route leads to a deny-all.";
    MD0410 = "MD0410", "CertificateExpiresSoon", Warning,
        (subject, location, date, time_left, fails, fix),
        "The certificate %q in %s expires on %s, %s: from then on %s. %s",
        "A Gateway's certificate (the chain or CA certificate of a Secret an Istio Gateway's credentialName or a Gateway API listener's certificateRefs name) or the mesh's root certificate (ConfigMap istio-ca-root-cert) expires within 30 days.";
    MD0411 = "MD0411", "CertificateExpired", Error,
        (subject, location, date, fails, fix),
        "The certificate %q in %s expired on %s: %s. %s",
        "A Gateway's certificate (the chain or CA certificate of a Secret an Istio Gateway's credentialName or a Gateway API listener's certificateRefs name) or the mesh's root certificate (ConfigMap istio-ca-root-cert) has expired.";
    MD0412 = "MD0412", "AmbientL7ConfigNotApplied", Warning,
        (kind, name, workloads, skips),
        "%s %s selects ambient workload(s) %s, which have no proxy of their own: ztunnel carries their traffic at L4 and does not %s, so nothing applies it. Attach it to a waypoint with targetRefs (kind Service or Gateway) instead of a selector, and give the workloads a waypoint (istio.io/use-waypoint) if they have none.",
        "A RequestAuthentication, Telemetry or WasmPlugin selects ambient workloads with a selector: only a proxy applies these kinds, and in ambient mode that is a waypoint they are attached to with targetRefs.";
    MD0413 = "MD0413", "AmbientConfigWithoutWaypoint", Warning,
        (kind, name, service, why, lost),
        "%s %s is for Service %s, which %s: in ambient mode only a waypoint applies it, so %s. Give the Service a waypoint that carries its traffic (istioctl waypoint apply, then istio.io/use-waypoint on the Service or its namespace).",
        "A VirtualService with HTTP routes, an HTTPRoute or GRPCRoute with a Service parent, or a RequestAuthentication, Telemetry or WasmPlugin with targetRefs to a Service, for a Service of an ambient namespace whose traffic goes through no usable waypoint.";
    MD0414 = "MD0414", "DestinationRulePolicyIgnored", Warning,
        (rule, its_policy, first, host, export, order, first_policy, ignored, target),
        "DestinationRule %s sets a top-level trafficPolicy (%s), but Istio merges it with DestinationRule %s for the same host %s (same namespace, %s, no workloadSelector) and keeps the trafficPolicy of the first rule: %s, so its trafficPolicy (%s) applies and the one of %s is ignored for every client of the merged rule. Move the settings into %s (or a portLevelSettings or subset of it), or delete one of the two rules.",
        "Two DestinationRules for one host that Istio merges both set a top-level trafficPolicy: the later rule's is ignored.";
    MD0415 = "MD0415", "DestinationRuleSubsetShadowed", Warning,
        (rule, subset, labels, first, host, export, order, kept_labels, routed_subset, goes_to),
        "DestinationRule %s defines subset %q (%s), but Istio merges it with DestinationRule %s for the same host %s (same namespace, %s, no workloadSelector), which defines a subset of that name first: %s, so that subset (%s) wins and this one is dropped: traffic routed to subset %q goes to %s. Rename one of the two subsets, or delete the duplicate.",
        "Two DestinationRules for one host that Istio merges define a subset of the same name: the later rule's subset is dropped.";
    MD0416 = "MD0416", "SubsetWithoutLabels", Info,
        (rule, subset, host),
        "DestinationRule %s defines subset %q without labels: it selects every endpoint of %s, as if no subset were named. If that is meant, there is nothing to do; otherwise give it the labels of the pods it stands for.",
        "A DestinationRule subset has no labels, so it selects every endpoint of the host (Istio accepts it).";
    MD0417 = "MD0417", "IdentityOfNoWorkload", Warning,
        (policy, identity, reason, effect),
        "AuthorizationPolicy %s names the identity %q, which no workload of this mesh carries (%s): %s. Correct the principal or service account (kubectl get pods -n NAMESPACE -o custom-columns=NAME:.metadata.name,SA:.spec.serviceAccountName lists who runs as what).",
        "An AuthorizationPolicy names a principal or service account that no workload carries (another trust domain, a namespace that does not exist, or a service account no pod runs as), so its rule never matches.";
    MD0418 = "MD0418", "DestinationRuleHiddenBySelector", Warning,
        (rule, selector, host, namespace, clients, hidden, lost, namespace2),
        "DestinationRule %s has a workloadSelector (%s), and for host %s Istio looks no further than namespace %s's own rules: its other clients (%s) use no DestinationRule for the host, not DestinationRule %s, which applies to them otherwise (%s). Add a DestinationRule without workloadSelector for the host in namespace %s (a copy of the hidden one), or drop the selector rule.",
        "A DestinationRule with a workloadSelector hides, from the clients of its namespace it does not select, the rule of the host's or the root namespace: they use no DestinationRule at all.";
    MD0419 = "MD0419", "DestinationRuleMergedIntoSelector", Warning,
        (rule, selector_rule, selector, host, clients, fix_rule),
        "DestinationRule %s has no workloadSelector and exportTo [\".\"], the exportTo Istio gives DestinationRule %s, which has one (%s), for the same host %s: Istio merges it into that rule and keeps no entry of its own, so it applies only to the workloads that rule selects, and the namespace's other clients (%s) use no DestinationRule for the host. Remove exportTo from %s (or give it another value than [\".\"]).",
        "A DestinationRule without workloadSelector whose exportTo is [\".\"] is merged into a workload-selector rule of the same host and applies only to the workloads that rule selects.";
    MD0420 = "MD0420", "NamespaceWideConfigNotApplied", Warning,
        (kind, name, namespace, workloads, why, lost, fix),
        "%s %s has no selector and no targetRefs, so it is for the proxies of namespace %s, but that namespace is in ambient mode and no proxy there applies it: its workloads (%s) have no sidecar, and %s: %s. %s",
        "A namespace-wide RequestAuthentication, Telemetry or WasmPlugin (no selector, no targetRefs) in an ambient namespace where no pod has a sidecar: ztunnel does not apply these kinds, and a waypoint applies a namespace-wide Telemetry but never a namespace-wide RequestAuthentication or WasmPlugin.";
    MD0421 = "MD0421", "GatewayCertificateRefRefused", Error,
        (listener, gateway, refusal, effect),
        "Listener %q of Gateway %s has a certificateRef Istio refuses: %s. %s Fix the reference or the Secret: it must be a Secret that exists, hold a key pair Istio takes (tls.crt and tls.key, or cert and key) and, in another namespace than the Gateway's, be granted to it by a ReferenceGrant in its own namespace.",
        "A Gateway API Gateway's listener names in tls.certificateRefs a Secret Istio refuses (not found, no key pair, a certificate that is not PEM, another namespace without ReferenceGrant): the listener serves no certificate of it.";
    MD0422 = "MD0422", "GatewayClientCaCertificateMissing", Error,
        (server, gateway, why, fix),
        "%s of Gateway %s verifies client certificates, but the gateway gets no CA certificate to verify them with: %s. The gateway resets every TLS handshake for it before it sends a certificate, with or without a client certificate (the other servers and listeners of the port still answer). %s",
        "A Gateway server or listener that verifies client certificates (MUTUAL, OPTIONAL_MUTUAL) gets no CA certificate it can use (the Secret istiod reads it from has no cacert or ca.crt with a value, or no PEM certificate there, or istiod refuses to send it): the gateway resets every handshake for it.";
    MD0423 = "MD0423", "GatewayCaCertificateRefRefused", Error,
        (listener, gateway, field, refusal, reason, port),
        "Listener %q of Gateway %s verifies client certificates with the CA of %s, which Istio refuses: %s. Istio sets the listener's conditions Accepted=False (reason NoValidCACertificate), ResolvedRefs=False (reason %s) and Programmed=False (\"Bad TLS configuration\") and the gateway gets no listener for it: TLS clients of port %d have their connections refused when no other listener of the Gateway serves that port. Fix the reference: a single caCertificateRefs entry, naming a ConfigMap or Secret (group \"\") that exists and holds the CA certificate(s) in PEM under cacert or ca.crt, granted by a ReferenceGrant in its own namespace when that is not the Gateway's.",
        "A Gateway API Gateway's spec.tls.frontend validation names a CA certificate Istio refuses (more than one, not a ConfigMap or Secret, not found, no cacert or ca.crt, no certificate in it, another namespace without ReferenceGrant): the listeners of the port are not served.";
}

/// Looks a code up (case-insensitively), e.g. for `--suppress`.
pub fn lookup(code: &str) -> Option<&'static MessageType> {
    ALL.iter()
        .copied()
        .find(|m| m.code.eq_ignore_ascii_case(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_go_verbs() {
        let text = format(
            IST0118.template,
            &["foo".into(), 8080i64.into(), "http".into()],
        );
        assert_eq!(
            text,
            "Port name foo (port: 8080, targetPort: http) doesn't follow the naming convention of Istio port."
        );
        assert_eq!(
            format(
                "labels %v and %q",
                &[
                    vec!["a=b".to_string(), "c=d".to_string()].into(),
                    "x".into()
                ]
            ),
            "labels [a=b c=d] and \"x\""
        );
    }

    #[test]
    fn message_fills_the_template_with_the_named_arguments() {
        let message = IST0118::message("foo", 8080i64, "http");
        assert_eq!(message.message_type(), IST0118);
        assert_eq!(
            message.text(),
            format(
                IST0118.template,
                &["foo".into(), 8080i64.into(), "http".into()]
            )
        );
        assert_eq!(IST0118.args, ["port_name", "port", "target_port"]);
    }

    #[test]
    fn every_row_names_one_argument_per_verb() {
        for m in ALL {
            assert_eq!(count_verbs(m.template), m.args.len(), "{}", m.code);
        }
        assert_eq!(count_verbs("100%% of %s, %x"), 1);
        assert_eq!(count_verbs("ends in %"), 0);
    }

    #[test]
    fn codes_are_unique_and_sorted() {
        for pair in ALL.windows(2) {
            assert!(
                pair[0].code < pair[1].code,
                "{} before {}",
                pair[0].code,
                pair[1].code
            );
        }
    }
}
