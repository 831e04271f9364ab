//! What TLS an outbound cluster of a sidecar sends, read from Envoy's
//! `/config_dump?resource=dynamic_active_clusters`: Istio's auto mTLS is a pair of
//! `transport_socket_matches` (`tlsMode-istio`, `tlsMode-disabled`), a DestinationRule's TLS
//! mode is one `transport_socket` (`envoy.transport_sockets.tls`), and `DISABLE` is neither.
//! The shapes were read off the Envoy of the test node's sidecars, with each mode set.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::admin::ParseError;

/// The TLS an outbound cluster sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamTls {
    /// Istio's mTLS to endpoints with a sidecar, plaintext to the others.
    AutoMtls,
    /// TLS to every endpoint (ISTIO_MUTUAL, SIMPLE or MUTUAL).
    Tls,
    /// Plaintext (`tls.mode: DISABLE`).
    Plaintext,
}

impl UpstreamTls {
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamTls::AutoMtls => "auto mTLS",
            UpstreamTls::Tls => "TLS",
            UpstreamTls::Plaintext => "plaintext",
        }
    }

    /// What a DestinationRule's TLS mode (`None`: none set) makes Envoy hold.
    pub fn of_mode(mode: Option<&str>) -> UpstreamTls {
        match mode {
            None => UpstreamTls::AutoMtls,
            Some("DISABLE") => UpstreamTls::Plaintext,
            Some(_) => UpstreamTls::Tls,
        }
    }
}

fn is_tls(socket: &Value) -> bool {
    socket.get("name").and_then(Value::as_str) == Some("envoy.transport_sockets.tls")
        || socket
            .pointer("/typed_config/@type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("UpstreamTlsContext"))
}

/// The TLS of a cluster with `transport_socket_matches`. The `hbone` entry (matching
/// `tunnel: http`, present when istiod runs with ambient enabled) carries traffic to ambient
/// endpoints and is left out. Auto mTLS is a TLS entry for `tlsMode: istio` endpoints beside a
/// plaintext catch-all; otherwise the catch-all entry (no or an empty `match`) decides: a
/// DestinationRule's TLS mode there is TLS to every endpoint, `DISABLE` plaintext.
fn of_matches(matches: &[Value]) -> UpstreamTls {
    let entries: Vec<&Value> = matches
        .iter()
        .filter(|m| m.pointer("/match/tunnel").is_none())
        .collect();
    let socket_is_tls = |m: &Value| m.get("transport_socket").is_some_and(is_tls);
    let for_istio = entries.iter().any(|m| {
        m.pointer("/match/tlsMode").and_then(Value::as_str) == Some("istio") && socket_is_tls(m)
    });
    let catch_all = entries.iter().find(|m| {
        m.get("match")
            .is_none_or(|v| v.as_object().is_none_or(serde_json::Map::is_empty))
    });
    match catch_all {
        Some(m) if socket_is_tls(m) => UpstreamTls::Tls,
        Some(_) if for_istio => UpstreamTls::AutoMtls,
        Some(_) => UpstreamTls::Plaintext,
        None if for_istio => UpstreamTls::AutoMtls,
        None => UpstreamTls::Plaintext,
    }
}

/// Cluster name -> the TLS it sends, for every cluster of the dump.
pub fn parse_cluster_tls(body: &str) -> Result<BTreeMap<String, UpstreamTls>, ParseError> {
    let v: Value = serde_json::from_str(body).map_err(|e| ParseError {
        endpoint: "/config_dump",
        message: format!("not JSON: {e}"),
    })?;
    let configs = v
        .get("configs")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError {
            endpoint: "/config_dump",
            message: "no \"configs\" array".into(),
        })?;
    let mut out = BTreeMap::new();
    for c in configs {
        let Some(cluster) = c.get("cluster") else {
            continue;
        };
        let Some(name) = cluster.get("name").and_then(Value::as_str) else {
            continue;
        };
        let tls = match cluster
            .get("transport_socket_matches")
            .and_then(Value::as_array)
        {
            Some(matches) => of_matches(matches),
            None if cluster.get("transport_socket").is_some_and(is_tls) => UpstreamTls::Tls,
            None => UpstreamTls::Plaintext,
        };
        out.insert(name.to_string(), tls);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_shapes_of_the_test_nodes_envoy() {
        let body = r#"{"configs":[
          {"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster",
           "cluster":{"name":"outbound|80||a.x.svc.cluster.local","transport_socket_matches":[
             {"name":"tlsMode-istio","match":{"tlsMode":"istio"},"transport_socket":{"name":"envoy.transport_sockets.tls"}},
             {"name":"tlsMode-disabled","match":{},"transport_socket":{"name":"envoy.transport_sockets.raw_buffer"}}]}},
          {"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster",
           "cluster":{"name":"outbound|80||b.x.svc.cluster.local","transport_socket":{"name":"envoy.transport_sockets.tls",
             "typed_config":{"@type":"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"}}}},
          {"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster",
           "cluster":{"name":"outbound|80||c.x.svc.cluster.local","type":"EDS"}}]}"#;
        let got = parse_cluster_tls(body).unwrap();
        assert_eq!(
            got["outbound|80||a.x.svc.cluster.local"],
            UpstreamTls::AutoMtls
        );
        assert_eq!(got["outbound|80||b.x.svc.cluster.local"], UpstreamTls::Tls);
        assert_eq!(
            got["outbound|80||c.x.svc.cluster.local"],
            UpstreamTls::Plaintext
        );
        assert!(parse_cluster_tls("{}").is_err());
    }

    /// The clusters of the real node's sidecars with istiod's ambient support on: an `hbone`
    /// entry first, then the TLS entries.
    #[test]
    fn the_shapes_with_ambient_enabled() {
        for (file, want) in [
            ("sidecar_cluster_auto.json", UpstreamTls::AutoMtls),
            ("sidecar_cluster_istio_mutual.json", UpstreamTls::Tls),
            ("sidecar_cluster_disable.json", UpstreamTls::Plaintext),
        ] {
            let body = std::fs::read_to_string(format!(
                "{}/tests/fixtures/envoy/{file}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            let got = parse_cluster_tls(&body).unwrap();
            assert_eq!(
                got.get("outbound|80|v1|server.demo.svc.cluster.local"),
                Some(&want),
                "{file}"
            );
        }
    }
}
