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

/// The typed lists: each config kind's field of [`Config`] and [`TypedSpecs`], and its type.
macro_rules! typed_lists {
    ($($field:ident: $ty:ty),* $(,)?) => {
        /// Config objects' specs read into their types, each with its object's position in the
        /// objects it was typed from, without borrowing them: typed where the objects are read,
        /// while other lists still arrive, then given their objects by [`Config::of_typed`].
        #[derive(Debug, Default)]
        pub struct TypedSpecs {
            $($field: Vec<(usize, $ty)>,)*
            invalid: Vec<(usize, String)>,
            /// How many objects were typed: the first `covers` of the snapshot's config.
            covers: usize,
        }

        impl TypedSpecs {
            /// `other`'s specs after these: typed from the objects right after this one's.
            pub fn append(&mut self, other: TypedSpecs) {
                let offset = self.covers;
                $(self.$field.extend(other.$field.into_iter().map(|(i, spec)| (i + offset, spec)));)*
                self.invalid
                    .extend(other.invalid.into_iter().map(|(i, reason)| (i + offset, reason)));
                self.covers += other.covers;
            }

            /// The specs with their objects, into `config`'s lists (`objects` holds every
            /// position the specs name).
            fn attach<'a>(self, objects: &'a [Located<ConfigObject>], config: &mut Config<'a>) {
                $(config.$field = self
                    .$field
                    .into_iter()
                    .map(|(i, spec)| Typed { resource: &objects[i], spec })
                    .collect();)*
                config.invalid = self
                    .invalid
                    .into_iter()
                    .map(|(i, reason)| (&objects[i], reason))
                    .collect();
            }
        }
    };
}

typed_lists! {
    virtual_services: VirtualService,
    destination_rules: DestinationRule,
    gateways: Gateway,
    service_entries: ServiceEntry,
    sidecars: Sidecar,
    envoy_filters: EnvoyFilter,
    workload_entries: WorkloadEntry,
    workload_groups: WorkloadGroup,
    request_authentications: RequestAuthentication,
    authorization_policies: AuthorizationPolicy,
    peer_authentications: PeerAuthentication,
    telemetries: Telemetry,
    wasm_plugins: WasmPlugin,
    gateway_classes: GatewayClass,
    k8s_gateways: KubernetesGateway,
    http_routes: Route,
    grpc_routes: Route,
    tcp_routes: Route,
    tls_routes: Route,
    reference_grants: ReferenceGrant,
}

impl TypedSpecs {
    /// How many config objects were typed: the first this many of the snapshot's.
    pub fn covers(&self) -> usize {
        self.covers
    }

    /// Reads every object of `objects` into its type: in as many parts as there are cores,
    /// each typed on its own thread, then put together in the objects' order (the analysis
    /// waits for the whole config, so one thread would leave the others idle).
    pub fn of(objects: &[Located<ConfigObject>]) -> TypedSpecs {
        let chunks = crate::parallel::parts(objects, TYPED_PER_THREAD);
        let mut starts = Vec::with_capacity(chunks.len());
        let mut start = 0;
        for chunk in &chunks {
            starts.push(start);
            start += chunk.len();
        }
        let typed = crate::parallel::map(&chunks, |k, chunk| {
            let mut part = TypedSpecs::default();
            for (i, resource) in chunk.iter().enumerate() {
                part.add(starts[k] + i, resource);
            }
            part
        });
        let mut specs = TypedSpecs::default();
        for mut part in typed {
            // Each part names positions in `objects` already.
            part.covers = 0;
            specs.append(part);
        }
        specs.covers = objects.len();
        specs
    }

    /// Types one config object into its list, or into `invalid` with the reason.
    fn add(&mut self, at: usize, resource: &Located<ConfigObject>) {
        let kind = resource.object.kind.as_str();
        if gateway_api::is_gateway_api(&resource.object) {
            if let Err(reason) = self.add_gateway_api(at, resource) {
                self.invalid.push((at, reason));
            }
            return;
        }
        // A Duration Go cannot read makes the whole object unreadable, as to istioctl.
        if let Some(reason) = durations::refused(kind, &resource.object.spec) {
            self.invalid.push((at, reason));
            return;
        }
        let result = match kind {
            "VirtualService" => typed(resource).map(|t| self.virtual_services.push((at, t))),
            "DestinationRule" => typed(resource).map(|t| self.destination_rules.push((at, t))),
            "Gateway" => typed(resource).map(|t| self.gateways.push((at, t))),
            "ServiceEntry" => typed(resource).map(|t| self.service_entries.push((at, t))),
            "Sidecar" => typed(resource).map(|t| self.sidecars.push((at, t))),
            "EnvoyFilter" => typed(resource).map(|t| self.envoy_filters.push((at, t))),
            "WorkloadEntry" => typed(resource).map(|t| self.workload_entries.push((at, t))),
            "WorkloadGroup" => typed(resource).map(|t| self.workload_groups.push((at, t))),
            "RequestAuthentication" => {
                typed(resource).map(|t| self.request_authentications.push((at, t)))
            }
            // Security, telemetry and extensions kinds.
            "AuthorizationPolicy" => {
                typed(resource).map(|t| self.authorization_policies.push((at, t)))
            }
            "PeerAuthentication" => {
                typed(resource).map(|t| self.peer_authentications.push((at, t)))
            }
            "Telemetry" => typed(resource).map(|t| self.telemetries.push((at, t))),
            "WasmPlugin" => typed(resource).map(|t| self.wasm_plugins.push((at, t))),
            _ => Ok(()),
        };
        if let Err(reason) = result {
            self.invalid.push((at, reason));
        }
    }

    /// A `gateway.networking.k8s.io` object into its list (kept apart from Istio's kinds of
    /// the same name).
    fn add_gateway_api(
        &mut self,
        at: usize,
        resource: &Located<ConfigObject>,
    ) -> Result<(), String> {
        match resource.object.kind.as_str() {
            "GatewayClass" => self.gateway_classes.push((at, typed(resource)?)),
            "Gateway" => self.k8s_gateways.push((at, typed(resource)?)),
            "HTTPRoute" => self.http_routes.push((at, typed(resource)?)),
            "GRPCRoute" => self.grpc_routes.push((at, typed(resource)?)),
            "TCPRoute" => self.tcp_routes.push((at, typed(resource)?)),
            "TLSRoute" => self.tls_routes.push((at, typed(resource)?)),
            "ReferenceGrant" => self.reference_grants.push((at, typed(resource)?)),
            _ => {}
        }
        Ok(())
    }
}

impl<'a> Config<'a> {
    /// Reads every config object of the snapshot into its type ([`TypedSpecs::of`]).
    pub fn of(snapshot: &'a Snapshot) -> Self {
        Config::of_typed(snapshot, TypedSpecs::default())
    }

    /// [`Config::of`] with the specs of the snapshot's first config objects typed already
    /// (`typed`, made from the first `typed.covers` of them, as the live read does): only the
    /// others are typed here.
    pub fn of_typed(snapshot: &'a Snapshot, typed: TypedSpecs) -> Self {
        let objects = snapshot.config.as_slice();
        // Specs of more objects than there are cannot be these objects': typed again.
        let mut specs = if typed.covers <= objects.len() {
            typed
        } else {
            TypedSpecs::default()
        };
        if specs.covers < objects.len() {
            specs.append(TypedSpecs::of(&objects[specs.covers..]));
        }
        let mut config = Config::default();
        // The Services and pods indexed on another core while the specs get their objects.
        let gateways = !specs.gateways.is_empty();
        let ((services, pods_by_label), ()) = crate::parallel::join(
            || {
                let pods = if gateways {
                    PodsByLabel::new(snapshot)
                } else {
                    PodsByLabel::default()
                };
                (ServicesByNamespace::new(snapshot), pods)
            },
            || specs.attach(objects, &mut config),
        );
        config.services = services;
        config.pods_by_label = pods_by_label;
        config.destination_rules_private_by_default = snapshot
            .mesh_config
            .as_ref()
            .and_then(|m| m.get("defaultDestinationRuleExportTo")?.as_array())
            .is_some_and(|a| a.iter().any(|e| e.as_str() == Some(".")));
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
}

/// A config object's spec read into `T` (an absent spec as an empty one).
fn typed<T: DeserializeOwned>(resource: &Located<ConfigObject>) -> Result<T, String> {
    if resource.object.spec.is_null() {
        serde_json::from_value(serde_json::Value::Object(Default::default()))
    } else {
        T::deserialize(&resource.object.spec)
    }
    .map_err(|e| e.to_string())
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

    /// The names and reasons of a config's lists, for comparing two configs.
    fn lists_of(config: &Config<'_>) -> Vec<String> {
        let mut out: Vec<String> = config
            .virtual_services
            .iter()
            .map(|t| format!("vs {} {:?}", t.name(), t.spec.hosts))
            .collect();
        out.extend(
            config
                .destination_rules
                .iter()
                .map(|t| format!("dr {} {}", t.name(), t.spec.host)),
        );
        out.extend(config.gateways.iter().map(|t| format!("gw {}", t.name())));
        out.extend(
            config
                .invalid
                .iter()
                .map(|(r, reason)| format!("invalid {} {reason}", r.object.name())),
        );
        out
    }

    /// Specs typed ahead, list by list as the live read types them, give the config typed at
    /// once; objects after them (a file's, read after the cluster) are typed by the analysis;
    /// specs that claim more objects than the snapshot holds are not used.
    #[test]
    fn specs_typed_ahead_give_the_config_typed_at_once() {
        let mut snapshot = Snapshot::default();
        for i in 0..1200 {
            let name = format!("o{i:04}");
            let (kind, spec) = match i % 4 {
                0 => ("VirtualService", json!({"hosts": [format!("h{i}")]})),
                1 => ("DestinationRule", json!({"host": format!("h{i}")})),
                2 => ("Gateway", json!({"servers": []})),
                _ => ("VirtualService", json!({"hosts": "h"})),
            };
            snapshot.config.push(object(kind, &name, spec));
        }
        let at_once = lists_of(&Config::of(&snapshot));
        // Three lists typed apart, then put one after the other; the last 200 objects not typed.
        let mut ahead = TypedSpecs::default();
        for part in [
            &snapshot.config[..300],
            &snapshot.config[300..700],
            &snapshot.config[700..1000],
        ] {
            ahead.append(TypedSpecs::of(part));
        }
        assert_eq!(ahead.covers(), 1000);
        assert_eq!(lists_of(&Config::of_typed(&snapshot, ahead)), at_once);
        // Specs of more objects than the snapshot has: not these objects' specs.
        let more = Snapshot {
            config: snapshot.config[..10].to_vec(),
            ..Snapshot::default()
        };
        let too_many = TypedSpecs::of(&snapshot.config);
        let expected = lists_of(&Config::of(&more));
        assert_eq!(lists_of(&Config::of_typed(&more, too_many)), expected);
        assert_eq!(expected.len(), 10);
    }
}
