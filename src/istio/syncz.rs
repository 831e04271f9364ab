//! istiod's sync status ("syncz"), pure: parse what istiod says about each connected proxy and
//! apply istioctl's SYNCED / STALE / NOT SENT / ERROR rules per xDS type.
//!
//! Two shapes are understood:
//! - istiod's HTTP `GET /debug/syncz` (monitoring port 15014): a JSON array of `SyncStatus`
//!   with a `resources` map of `typeUrl -> {sent, acked, sentTime, lastError}` (nonces). Older
//!   istiods have only the flat `cluster_sent`/`cluster_acked`... pairs, which are used then.
//! - istioctl's `proxy-status -o json`: one or more `DiscoveryResponse` documents whose
//!   resources are `envoy.service.status.v3.ClientConfig` (the xDS debug type
//!   `istio.io/debug/syncz`), with `controlPlane.identifier` naming the istiod pod.
//!
//! The rules (istiod `pilot/pkg/xds/statusgen.go` debugSyncStatus): a last error -> ERROR; no
//! nonce sent -> NOT SENT; acked nonce == sent nonce -> SYNCED; otherwise STALE.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The status of one xDS type of one proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum SyncState {
    /// The proxy acknowledged the last push.
    #[serde(rename = "SYNCED")]
    Synced,
    /// The proxy asked for the type, istiod has not sent it (yet).
    #[serde(rename = "NOT_SENT")]
    NotSent,
    /// istiod sent a push the proxy has not acknowledged (yet).
    #[serde(rename = "STALE")]
    Stale,
    /// The proxy rejected (NACKed) the last push.
    #[serde(rename = "ERROR")]
    Error,
}

impl SyncState {
    /// As istioctl prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncState::Synced => "SYNCED",
            SyncState::NotSent => "NOT SENT",
            SyncState::Stale => "STALE",
            SyncState::Error => "ERROR",
        }
    }

    /// istiod's rule, from the nonces and the last error.
    pub fn from_nonces(sent: &str, acked: &str, last_error: &str) -> Self {
        if !last_error.is_empty() {
            SyncState::Error
        } else if sent.is_empty() {
            SyncState::NotSent
        } else if sent == acked {
            SyncState::Synced
        } else {
            SyncState::Stale
        }
    }

    /// The `configStatus` enum names of `envoy.service.status.v3.ConfigStatus`; `UNKNOWN`
    /// (istioctl's IGNORED) gives `None`.
    pub fn from_config_status(text: &str) -> Option<Self> {
        Some(match text {
            "SYNCED" => SyncState::Synced,
            "NOT_SENT" => SyncState::NotSent,
            "STALE" => SyncState::Stale,
            "ERROR" => SyncState::Error,
            _ => return None,
        })
    }
}

pub const CLUSTER_TYPE: &str = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
pub const LISTENER_TYPE: &str = "type.googleapis.com/envoy.config.listener.v3.Listener";
pub const ENDPOINT_TYPE: &str =
    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
pub const ROUTE_TYPE: &str = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
pub const EXTENSION_CONFIG_TYPE: &str =
    "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";

/// The types istioctl always shows in its verbose table, in our column order.
pub const MAIN_TYPES: [&str; 5] = [
    CLUSTER_TYPE,
    LISTENER_TYPE,
    ENDPOINT_TYPE,
    ROUTE_TYPE,
    EXTENSION_CONFIG_TYPE,
];

/// istioctl's short name of a type URL (`pkg/model/xds.go` GetShortType), else the URL.
pub fn short_type(type_url: &str) -> &str {
    let name = type_url.rsplit('/').next().unwrap_or(type_url);
    match name {
        "envoy.config.cluster.v3.Cluster" => "CDS",
        "envoy.config.listener.v3.Listener" => "LDS",
        "envoy.config.route.v3.RouteConfiguration" => "RDS",
        "envoy.config.endpoint.v3.ClusterLoadAssignment" => "EDS",
        "envoy.extensions.transport_sockets.tls.v3.Secret" => "SDS",
        "istio.networking.nds.v1.NameTable" => "NDS",
        "istio.mesh.v1alpha1.ProxyConfig" => "PCDS",
        "envoy.config.core.v3.TypedExtensionConfig" => "ECDS",
        "istio.workload.Address" | "istio.workload.Workload" => "WDS",
        "istio.security.Authorization" => "WADS",
        _ => type_url,
    }
}

/// Column order: CDS, LDS, EDS, RDS first (istioctl's "core" order), then every other type
/// sorted by its full URL (which puts ECDS next).
pub fn type_order(a: &str, b: &str) -> Ordering {
    fn rank(url: &str) -> usize {
        MAIN_TYPES[..4]
            .iter()
            .position(|t| short_type(t) == short_type(url))
            .unwrap_or(4)
    }
    rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
}

/// One xDS type of one proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeStatus {
    pub type_url: String,
    pub state: SyncState,
    /// When istiod last sent this type (its `sentTime` / `lastUpdated`).
    pub last_sent: Option<jiff::Timestamp>,
    pub sent_nonce: Option<String>,
    pub acked_nonce: Option<String>,
    /// Why the proxy rejected the last push (ERROR only).
    pub error: Option<String>,
}

impl TypeStatus {
    pub fn short(&self) -> &str {
        short_type(&self.type_url)
    }
}

/// What one istiod says about one connected proxy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxySync {
    /// The proxy ID: `POD.NAMESPACE` for Kubernetes pods.
    pub id: String,
    /// `sidecar`, `router` (gateways), `ztunnel`...
    pub proxy_type: Option<String>,
    pub cluster_id: Option<String>,
    /// The proxy's Istio version (its `ISTIO_VERSION` metadata).
    pub istio_version: Option<String>,
    pub namespace: Option<String>,
    /// Ordered by [`type_order`].
    pub types: Vec<TypeStatus>,
}

impl ProxySync {
    /// The worst type state, `None` when no type is subscribed.
    pub fn worst(&self) -> Option<SyncState> {
        self.types.iter().map(|t| t.state).max()
    }

    /// (pod name, namespace) from a `POD.NAMESPACE` proxy ID. Namespaces have no dots, pod
    /// names may, so the split is at the last dot.
    pub fn pod_and_namespace(&self) -> Option<(&str, &str)> {
        let (pod, namespace) = self.id.rsplit_once('.')?;
        (!pod.is_empty() && !namespace.is_empty()).then_some((pod, namespace))
    }

    pub fn type_status(&self, type_url: &str) -> Option<&TypeStatus> {
        let short = short_type(type_url);
        self.types.iter().find(|t| t.short() == short)
    }
}

/// istiod's identity, when the answer carries it (the xDS form does; HTTP syncz does not).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControlPlane {
    /// The istiod pod name (`POD_NAME`).
    pub id: String,
    pub version: Option<String>,
}

/// One istiod's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Syncz {
    pub proxies: Vec<ProxySync>,
    pub control_plane: Option<ControlPlane>,
}

/// Why a syncz answer could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a syncz answer: {0}")]
pub struct ParseError(pub String);

/// HTTP `/debug/syncz` entry (istiod `pilot/pkg/xds/debug.go` SyncStatus); every field omitempty.
/// The strings borrow from the answer's text (owned only when JSON escapes them): only what a
/// [`ProxySync`] keeps is copied out.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HttpStatus<'a> {
    #[serde(borrow)]
    cluster_id: Text<'a>,
    #[serde(borrow)]
    proxy: Text<'a>,
    #[serde(borrow)]
    proxy_type: Text<'a>,
    #[serde(borrow)]
    proxy_version: Text<'a>,
    #[serde(borrow)]
    istio_version: Text<'a>,
    #[serde(borrow)]
    cluster_sent: Text<'a>,
    #[serde(borrow)]
    cluster_acked: Text<'a>,
    #[serde(borrow)]
    listener_sent: Text<'a>,
    #[serde(borrow)]
    listener_acked: Text<'a>,
    #[serde(borrow)]
    route_sent: Text<'a>,
    #[serde(borrow)]
    route_acked: Text<'a>,
    #[serde(borrow)]
    endpoint_sent: Text<'a>,
    #[serde(borrow)]
    endpoint_acked: Text<'a>,
    #[serde(borrow)]
    extensionconfig_sent: Text<'a>,
    #[serde(borrow)]
    extensionconfig_acked: Text<'a>,
    #[serde(borrow)]
    resources: Option<std::collections::BTreeMap<Text<'a>, HttpResource<'a>>>,
}

/// A JSON string, borrowed from the text unless it has escapes.
#[derive(Debug, Default, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn non_empty(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.0.to_string())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HttpResource<'a> {
    #[serde(borrow)]
    sent: Text<'a>,
    #[serde(borrow)]
    acked: Text<'a>,
    #[serde(rename = "sentTime", borrow)]
    sent_time: Text<'a>,
    #[serde(rename = "lastError", borrow)]
    last_error: Text<'a>,
}

/// An RFC 3339 time; Go's zero time (`0001-01-01T00:00:00Z`, what an unset `time.Time`
/// marshals to) is `None`.
pub fn parse_time(text: &str) -> Option<jiff::Timestamp> {
    let ts: jiff::Timestamp = text.parse().ok()?;
    (ts.as_second() > -62_000_000_000).then_some(ts)
}

impl HttpStatus<'_> {
    fn into_proxy(self) -> ProxySync {
        let mut types: Vec<TypeStatus> = match self.resources {
            Some(resources) if !resources.is_empty() => resources
                .into_iter()
                .map(|(type_url, r)| TypeStatus {
                    state: SyncState::from_nonces(
                        r.sent.as_str(),
                        r.acked.as_str(),
                        r.last_error.as_str(),
                    ),
                    last_sent: parse_time(r.sent_time.as_str()),
                    sent_nonce: r.sent.non_empty(),
                    acked_nonce: r.acked.non_empty(),
                    error: r.last_error.non_empty(),
                    type_url: type_url.0.into_owned(),
                })
                .collect(),
            // Istio before `resources` existed: the five flat nonce pairs. A type with neither
            // nonce was never asked for.
            _ => [
                (CLUSTER_TYPE, &self.cluster_sent, &self.cluster_acked),
                (LISTENER_TYPE, &self.listener_sent, &self.listener_acked),
                (ENDPOINT_TYPE, &self.endpoint_sent, &self.endpoint_acked),
                (ROUTE_TYPE, &self.route_sent, &self.route_acked),
                (
                    EXTENSION_CONFIG_TYPE,
                    &self.extensionconfig_sent,
                    &self.extensionconfig_acked,
                ),
            ]
            .into_iter()
            .filter(|(_, sent, acked)| !sent.is_empty() || !acked.is_empty())
            .map(|(url, sent, acked)| TypeStatus {
                type_url: url.to_string(),
                state: SyncState::from_nonces(sent.as_str(), acked.as_str(), ""),
                last_sent: None,
                sent_nonce: sent.non_empty(),
                acked_nonce: acked.non_empty(),
                error: None,
            })
            .collect(),
        };
        types.sort_by(|a, b| type_order(&a.type_url, &b.type_url));
        let id = self.proxy.as_str();
        let namespace = id
            .rsplit_once('.')
            .map(|(_, ns)| ns.to_string())
            .filter(|ns| !ns.is_empty());
        ProxySync {
            id: id.to_string(),
            proxy_type: self.proxy_type.non_empty(),
            cluster_id: self.cluster_id.non_empty(),
            istio_version: self
                .istio_version
                .non_empty()
                .or_else(|| self.proxy_version.non_empty()),
            namespace,
            types,
        }
    }
}

/// The HTTP array, read as `Vec<HttpStatus>` would be (same errors), keeping only the entries
/// that name a proxy, each turned into a [`ProxySync`] as soon as it is read.
struct HttpEntries;

impl<'de> serde::de::Visitor<'de> for HttpEntries {
    type Value = Vec<ProxySync>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut proxies = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(entry) = seq.next_element::<HttpStatus<'de>>()? {
            if !entry.proxy.is_empty() {
                proxies.push(entry.into_proxy());
            }
        }
        Ok(proxies)
    }
}

/// Parses one istiod's answer: the HTTP array, or istioctl's `-o json` (one or more
/// DiscoveryResponse documents, one after the other).
pub fn parse(text: &str) -> Result<Syncz, ParseError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(ParseError("the answer is empty".to_string()));
    }
    if trimmed.starts_with('[') {
        // Each entry becomes a ProxySync before the next is read (10,000 entries are ~17 MB).
        let mut de = serde_json::Deserializer::from_str(trimmed);
        let mut proxies = serde::Deserializer::deserialize_seq(&mut de, HttpEntries)
            .and_then(|proxies| de.end().map(|()| proxies))
            .map_err(|e| ParseError(e.to_string()))?;
        proxies.sort_by(|a, b| a.id.cmp(&b.id));
        return Ok(Syncz {
            proxies,
            control_plane: None,
        });
    }
    let mut documents = Vec::new();
    for value in serde_json::Deserializer::from_str(trimmed).into_iter::<Value>() {
        documents.push(value.map_err(|e| ParseError(e.to_string()))?);
    }
    from_responses(documents)
}

/// istioctl's JSON: DiscoveryResponse { resources: [ClientConfig], controlPlane: {identifier} }.
/// Several documents (several istiods) are merged; the control plane is the first one's.
fn from_responses(documents: Vec<Value>) -> Result<Syncz, ParseError> {
    let mut syncz = Syncz::default();
    for doc in documents {
        let Some(resources) = doc.get("resources").and_then(Value::as_array) else {
            if doc.as_object().is_some_and(|o| o.is_empty()) {
                continue;
            }
            return Err(ParseError(
                "expected istiod's /debug/syncz array or DiscoveryResponse objects with `resources`"
                    .to_string(),
            ));
        };
        if syncz.control_plane.is_none() {
            syncz.control_plane = doc
                .pointer("/controlPlane/identifier")
                .and_then(Value::as_str)
                .and_then(parse_identifier);
        }
        for resource in resources {
            syncz.proxies.push(client_config(resource));
        }
    }
    syncz.proxies.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(syncz)
}

/// `{"Component":"istiod","ID":"istiod-abc","Info":{"version":"1.24.2",...}}`
fn parse_identifier(text: &str) -> Option<ControlPlane> {
    let value: Value = serde_json::from_str(text).ok()?;
    let id = value.get("ID")?.as_str()?.to_string();
    let version = value
        .pointer("/Info/version")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some(ControlPlane { id, version })
}

fn client_config(resource: &Value) -> ProxySync {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let node = resource.get("node");
    let meta = node.and_then(|n| n.get("metadata"));
    let mut types: Vec<TypeStatus> = resource
        .get("genericXdsConfigs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let type_url = text(c.get("typeUrl"))?;
            let status = c.get("configStatus").and_then(Value::as_str).unwrap_or("");
            let state = SyncState::from_config_status(status)?;
            Some(TypeStatus {
                type_url,
                state,
                last_sent: c
                    .get("lastUpdated")
                    .and_then(Value::as_str)
                    .and_then(parse_time),
                sent_nonce: None,
                acked_nonce: None,
                error: text(c.pointer("/errorState/details")),
            })
        })
        .collect();
    types.sort_by(|a, b| type_order(&a.type_url, &b.type_url));
    let id = text(node.and_then(|n| n.get("id"))).unwrap_or_default();
    let namespace = text(meta.and_then(|m| m.get("NAMESPACE")))
        .or_else(|| id.rsplit_once('.').map(|(_, ns)| ns.to_string()));
    ProxySync {
        proxy_type: None,
        cluster_id: text(meta.and_then(|m| m.get("CLUSTER_ID"))),
        istio_version: text(meta.and_then(|m| m.get("ISTIO_VERSION"))),
        namespace,
        types,
        id,
    }
}

/// istiod's `/version` answer (`version.Info.String()`: `VERSION-GITREVISION-BUILDSTATUS`,
/// e.g. `1.24.2-8a1b2c3d-Clean`) reduced to the version.
pub fn parse_version_answer(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.contains(char::is_whitespace) || text.starts_with('<') {
        return None;
    }
    let mut parts = text.rsplitn(3, '-');
    let _status = parts.next()?;
    let _revision = parts.next()?;
    let version = parts.next()?;
    (!version.is_empty() && version.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| version.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNCED: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/syncz/synced.json"
    ));
    const STALE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/syncz/stale.json"
    ));
    const ERROR: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/syncz/error.json"
    ));

    fn states(p: &ProxySync) -> Vec<(&str, SyncState)> {
        p.types.iter().map(|t| (t.short(), t.state)).collect()
    }

    #[test]
    fn the_http_array_gives_the_errors_of_a_vec() {
        for text in [
            r#"[{"proxy": 3}]"#,
            "[1]",
            r#"[{"proxy": "a.b"}] x"#,
            "[",
            r#"[{"resources": {"t": {"sent": 1}}}]"#,
        ] {
            let whole = serde_json::from_str::<Vec<HttpStatus>>(text)
                .unwrap_err()
                .to_string();
            assert_eq!(parse(text).unwrap_err().0, whole, "{text}");
        }
        let escaped = parse(r#"[{"proxy": "a\u002eb", "resources": {"t\/u": {"sent": "x"}}}]"#);
        let proxy = &escaped.unwrap().proxies[0];
        assert_eq!(
            (proxy.id.as_str(), proxy.types[0].type_url.as_str()),
            ("a.b", "t/u")
        );
    }

    #[test]
    fn a_synced_answer_from_a_real_istiod() {
        let syncz = parse(SYNCED).unwrap();
        assert_eq!(syncz.control_plane, None);
        let ids: Vec<&str> = syncz.proxies.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["web-1.shop", "web-2.shop"]);
        let web1 = &syncz.proxies[0];
        assert_eq!(web1.proxy_type.as_deref(), Some("sidecar"));
        assert_eq!(web1.cluster_id.as_deref(), Some("Kubernetes"));
        assert_eq!(web1.istio_version.as_deref(), Some("1.31.0-dev-eed52ebb"));
        assert_eq!(web1.namespace.as_deref(), Some("shop"));
        assert_eq!(web1.pod_and_namespace(), Some(("web-1", "shop")));
        use SyncState::*;
        assert_eq!(
            states(web1),
            [
                ("CDS", Synced),
                ("LDS", Synced),
                ("EDS", Synced),
                ("RDS", Synced)
            ]
        );
        assert!(web1.types.iter().all(|t| t.last_sent.is_some()));
        assert_eq!(web1.worst(), Some(Synced));
    }

    #[test]
    fn an_envoy_that_stopped_acking_is_stale() {
        // web-2's Envoy was stopped (SIGSTOP) and a Service created: istiod pushed CDS, LDS and
        // RDS, the proxy never acknowledged them; EDS did not change.
        let syncz = parse(STALE).unwrap();
        let web2 = syncz.proxies.iter().find(|p| p.id == "web-2.shop").unwrap();
        use SyncState::*;
        assert_eq!(
            states(web2),
            [
                ("CDS", Stale),
                ("LDS", Stale),
                ("EDS", Synced),
                ("RDS", Stale)
            ]
        );
        assert_eq!(web2.worst(), Some(Stale));
        let cds = web2.type_status(CLUSTER_TYPE).unwrap();
        assert_ne!(cds.sent_nonce, cds.acked_nonce);
        let web1 = syncz.proxies.iter().find(|p| p.id == "web-1.shop").unwrap();
        assert_eq!(web1.worst(), Some(Synced));
    }

    #[test]
    fn a_nack_is_an_error_with_envoys_words() {
        // istiod with Istio's own filters, which upstream Envoy does not have.
        let syncz = parse(ERROR).unwrap();
        let web1 = &syncz.proxies[0];
        use SyncState::*;
        assert_eq!(
            states(web1),
            [
                ("CDS", Error),
                ("LDS", Error),
                ("EDS", Synced),
                ("RDS", Synced)
            ]
        );
        let cds = web1.type_status(CLUSTER_TYPE).unwrap();
        assert!(
            cds.error
                .as_deref()
                .unwrap()
                .contains("Didn't find a registered implementation for 'istio.metadata_exchange'"),
            "{cds:?}"
        );
        assert_eq!(web1.worst(), Some(Error));
    }

    #[test]
    fn nonces_give_istiods_rules() {
        use SyncState::*;
        assert_eq!(SyncState::from_nonces("", "", ""), NotSent);
        assert_eq!(SyncState::from_nonces("a", "a", ""), Synced);
        assert_eq!(SyncState::from_nonces("b", "a", ""), Stale);
        assert_eq!(SyncState::from_nonces("b", "", ""), Stale);
        assert_eq!(SyncState::from_nonces("b", "b", "nack"), Error);
        assert!(Synced < NotSent && NotSent < Stale && Stale < Error);
    }

    #[test]
    fn a_type_requested_but_never_sent_is_not_sent() {
        // Derived from the real answer: the RDS nonce istiod sent is removed, as it is between
        // a proxy's request and istiod's first push.
        let mut value: Value = serde_json::from_str(SYNCED).unwrap();
        value[0]["resources"][ROUTE_TYPE]
            .as_object_mut()
            .unwrap()
            .remove("sent");
        let syncz = parse(&value.to_string()).unwrap();
        let rds = syncz.proxies[0].type_status(ROUTE_TYPE).unwrap();
        assert_eq!(rds.state, SyncState::NotSent);
    }

    #[test]
    fn old_istiods_without_resources_use_the_flat_nonces() {
        let mut value: Value = serde_json::from_str(STALE).unwrap();
        for entry in value.as_array_mut().unwrap() {
            entry.as_object_mut().unwrap().remove("resources");
        }
        let syncz = parse(&value.to_string()).unwrap();
        let web2 = syncz.proxies.iter().find(|p| p.id == "web-2.shop").unwrap();
        use SyncState::*;
        assert_eq!(
            states(web2),
            [
                ("CDS", Stale),
                ("LDS", Stale),
                ("EDS", Synced),
                ("RDS", Stale)
            ]
        );
    }

    #[test]
    fn no_proxies() {
        assert_eq!(parse("[]\n").unwrap(), Syncz::default());
        assert!(parse("").is_err());
        assert!(parse("404 page not found").is_err());
        assert!(parse("{\"kind\":\"Status\"}").is_err());
    }

    #[test]
    fn istioctl_json_with_the_control_plane_identity() {
        // The shape of istioctl's testdata multiXdsStatusSinglePilot.json.
        let text = r#"{
            "versionInfo": "1.1",
            "resources": [{
                "@type": "type.googleapis.com/envoy.service.status.v3.ClientConfig",
                "node": {"id": "proxy1.shop", "metadata": {"CLUSTER_ID": "cluster1", "ISTIO_VERSION": "1.20", "NAMESPACE": "shop"}},
                "genericXdsConfigs": [
                    {"typeUrl": "type.googleapis.com/envoy.config.listener.v3.Listener", "configStatus": "SYNCED", "lastUpdated": "2026-11-29T15:43:17Z"},
                    {"typeUrl": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "configStatus": "STALE"},
                    {"typeUrl": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "configStatus": "NOT_SENT"},
                    {"typeUrl": "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig", "configStatus": "ERROR", "errorState": {"details": "bad wasm"}},
                    {"typeUrl": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", "configStatus": "UNKNOWN"}
                ]
            }],
            "typeUrl": "type.googleapis.com/envoy.service.status.v3.ClientConfig",
            "controlPlane": {"identifier": "{\"Component\":\"istiod\",\"ID\":\"istiod1\",\"Info\":{\"version\":\"1.1\"}}"}
        }"#;
        let syncz = parse(text).unwrap();
        assert_eq!(
            syncz.control_plane,
            Some(ControlPlane {
                id: "istiod1".into(),
                version: Some("1.1".into())
            })
        );
        let p = &syncz.proxies[0];
        assert_eq!(p.id, "proxy1.shop");
        assert_eq!(p.cluster_id.as_deref(), Some("cluster1"));
        use SyncState::*;
        assert_eq!(
            states(p),
            [
                ("CDS", Stale),
                ("LDS", Synced),
                ("RDS", NotSent),
                ("ECDS", Error)
            ]
        );
        assert_eq!(p.types[3].error.as_deref(), Some("bad wasm"));
        assert!(p.types[1].last_sent.is_some());
        // Two documents one after the other (two istiods), as istioctl prints them.
        let two = format!("{text}\n{text}");
        assert_eq!(parse(&two).unwrap().proxies.len(), 2);
    }

    #[test]
    fn short_names_and_order() {
        assert_eq!(short_type(CLUSTER_TYPE), "CDS");
        assert_eq!(short_type(EXTENSION_CONFIG_TYPE), "ECDS");
        assert_eq!(
            short_type("type.googleapis.com/istio.workload.Address"),
            "WDS"
        );
        assert_eq!(short_type("example.com/Other"), "example.com/Other");
        let mut urls = [
            EXTENSION_CONFIG_TYPE,
            ROUTE_TYPE,
            "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
            ENDPOINT_TYPE,
            LISTENER_TYPE,
            CLUSTER_TYPE,
        ];
        urls.sort_by(|a, b| type_order(a, b));
        let short: Vec<&str> = urls.iter().map(|u| short_type(u)).collect();
        assert_eq!(short, ["CDS", "LDS", "EDS", "RDS", "ECDS", "SDS"]);
    }

    #[test]
    fn istiod_version_answers() {
        let captured = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/version.txt"
        ));
        assert_eq!(
            parse_version_answer(captured).as_deref(),
            Some("1.31.0-dev-eed52ebb")
        );
        assert_eq!(
            parse_version_answer("1.24.2-8a1b2c3d4e-Clean\n").as_deref(),
            Some("1.24.2")
        );
        assert_eq!(parse_version_answer("404 page not found"), None);
        assert_eq!(parse_version_answer(""), None);
    }

    #[test]
    fn go_zero_time_is_no_time() {
        assert_eq!(parse_time("0001-01-01T00:00:00Z"), None);
        assert!(parse_time("2026-11-29T15:43:17.540358832Z").is_some());
    }
}
