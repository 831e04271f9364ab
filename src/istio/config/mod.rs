//! Istio's config resources (`networking.istio.io`): which kinds and versions exist, their
//! typed specs ([`types`]), the snapshot's config objects read into those types once
//! ([`Config::of`]), and the host rules the analyzers share ([`host`]).

pub mod durations;
pub mod gateway_api;
pub mod host;
pub mod security;
pub mod telemetry;
pub mod types;
pub mod zero;

use serde::de::DeserializeOwned;
use std::collections::HashMap;

use crate::kube::label_index::PodsByLabel;
use crate::kube::snapshot::{ConfigObject, Located, Object, ServicesByNamespace, Snapshot};

pub use gateway_api::{GATEWAY_API_GROUP, GatewayClass, KubernetesGateway, ReferenceGrant, Route};
pub use security::*;
pub use telemetry::*;
pub use types::*;

use crate::kube::kind::{self, Kind};

/// The API group of the traffic-management kinds.
pub const NETWORKING_GROUP: &str = kind::NETWORKING_ISTIO;
/// The security kinds' group (`security.istio.io`).
pub const SECURITY_GROUP: &str = kind::SECURITY_ISTIO;
/// `telemetry.istio.io` and `extensions.istio.io`.
pub const TELEMETRY_GROUP: &str = kind::TELEMETRY_ISTIO;
pub const EXTENSIONS_GROUP: &str = kind::EXTENSIONS_ISTIO;

/// Every API group whose kinds ([`Kind::of_group`]) are read from files and listed live.
/// `ProxyConfig` (`networking.istio.io/v1beta1`) is read separately, for the proxy-image analyzer.
pub const GROUPS: &[&str] = &[
    NETWORKING_GROUP,
    SECURITY_GROUP,
    TELEMETRY_GROUP,
    EXTENSIONS_GROUP,
    gateway_api::GATEWAY_API_GROUP,
];

/// The traffic-management kinds as manifests spell them (`VirtualService`, ...), in the order
/// of the kind table.
pub fn networking_kinds() -> impl Iterator<Item = &'static str> {
    Kind::of_group(NETWORKING_GROUP).filter_map(|i| i.kind.manifest_kind())
}

/// The kind of the table that a document's `apiVersion` and `kind` name, when its group is one
/// of [`GROUPS`] and its version one that is read.
pub fn config_kind(api_version: &str, kind: &str) -> Option<Kind> {
    let (group, version) = api_version.split_once('/')?;
    Kind::of_manifest(group, kind).filter(|k| k.versions().contains(&version))
}

/// True for a document of a kind of [`GROUPS`] in a version that is read
/// (`networking.istio.io/<v1|v1beta1|v1alpha3>`, `security.istio.io/<v1|v1beta1>`, ...).
pub fn is_config_kind(api_version: &str, kind: &str) -> bool {
    config_kind(api_version, kind).is_some()
}

/// One config resource with its spec read into `T`.
#[derive(Debug)]
pub struct Typed<'a, T> {
    pub resource: &'a Located<ConfigObject>,
    pub spec: T,
}

impl<T> Typed<'_, T> {
    pub fn name(&self) -> &str {
        self.resource.object.name()
    }
    /// The namespace, `""` for none (Istio's analyzers then use the empty namespace too).
    pub fn namespace(&self) -> &str {
        self.resource.object.namespace().unwrap_or("")
    }
}

/// Below this many config objects per thread, [`Config::of`] types them on fewer threads (a
/// thread costs more than typing a few hundred small specs).
const TYPED_PER_THREAD: usize = 500;

/// The snapshot's config resources, typed. A spec that does not fit the type (a string where a
/// list belongs) is in `invalid` with serde's reason, and in no typed list.
#[derive(Debug, Default)]
pub struct Config<'a> {
    pub virtual_services: Vec<Typed<'a, VirtualService>>,
    pub destination_rules: Vec<Typed<'a, DestinationRule>>,
    pub gateways: Vec<Typed<'a, Gateway>>,
    pub service_entries: Vec<Typed<'a, ServiceEntry>>,
    pub sidecars: Vec<Typed<'a, Sidecar>>,
    pub envoy_filters: Vec<Typed<'a, EnvoyFilter>>,
    pub workload_entries: Vec<Typed<'a, WorkloadEntry>>,
    pub workload_groups: Vec<Typed<'a, WorkloadGroup>>,
    pub request_authentications: Vec<Typed<'a, RequestAuthentication>>,
    // Security, telemetry and extensions kinds.
    pub authorization_policies: Vec<Typed<'a, AuthorizationPolicy>>,
    pub peer_authentications: Vec<Typed<'a, PeerAuthentication>>,
    pub telemetries: Vec<Typed<'a, Telemetry>>,
    pub wasm_plugins: Vec<Typed<'a, WasmPlugin>>,

    // Gateway API kinds.
    pub gateway_classes: Vec<Typed<'a, GatewayClass>>,
    /// Gateway API Gateways (`gateway.networking.k8s.io`), never Istio's [`Self::gateways`].
    pub k8s_gateways: Vec<Typed<'a, KubernetesGateway>>,
    pub http_routes: Vec<Typed<'a, Route>>,
    pub grpc_routes: Vec<Typed<'a, Route>>,
    pub tcp_routes: Vec<Typed<'a, Route>>,
    pub tls_routes: Vec<Typed<'a, Route>>,
    pub reference_grants: Vec<Typed<'a, ReferenceGrant>>,
    pub invalid: Vec<(&'a Located<ConfigObject>, String)>,
    /// The mesh config's `defaultDestinationRuleExportTo` holds `.`: a DestinationRule without
    /// `exportTo` is private to its namespace.
    pub destination_rules_private_by_default: bool,
    /// Namespace -> the positions of its PeerAuthentications and AuthorizationPolicies in
    /// their lists (built by [`Config::of`]: the checks per workload look up one namespace).
    peer_authentications_at: HashMap<String, Vec<usize>>,
    authorization_policies_at: HashMap<String, Vec<usize>>,
    /// The snapshot's Services by namespace (the checks per workload read its namespace's).
    pub services: ServicesByNamespace<'a>,
    /// The snapshot's pods by label, where Istio Gateways look for their workload (empty when
    /// there is no Gateway).
    pub pods_by_label: PodsByLabel<'a>,
}

impl<'a> Config<'a> {
    /// Reads every config object of the snapshot into its type: in as many parts as there are
    /// cores, each typed on its own thread, then put together in the snapshot's order (the
    /// analysis waits for the whole config, so one thread would leave the others idle).
    pub fn of(snapshot: &'a Snapshot) -> Self {
        let chunks = crate::parallel::parts(&snapshot.config, TYPED_PER_THREAD);
        let mut typed = crate::parallel::map(&chunks, |_, chunk| {
            let mut part = Config::default();
            for resource in *chunk {
                part.add(resource);
            }
            part
        })
        .into_iter();
        let mut config = typed.next().unwrap_or_default();
        for mut part in typed {
            config.append(&mut part);
        }
        config.destination_rules_private_by_default = snapshot
            .mesh_config
            .as_ref()
            .and_then(|m| m.get("defaultDestinationRuleExportTo")?.as_array())
            .is_some_and(|a| a.iter().any(|e| e.as_str() == Some(".")));
        config.services = ServicesByNamespace::new(snapshot);
        if !config.gateways.is_empty() {
            config.pods_by_label = PodsByLabel::new(snapshot);
        }
        for (i, p) in config.peer_authentications.iter().enumerate() {
            config
                .peer_authentications_at
                .entry(p.namespace().to_string())
                .or_default()
                .push(i);
        }
        for (i, p) in config.authorization_policies.iter().enumerate() {
            config
                .authorization_policies_at
                .entry(p.namespace().to_string())
                .or_default()
                .push(i);
        }
        config
    }

    /// The PeerAuthentications of `namespace`, in their list's order.
    pub fn peer_authentications_in<'c>(
        &'c self,
        namespace: &str,
    ) -> impl Iterator<Item = &'c Typed<'a, PeerAuthentication>> + 'c {
        let at = self.peer_authentications_at.get(namespace);
        at.into_iter()
            .flatten()
            .map(|&i| &self.peer_authentications[i])
    }

    /// The AuthorizationPolicies of `namespace`, in their list's order.
    pub fn authorization_policies_in<'c>(
        &'c self,
        namespace: &str,
    ) -> impl Iterator<Item = &'c Typed<'a, AuthorizationPolicy>> + 'c {
        let at = self.authorization_policies_at.get(namespace);
        at.into_iter()
            .flatten()
            .map(|&i| &self.authorization_policies[i])
    }

    /// A `gateway.networking.k8s.io` object into its list (kept apart from Istio's kinds of
    /// the same name).
    /// Types one config object into its list, or into `invalid` with the reason.
    fn add(&mut self, resource: &'a Located<ConfigObject>) {
        let kind = resource.object.kind.as_str();
        if gateway_api::is_gateway_api(&resource.object) {
            if let Err(reason) = self.add_gateway_api(resource) {
                self.invalid.push((resource, reason));
            }
            return;
        }
        // A Duration Go cannot read makes the whole object unreadable, as to istioctl.
        if let Some(reason) = durations::refused(kind, &resource.object.spec) {
            self.invalid.push((resource, reason));
            return;
        }
        let result = match kind {
            "VirtualService" => typed(resource).map(|t| self.virtual_services.push(t)),
            "DestinationRule" => typed(resource).map(|t| self.destination_rules.push(t)),
            "Gateway" => typed(resource).map(|t| self.gateways.push(t)),
            "ServiceEntry" => typed(resource).map(|t| self.service_entries.push(t)),
            "Sidecar" => typed(resource).map(|t| self.sidecars.push(t)),
            "EnvoyFilter" => typed(resource).map(|t| self.envoy_filters.push(t)),
            "WorkloadEntry" => typed(resource).map(|t| self.workload_entries.push(t)),
            "WorkloadGroup" => typed(resource).map(|t| self.workload_groups.push(t)),
            "RequestAuthentication" => {
                typed(resource).map(|t| self.request_authentications.push(t))
            }
            // Security, telemetry and extensions kinds.
            "AuthorizationPolicy" => typed(resource).map(|t| self.authorization_policies.push(t)),
            "PeerAuthentication" => typed(resource).map(|t| self.peer_authentications.push(t)),
            "Telemetry" => typed(resource).map(|t| self.telemetries.push(t)),
            "WasmPlugin" => typed(resource).map(|t| self.wasm_plugins.push(t)),
            _ => Ok(()),
        };
        if let Err(reason) = result {
            self.invalid.push((resource, reason));
        }
    }

    /// `other`'s typed objects after this one's, list by list (the parts [`Config::of`] typed
    /// apart, in the snapshot's order).
    fn append(&mut self, other: &mut Config<'a>) {
        self.virtual_services.append(&mut other.virtual_services);
        self.destination_rules.append(&mut other.destination_rules);
        self.gateways.append(&mut other.gateways);
        self.service_entries.append(&mut other.service_entries);
        self.sidecars.append(&mut other.sidecars);
        self.envoy_filters.append(&mut other.envoy_filters);
        self.workload_entries.append(&mut other.workload_entries);
        self.workload_groups.append(&mut other.workload_groups);
        self.request_authentications
            .append(&mut other.request_authentications);
        self.authorization_policies
            .append(&mut other.authorization_policies);
        self.peer_authentications
            .append(&mut other.peer_authentications);
        self.telemetries.append(&mut other.telemetries);
        self.wasm_plugins.append(&mut other.wasm_plugins);
        self.gateway_classes.append(&mut other.gateway_classes);
        self.k8s_gateways.append(&mut other.k8s_gateways);
        self.http_routes.append(&mut other.http_routes);
        self.grpc_routes.append(&mut other.grpc_routes);
        self.tcp_routes.append(&mut other.tcp_routes);
        self.tls_routes.append(&mut other.tls_routes);
        self.reference_grants.append(&mut other.reference_grants);
        self.invalid.append(&mut other.invalid);
    }

    fn add_gateway_api(&mut self, resource: &'a Located<ConfigObject>) -> Result<(), String> {
        match resource.object.kind.as_str() {
            "GatewayClass" => self.gateway_classes.push(typed(resource)?),
            "Gateway" => self.k8s_gateways.push(typed(resource)?),
            "HTTPRoute" => self.http_routes.push(typed(resource)?),
            "GRPCRoute" => self.grpc_routes.push(typed(resource)?),
            "TCPRoute" => self.tcp_routes.push(typed(resource)?),
            "TLSRoute" => self.tls_routes.push(typed(resource)?),
            "ReferenceGrant" => self.reference_grants.push(typed(resource)?),
            _ => {}
        }
        Ok(())
    }
}

fn typed<'a, T: DeserializeOwned>(
    resource: &'a Located<ConfigObject>,
) -> Result<Typed<'a, T>, String> {
    let spec = if resource.object.spec.is_null() {
        serde_json::from_value(serde_json::Value::Object(Default::default()))
    } else {
        T::deserialize(&resource.object.spec)
    }
    .map_err(|e| e.to_string())?;
    Ok(Typed { resource, spec })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::json;

    fn object(kind: &str, name: &str, spec: serde_json::Value) -> Located<ConfigObject> {
        Located::new(ConfigObject {
            api_version: "networking.istio.io/v1".to_string(),
            kind: kind.to_string(),
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some("demo".to_string()),
                ..ObjectMeta::default()
            },
            spec,
            status: serde_json::Value::Null,
        })
    }

    /// Over a thousand objects are typed in parts, on several threads where there are cores:
    /// every list, and the objects that do not fit their type, keep the snapshot's order.
    #[test]
    fn the_config_typed_in_parts_keeps_the_snapshot_order() {
        let mut snapshot = Snapshot::default();
        let mut expected: [Vec<String>; 3] = Default::default();
        for i in 0..1500 {
            let name = format!("o{i:04}");
            let (kind, spec) = match i % 3 {
                0 => ("VirtualService", json!({"hosts": [format!("h{i}")]})),
                1 => ("DestinationRule", json!({"host": format!("h{i}")})),
                // A string where a list belongs: not typed, and said.
                _ => ("VirtualService", json!({"hosts": "h"})),
            };
            expected[i % 3].push(name.clone());
            snapshot.config.push(object(kind, &name, spec));
        }
        let config = Config::of(&snapshot);
        let names = |typed: Vec<&str>| typed.into_iter().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            names(config.virtual_services.iter().map(|t| t.name()).collect()),
            expected[0]
        );
        assert_eq!(
            names(config.destination_rules.iter().map(|t| t.name()).collect()),
            expected[1]
        );
        assert_eq!(
            names(
                config
                    .invalid
                    .iter()
                    .map(|(r, _)| r.object.name())
                    .collect()
            ),
            expected[2]
        );
        assert!(
            config
                .invalid
                .iter()
                .all(|(_, reason)| reason.contains("expected a sequence")),
            "{:?}",
            config.invalid[0].1
        );
    }
}
