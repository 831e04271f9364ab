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
        let matches = cluster
            .get("transport_socket_matches")
            .and_then(Value::as_array)
            .is_some_and(|m| {
                m.iter()
                    .any(|t| t.pointer("/match/tlsMode").and_then(Value::as_str) == Some("istio"))
            });
        let tls = if matches {
            UpstreamTls::AutoMtls
        } else if cluster.get("transport_socket").is_some_and(is_tls) {
            UpstreamTls::Tls
        } else {
            UpstreamTls::Plaintext
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
}
