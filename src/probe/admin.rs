//! A typed client for the Envoy admin API (port 15000) and the Istio health port (15021): each
//! endpoint fetched over a [`Transport`], every request bounded by the transport's timeouts and
//! body cap, and parsed by `envoy::admin`.

pub use crate::envoy::admin::*;
use crate::probe::transport::{ProbeError, Transport};

/// The admin client: one method per endpoint, each returning a typed value or the reason it
/// could not (timeout, refused, HTTP error, body too large, unparsable).
pub struct AdminClient<T> {
    transport: T,
}

/// Why an endpoint gave no typed answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl<T: Transport> AdminClient<T> {
    pub fn new(transport: T) -> Self {
        AdminClient { transport }
    }

    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// GET on the admin port; anything but 200 is an error.
    async fn get_ok(&self, path: &str) -> Result<String, FetchError> {
        let response = self.transport.get(ADMIN_PORT, path).await?;
        if response.status != 200 {
            return Err(ProbeError::Status {
                status: response.status,
                body: response.snippet(),
            }
            .into());
        }
        Ok(response.text().into_owned())
    }

    pub async fn server_info(&self) -> Result<ServerInfo, FetchError> {
        Ok(parse_server_info(&self.get_ok("/server_info").await?)?)
    }

    /// `/ready`: 200 `LIVE`, or 503 with the state. Both are answers, not errors.
    pub async fn ready(&self) -> Result<Readiness, FetchError> {
        let response = self.transport.get(ADMIN_PORT, "/ready").await?;
        Ok(parse_readiness(response.status, &response.text()))
    }

    /// 15021 `/healthz/ready`, what the kubelet's readiness probe asks.
    pub async fn health(&self) -> Result<Readiness, FetchError> {
        let response = self.transport.get(HEALTH_PORT, "/healthz/ready").await?;
        Ok(parse_readiness(response.status, &response.text()))
    }

    pub async fn stats(&self) -> Result<XdsStats, FetchError> {
        let path = format!("/stats?format=json&filter={}", url_encode(STATS_FILTER));
        Ok(parse_stats(&self.get_ok(&path).await?)?)
    }

    pub async fn bootstrap(&self) -> Result<BootstrapInfo, FetchError> {
        let path = format!("/config_dump?mask={}", url_encode(BOOTSTRAP_MASK));
        Ok(parse_bootstrap(&self.get_ok(&path).await?)?)
    }

    pub async fn clusters(&self) -> Result<Vec<ClusterStatus>, FetchError> {
        Ok(parse_clusters(
            &self.get_ok("/clusters?format=json").await?,
        )?)
    }

    /// The TLS of the dynamic clusters whose names match `name_regex` (Envoy's filter).
    pub async fn cluster_tls(
        &self,
        name_regex: &str,
    ) -> Result<
        std::collections::BTreeMap<String, crate::envoy::upstream_tls::UpstreamTls>,
        FetchError,
    > {
        let path = format!(
            "/config_dump?resource=dynamic_active_clusters&name_regex={}",
            url_encode(name_regex)
        );
        Ok(crate::envoy::upstream_tls::parse_cluster_tls(
            &self.get_ok(&path).await?,
        )?)
    }

    /// What the sidecar's `virtualInbound` listener accepts per workload port.
    pub async fn inbound(
        &self,
    ) -> Result<std::collections::BTreeMap<u32, crate::envoy::inbound::InboundAccepts>, FetchError>
    {
        let path = "/config_dump?resource=dynamic_listeners&name_regex=%5EvirtualInbound%24";
        Ok(crate::envoy::inbound::parse_inbound(
            &self.get_ok(path).await?,
        )?)
    }

    /// The RBAC filter's allowed/denied counters of the inbound side.
    pub async fn rbac_counters(&self) -> Result<crate::envoy::inbound::RbacCounters, FetchError> {
        let path = format!(
            "/stats?format=json&filter={}",
            url_encode(r"\.rbac\.(allowed|denied)$")
        );
        Ok(crate::envoy::inbound::parse_rbac(
            &self.get_ok(&path).await?,
        )?)
    }

    pub async fn certs(&self) -> Result<Vec<CertInfo>, FetchError> {
        Ok(parse_certs(&self.get_ok("/certs").await?)?)
    }
}
